package httpx_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/testenv"
)

// publicServer serves a public POST route with the given body limit that
// echoes its body (read with ReadBody), a public GET route and an
// authenticated GET route; calls counts the POST handler's calls.
func publicServer(t *testing.T, s *httpx.Server, limit int64, calls *atomic.Int64) (*httptest.Server, *prometheus.Registry) {
	t.Helper()
	echo := httpx.Route{Method: "POST", Path: "/hook", BodyLimit: limit, Handler: func(w http.ResponseWriter, r *http.Request) error {
		calls.Add(1)
		raw, err := httpx.ReadBody(r, limit)
		if err != nil {
			return err
		}
		httpx.WriteData(w, r, http.StatusOK, json.RawMessage(raw))
		return nil
	}}
	health := httpx.Route{Method: "GET", Path: "/health", Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	read := httpx.Route{Method: "GET", Path: "/read", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	reg := prometheus.NewRegistry()
	s.Routes = append([]httpx.Route{echo, health, read}, s.Routes...)
	s.Auth = staticAuth{httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeOrdersWrite}}}
	s.Registry = reg
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, reg
}

// slowBody sends a POST's headers with Content-Length n and the first
// byte of its body, and no more.
func slowBody(t *testing.T, ts *httptest.Server, path string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: o2i\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, n); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads the response on c.
func answer(t *testing.T, c net.Conn) (*http.Response, errResp) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	var e errResp
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &e)
	return resp, e
}

// inFlight returns the gauge o2i_http_in_flight of pool.
func inFlight(t *testing.T, reg *prometheus.Registry, pool string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "o2i_http_in_flight" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" && l.GetValue() == pool {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no gauge o2i_http_in_flight{pool=%q}", pool)
	return 0
}

// TestPublicBodyDeadline: a public body that does not arrive within
// PublicBodyTimeout is answered 408 request_timeout and the connection
// closed; the handler never runs.
func TestPublicBodyDeadline(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts, _ := publicServer(t, &httpx.Server{PublicBodyTimeout: 200 * time.Millisecond}, 1024, &calls)
	start := time.Now()
	resp, e := answer(t, slowBody(t, ts, "/hook", 100))
	took := time.Since(start)
	if resp.StatusCode != 408 || e.Error.Code != "request_timeout" || !resp.Close {
		t.Errorf("slow body: %d %q (connection closed: %v), want 408 request_timeout and the connection closed", resp.StatusCode, e.Error.Code, resp.Close)
	}
	if took < 200*time.Millisecond {
		t.Errorf("answered after %v, before the body's deadline", took)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the handler ran %d times", n)
	}
}

// TestPublicHandlerOutlivesTheBodyDeadline: the body's deadline ends with
// the body; a handler that takes longer than it is not cut off.
func TestPublicHandlerOutlivesTheBodyDeadline(t *testing.T) {
	t.Parallel()
	slow := httpx.Route{Method: "POST", Path: "/slow", Handler: func(w http.ResponseWriter, r *http.Request) error {
		raw, err := httpx.ReadBody(r, httpx.MaxBodyBytes)
		if err != nil {
			return err
		}
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-time.After(500 * time.Millisecond): // longer than the body's deadline
		}
		httpx.WriteData(w, r, http.StatusOK, json.RawMessage(raw))
		return nil
	}}
	var calls atomic.Int64
	ts, _ := publicServer(t, &httpx.Server{Routes: []httpx.Route{slow}, PublicBodyTimeout: 100 * time.Millisecond}, 1024, &calls)
	resp, e := do(t, ts, "POST", "/slow", "application/json", "", `{"a":1}`)
	if resp.StatusCode != 200 {
		t.Errorf("handler longer than the body's deadline: %d %+v, want 200", resp.StatusCode, e)
	}
}

