package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/httpx"
)

// TestMethodNotAllowedSaysWhatIsAllowed: a 405 carries the Allow header
// HTTP requires, listing the methods the matched route serves.
func TestMethodNotAllowedSaysWhatIsAllowed(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, r *http.Request) error { return nil }
	ts := newServer(t, []httpx.Route{
		{Method: "POST", Path: "/items", Scope: httpx.ScopeOrdersWrite, Handler: ok},
		{Method: "GET", Path: "/items", Scope: httpx.ScopeOrdersWrite, Handler: ok},
		{Method: "GET", Path: "/items/{id}", Scope: httpx.ScopeOrdersWrite, Handler: ok},
		{Method: "PUT", Path: "/items/{id}", Scope: httpx.ScopeOrdersWrite, Handler: ok},
		{Method: "POST", Path: "/items/{id}/cancel", Scope: httpx.ScopeOrdersWrite, Handler: ok},
	}, 0)
	tests := []struct{ name, method, path, allow string }{
		{"collection", "DELETE", "/items", "GET, POST"},
		{"item", "POST", "/items/a", "GET, PUT"},
		{"escaped item", "DELETE", "/items/a%2Fb", "GET, PUT"},
		{"action", "GET", "/items/a/cancel", "POST"},
		{"head is not served", "HEAD", "/items", "GET, POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, e := do(t, ts, tt.method, tt.path, "", "", "")
			if resp.StatusCode != http.StatusMethodNotAllowed || (tt.method != "HEAD" && e.Error.Code != "method_not_allowed") {
				t.Fatalf("got %d %q, want 405 method_not_allowed", resp.StatusCode, e.Error.Code)
			}
			if got := resp.Header.Values("Allow"); len(got) != 1 || got[0] != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

// TestForbiddenNamesTheAcceptedScopes: the 403 of a key without the scope
// names what the route accepts; a route for any integration key names both
// integration scopes, not the marker "any".
func TestForbiddenNamesTheAcceptedScopes(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, r *http.Request) error { return nil }
	s := &httpx.Server{
		Routes: []httpx.Route{
			{Method: "GET", Path: "/any", Scope: httpx.ScopeAnyKey, Handler: ok},
			{Method: "GET", Path: "/read", Scope: httpx.ScopeInvoicesRead, Handler: ok},
		},
		Auth: staticAuth{httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeArchiveRead}}},
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	tests := []struct{ path, want string }{
		{"/any", "this key holds none of the scopes this endpoint accepts: orders:write or invoices:read"},
		{"/read", "this key lacks the scope invoices:read"},
	}
	for _, tt := range tests {
		resp, e := do(t, ts, "GET", tt.path, "", "Bearer good", "")
		if resp.StatusCode != http.StatusForbidden || e.Error.Code != "forbidden" {
			t.Fatalf("%s: got %d %q, want 403 forbidden", tt.path, resp.StatusCode, e.Error.Code)
		}
		if e.Error.Message != tt.want || strings.Contains(e.Error.Message, "any") {
			t.Errorf("%s: message %q, want %q", tt.path, e.Error.Message, tt.want)
		}
	}
}
