package httpx_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/o2i-service/o2i/internal/httpx"
)

// TestClientAddress: the TCP peer is the client unless it is a trusted
// proxy; then the right-most forwarded address that is not trusted is.
func TestClientAddress(t *testing.T) {
	t.Parallel()
	trusted, err := httpx.ParseTrustedProxies("10.0.0.0/8, 192.168.1.7, fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		peer   string
		xff    []string
		client string
	}{
		{"no proxy", "203.0.113.9:4711", nil, "203.0.113.9"},
		{"an untrusted peer's header is ignored", "203.0.113.9:4711", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted balancer", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a client-sent hop before the balancer's", "10.1.2.3:80", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"two trusted hops", "192.168.1.7:80", []string{"198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"several header lines", "10.1.2.3:80", []string{"1.1.1.1", "198.51.100.2"}, "198.51.100.2"},
		{"trusted, no header", "10.1.2.3:80", nil, "10.1.2.3"},
		{"only trusted hops", "10.1.2.3:80", []string{"10.4.4.4"}, "10.1.2.3"},
		{"garbage counts the proxy", "10.1.2.3:80", []string{"evil, not-an-ip"}, "10.1.2.3"},
		{"IPv6 balancer, IPv4-mapped client", "[fd00::1]:80", []string{"::ffff:198.51.100.3"}, "198.51.100.3"},
	} {
		if got := httpx.ClientAddress(tc.peer, tc.xff, trusted); got != tc.client {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.client)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "balancer.internal", "10.0.0"} {
		if _, err := httpx.ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted it", bad)
		}
	}
}

// knownAuth is countingAuth that also tells which keys it has seen succeed.
type knownAuth struct{ countingAuth }

func (a *knownAuth) Known(token string) bool { return token == "good" }

var _ httpx.KnownKeys = (*knownAuth)(nil)

// TestFailedAuthLimiterBehindABalancer: behind a trusted balancer, a
// key-guessing client is blocked under its own forwarded address, another
// client behind the same balancer is not, and a key known to exist gets
// through even from the blocked address.
func TestFailedAuthLimiterBehindABalancer(t *testing.T) {
	t.Parallel()
	auth := &knownAuth{}
	read := httpx.Route{Method: "GET", Path: "/read", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	s := &httpx.Server{Routes: []httpx.Route{read}, Auth: auth, AuthFailures: httpx.NewClientLimiter(0.001, 3, 16),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	get := func(client, key string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), "GET", ts.URL+"/read", nil)
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 3 {
		if st := get("198.51.100.66", "made-up"); st != 401 {
			t.Fatalf("guess: %d, want 401", st)
		}
	}
	if st := get("198.51.100.66", "made-up"); st != 429 {
		t.Errorf("the guessing client past its burst: %d, want 429", st)
	}
	if st := get("198.51.100.77", "made-up"); st != 401 {
		t.Errorf("another client behind the same balancer: %d, want 401 (not blocked)", st)
	}
	if st := get("198.51.100.66", "good"); st != 200 {
		t.Errorf("a known key from the blocked address: %d, want 200", st)
	}
}
