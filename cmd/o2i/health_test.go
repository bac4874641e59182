package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestHealthWithoutDatabase: a server whose PostgreSQL connections go
// through a proxy answers 200 while the proxy forwards; once the proxy stops
// (its listener and every connection it carried), the process still says
// status ok, db is false and the answer is 503 with Retry-After, while
// Redis, Kafka and S3 still answer. The shared PostgreSQL is not touched.
func TestHealthWithoutDatabase(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(testenv.Env("O2I_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startTCPProxy(t, target.Host)
	proxied := *target
	proxied.Host = proxy.addr()
	cfg, err := loadConfig(func(name string) string {
		if name == "O2I_DATABASE_URL" {
			return proxied.String()
		}
		return testenv.Env(name)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(d.close)
	srv := &httpx.Server{Routes: newWiring(d, nil).routes(&health{d: d})}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c := &apitest.Client{T: t, BaseURL: hs.URL, V: validator}

	get := func() (apitest.Response, httpx.HealthBody) {
		t.Helper()
		r := c.Do("GET", "/api/health", "", nil)
		var h httpx.HealthBody
		if err := json.Unmarshal(r.Body, &h); err != nil {
			t.Fatalf("health body: %v: %s", err, r.Body)
		}
		return r, h
	}
	if r, h := get(); r.Status != http.StatusOK || h.Status != "ok" || !h.DB || r.Header.Get("Retry-After") != "" {
		t.Fatalf("through the running proxy: %d %s (Retry-After %q), want 200, status ok, db true, no Retry-After",
			r.Status, r.Body, r.Header.Get("Retry-After"))
	}

	proxy.stop()
	var r apitest.Response
	var h httpx.HealthBody
	// The checks are cached for a second.
	testenv.Eventually(t, 10*time.Second, "health reports the database down", func() bool {
		r, h = get()
		return r.Status != http.StatusOK
	})
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "5" {
		t.Errorf("database down: HTTP %d, Retry-After %q; want 503, 5", r.Status, r.Header.Get("Retry-After"))
	}
	want := map[string]bool{"db": false, "redis": true, "kafka": true, "s3": true}
	if h.Status != "ok" || h.DB || !cmp.Equal(h.Checks, want) {
		t.Errorf("database down: %s; want status ok, db false, checks %v", r.Body, want)
	}
}

// tcpProxy forwards connections to a target until stopped.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	t.Cleanup(p.stop)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			if !p.track(in, out) {
				return
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// track records a forwarded pair; false (both closed) once stopped.
func (p *tcpProxy) track(c ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, x := range c {
			x.Close()
		}
		return false
	}
	p.conns = append(p.conns, c...)
	return true
}

// stop closes the listener and every connection it forwarded.
func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}