// TestPublicBodiesPerAddress: one client address has at most
// MaxPublicPerAddr public requests with a body in flight; the next is
// answered 429 at once, while health and the authenticated API answer.
// Once its slow bodies are gone, the address is served again.
func TestPublicBodiesPerAddress(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts, reg := publicServer(t, &httpx.Server{MaxPublicPerAddr: 2, PublicBodyTimeout: 10 * time.Second}, 1024, &calls)
	a, b := slowBody(t, ts, "/hook", 100), slowBody(t, ts, "/hook", 100)
	testenv.Eventually(t, 5*time.Second, "two bodies being read", func() bool { return inFlight(t, reg, "public_bodies") == 2 })
	resp, e := do(t, ts, "POST", "/hook", "application/json", "", `{}`)
	if resp.StatusCode != 429 || e.Error.Code != "rate_limited" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request of the address: %d %q Retry-After %q, want 429 rate_limited with Retry-After", resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After"))
	}
	if resp, _ := do(t, ts, "GET", "/health", "", "", ""); resp.StatusCode != 200 {
		t.Errorf("health: %d, want 200", resp.StatusCode)
	}
	if resp, _ := do(t, ts, "GET", "/read", "", "Bearer good", ""); resp.StatusCode != 200 {
		t.Errorf("authenticated API: %d, want 200", resp.StatusCode)
	}
	a.Close()
	b.Close()
	testenv.Eventually(t, 5*time.Second, "the address served again", func() bool {
		resp, _ := do(t, ts, "POST", "/hook", "application/json", "", `{}`)
		return resp.StatusCode == 200
	})
}

// TestSlowPublicBodiesTakeNoPublicPlace: bodies still arriving hold no
// place among the public requests in flight; a request whose body is in
// is served at once.
func TestSlowPublicBodiesTakeNoPublicPlace(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts, reg := publicServer(t, &httpx.Server{MaxInFlightPublic: 1, MaxPublicPerAddr: 10, PublicBodyTimeout: 10 * time.Second}, 1024, &calls)
	for range 3 {
		slowBody(t, ts, "/hook", 100)
	}
	testenv.Eventually(t, 5*time.Second, "three bodies being read", func() bool { return inFlight(t, reg, "public_bodies") == 3 })
	if got := inFlight(t, reg, "public"); got != 0 {
		t.Errorf("public places taken by bodies still arriving: %v", got)
	}
	if resp, e := do(t, ts, "POST", "/hook", "application/json", "", `{"x":1}`); resp.StatusCode != 200 {
		t.Errorf("complete request during the slow bodies: %d %+v, want 200", resp.StatusCode, e)
	}
}

// TestPublicBodyTooLarge: a public body over the route's BodyLimit is 413
// payload_too_large: at once when Content-Length says so (nothing is
// waited for), else once the limit is passed.
func TestPublicBodyTooLarge(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ts, _ := publicServer(t, &httpx.Server{PublicBodyTimeout: time.Minute}, 8, &calls)
	c := slowBody(t, ts, "/hook", 100)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second)) // far below the body's deadline
	if resp, e := answer(t, c); resp.StatusCode != 413 || e.Error.Code != "payload_too_large" || !resp.Close {
		t.Errorf("Content-Length over the limit: %d %q (closed %v), want 413 payload_too_large, connection closed", resp.StatusCode, e.Error.Code, resp.Close)
	}
	req, _ := http.NewRequest("POST", ts.URL+"/hook", io.MultiReader(strings.NewReader(`{"a":"0123456789"}`))) // no length: chunked
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked body over the limit: %d, want 413", resp.StatusCode)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the handler ran %d times", n)
	}
}

// TestPublicBodiesPerIPv6Network: an IPv6 client counts by its /64.
func TestPublicBodiesPerIPv6Network(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	reg := prometheus.NewRegistry()
	hook := httpx.Route{Method: "POST", Path: "/hook", Handler: func(w http.ResponseWriter, r *http.Request) error {
		calls.Add(1)
		return nil
	}}
	h := (&httpx.Server{Routes: []httpx.Route{hook}, MaxPublicPerAddr: 1, Registry: reg}).Handler()
	serve := func(remote string, body io.Reader) int {
		r := httptest.NewRequest("POST", "/hook", body)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	pr, pw := io.Pipe() // a body that arrives when the test says so
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); serve("[2001:db8:1:1::1]:4000", pr) }()
	testenv.Eventually(t, 5*time.Second, "one body being read", func() bool { return inFlight(t, reg, "public_bodies") == 1 })
	if got := serve("[2001:db8:1:1::2]:4000", strings.NewReader("{}")); got != 429 {
		t.Errorf("another host of the same /64: %d, want 429", got)
	}
	if got := serve("[2001:db8:1:2::1]:4000", strings.NewReader("{}")); got != 200 {
		t.Errorf("a host of another /64: %d, want 200", got)
	}
	if got := serve("192.0.2.1:4000", strings.NewReader("{}")); got != 200 {
		t.Errorf("an IPv4 host: %d, want 200", got)
	}
	pw.Close()
	wg.Wait()
}
