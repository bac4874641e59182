package httpx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
)

// staticAuth accepts one token; the real authenticator is tested end to end.
type staticAuth struct{ p httpx.Principal }

func (a staticAuth) Authenticate(_ context.Context, token string) (httpx.Principal, error) {
	if token != "good" {
		return httpx.Principal{}, apperr.New(apperr.Unauthenticated, "unauthorized", "unknown API key")
	}
	return a.p, nil
}

type body struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Items []struct {
		Qty int64 `json:"qty"`
	} `json:"items"`
}

func newServer(t *testing.T, routes []httpx.Route, maxInFlight int) *httptest.Server {
	t.Helper()
	s := &httpx.Server{Routes: routes, Auth: staticAuth{httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeOrdersWrite}}}, MaxInFlight: maxInFlight}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func echoRoute() httpx.Route {
	return httpx.Route{Method: "POST", Path: "/echo", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error {
		raw, err := httpx.ReadBody(r, 64)
		if err != nil {
			return err
		}
		var b body
		if err := httpx.DecodeJSON(raw, &b); err != nil {
			return err
		}
		httpx.WriteData(w, r, http.StatusOK, b)
		return nil
	}}
}

type errResp struct {
	Error     httpx.ErrorDetail `json:"error"`
	RequestID string            `json:"requestId"`
}

func do(t *testing.T, ts *httptest.Server, method, path, ct, auth, payload string) (*http.Response, errResp) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(payload))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e errResp
	_ = json.Unmarshal(raw, &e)
	if e.RequestID != "" && e.RequestID != resp.Header.Get("X-Request-Id") {
		t.Errorf("requestId %q != X-Request-Id %q", e.RequestID, resp.Header.Get("X-Request-Id"))
	}
	return resp, e
}

func TestBodyErrors(t *testing.T) {
	t.Parallel()
	ts := newServer(t, []httpx.Route{echoRoute()}, 0)
	tests := []struct {
		name, ct, payload string
		status            int
		code, field       string
	}{
		{"ok", "application/json", `{"name":"a","count":1}`, 200, "", ""},
		{"charset param ok", "application/json; charset=utf-8", `{"name":"a"}`, 200, "", ""},
		{"no content type", "", `{"name":"a"}`, 415, "unsupported_media_type", ""},
		{"form content type", "application/x-www-form-urlencoded", `name=a`, 415, "unsupported_media_type", ""},
		{"too large", "application/json", `{"name":"` + strings.Repeat("x", 100) + `"}`, 413, "payload_too_large", ""},
		{"malformed", "application/json", `{"name":`, 400, "invalid_json", ""},
		{"empty", "application/json", ``, 400, "invalid_json", ""},
		{"trailing data", "application/json", `{} {}`, 400, "invalid_json", ""},
		{"wrong type", "application/json", `{"count":"x"}`, 422, "validation_failed", "count"},
		{"fraction for integer", "application/json", `{"count":1.5}`, 422, "validation_failed", "count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, e := do(t, ts, "POST", "/echo", tt.ct, "Bearer good", tt.payload)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%+v)", resp.StatusCode, tt.status, e)
			}
			if e.Error.Code != tt.code || e.Error.Field != tt.field {
				t.Errorf("error %+v, want code %q field %q", e.Error, tt.code, tt.field)
			}
		})
	}
}

func TestAuthAndScope(t *testing.T) {
	t.Parallel()
	read := httpx.Route{Method: "GET", Path: "/read", Scope: httpx.ScopeInvoicesRead, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	ts := newServer(t, []httpx.Route{echoRoute(), read}, 0)
	tests := []struct {
		name, method, path, auth string
		status                   int
		code                     string
	}{
		{"missing", "GET", "/read", "", 401, "unauthorized"},
		{"wrong scheme", "GET", "/read", "Token good", 401, "unauthorized"},
		{"unknown", "GET", "/read", "Bearer bad", 401, "unauthorized"},
		{"lacks scope", "GET", "/read", "Bearer good", 403, "forbidden"},
		{"404 before auth", "GET", "/nope", "", 404, "not_found"},
		{"405", "PUT", "/read", "", 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, e := do(t, ts, tt.method, tt.path, "", tt.auth, "")
			if resp.StatusCode != tt.status || e.Error.Code != tt.code {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, e.Error.Code, tt.status, tt.code)
			}
		})
	}
}

func TestOverloadAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := httpx.Route{Method: "GET", Path: "/slow", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error {
		started <- struct{}{}
		<-release
		return nil
	}}
	ts := newServer(t, []httpx.Route{slow}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); do(t, ts, "GET", "/slow", "", "Bearer good", "") }()
	<-started
	resp, e := do(t, ts, "GET", "/slow", "", "Bearer good", "")
	close(release)
	wg.Wait()
	if resp.StatusCode != 503 || e.Error.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("got %d %q Retry-After %q, want 503 unavailable with Retry-After", resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After"))
	}
}

// TestPublicRoutesHaveTheirOwnPlaces: requests on a public route with a
// body (the payment provider's webhook) fill only the public places; the
// authenticated API and the public routes without a body (health,
// discovery) still answer.
func TestPublicRoutesHaveTheirOwnPlaces(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := httpx.Route{Method: "POST", Path: "/public", Handler: func(w http.ResponseWriter, r *http.Request) error {
		started <- struct{}{}
		<-release
		return nil
	}}
	health := httpx.Route{Method: "GET", Path: "/health", Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	read := httpx.Route{Method: "GET", Path: "/read", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	s := &httpx.Server{Routes: []httpx.Route{slow, health, read}, Auth: staticAuth{httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeOrdersWrite}}},
		MaxInFlight: 4, MaxInFlightPublic: 1}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); do(t, ts, "POST", "/public", "application/json", "", "{}") }()
	<-started
	pub, _ := do(t, ts, "POST", "/public", "application/json", "", "{}")
	api, e := do(t, ts, "GET", "/read", "", "Bearer good", "")
	h, _ := do(t, ts, "GET", "/health", "", "", "")
	close(release)
	wg.Wait()
	if pub.StatusCode != 503 {
		t.Errorf("second public request: %d, want 503", pub.StatusCode)
	}
	if api.StatusCode != 200 {
		t.Errorf("authenticated request while the public places are full: %d %+v, want 200", api.StatusCode, e)
	}
	if h.StatusCode != 200 {
		t.Errorf("public route without a body while the public places are full: %d, want 200", h.StatusCode)
	}
}

// TestRequestDeadline: a request that outlives its deadline is answered 503
// with Retry-After, and a route's own Timeout replaces the server's.
func TestRequestDeadline(t *testing.T) {
	t.Parallel()
	wait := func(w http.ResponseWriter, r *http.Request) error {
		select {
		case <-r.Context().Done():
			return r.Context().Err()
		case <-time.After(time.Second):
			httpx.WriteData(w, r, http.StatusOK, map[string]string{"done": "yes"})
			return nil
		}
	}
	routes := []httpx.Route{
		{Method: "GET", Path: "/short", Scope: httpx.ScopeOrdersWrite, Handler: wait},
		{Method: "GET", Path: "/long", Scope: httpx.ScopeOrdersWrite, Handler: wait, Timeout: 10 * time.Second},
	}
	s := &httpx.Server{Routes: routes, Auth: staticAuth{httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeOrdersWrite}}},
		RequestTimeout: 50 * time.Millisecond}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	resp, e := do(t, ts, "GET", "/short", "", "Bearer good", "")
	if resp.StatusCode != 503 || e.Error.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the deadline: %d %q Retry-After %q, want 503 unavailable with Retry-After", resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After"))
	}
	if resp, e := do(t, ts, "GET", "/long", "", "Bearer good", ""); resp.StatusCode != 200 {
		t.Errorf("route with its own timeout: %d %+v, want 200", resp.StatusCode, e)
	}
}

// countingAuth counts look-ups; only "good" authenticates.
type countingAuth struct {
	mu sync.Mutex
	n  int
}

func (a *countingAuth) Authenticate(_ context.Context, token string) (httpx.Principal, error) {
	a.mu.Lock()
	a.n++
	a.mu.Unlock()
	if token != "good" {
		return httpx.Principal{}, apperr.New(apperr.Unauthenticated, "unauthorized", "unknown API key")
	}
	return httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeOrdersWrite}}, nil
}

// TestFailedAuthenticationsAreLimitedPerAddress: made-up keys cost a look-up
// each only up to the burst; then the address is answered 429 without one.
// Keys that authenticate are never counted.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	auth := &countingAuth{}
	read := httpx.Route{Method: "GET", Path: "/read", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	s := &httpx.Server{Routes: []httpx.Route{read}, Auth: auth, AuthFailures: httpx.NewClientLimiter(0.001, 3, 16)}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	for i := 0; i < 10; i++ {
		if resp, _ := do(t, ts, "GET", "/read", "", "Bearer good", ""); resp.StatusCode != 200 {
			t.Fatalf("good key %d: %d, want 200", i, resp.StatusCode)
		}
	}
	for i := 0; i < 3; i++ {
		if resp, e := do(t, ts, "GET", "/read", "", "Bearer made-up", ""); resp.StatusCode != 401 {
			t.Fatalf("failed authentication %d: %d %q, want 401", i, resp.StatusCode, e.Error.Code)
		}
	}
	before := auth.n
	resp, e := do(t, ts, "GET", "/read", "", "Bearer made-up-2", "")
	if resp.StatusCode != 429 || e.Error.Code != "rate_limited" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the burst: %d %q Retry-After %q, want 429 rate_limited with Retry-After", resp.StatusCode, e.Error.Code, resp.Header.Get("Retry-After"))
	}
	if auth.n != before {
		t.Errorf("the limited request was looked up (%d look-ups, want %d)", auth.n, before)
	}
}

func TestInternalErrorsHideDetailsAndPanicsAreCaught(t *testing.T) {
	t.Parallel()
	routes := []httpx.Route{
		{Method: "GET", Path: "/fail", Handler: func(w http.ResponseWriter, r *http.Request) error {
			return io.ErrUnexpectedEOF
		}},
		{Method: "GET", Path: "/panic", Handler: func(w http.ResponseWriter, r *http.Request) error {
			panic("boom")
		}},
		{Method: "GET", Path: "/busy", Handler: func(w http.ResponseWriter, r *http.Request) error {
			return &apperr.Error{Kind: apperr.Unavailable, Code: "unavailable", Message: "busy", RetryAfter: 2500 * time.Millisecond}
		}},
	}
	ts := newServer(t, routes, 0)
	for _, p := range []string{"/fail", "/panic"} {
		resp, e := do(t, ts, "GET", p, "", "", "")
		if resp.StatusCode != 500 || e.Error.Code != "internal_error" || e.Error.Message != "internal error" {
			t.Errorf("%s: %d %+v", p, resp.StatusCode, e.Error)
		}
	}
	resp, _ := do(t, ts, "GET", "/busy", "", "", "")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("busy: %d Retry-After %q, want 503 and 3", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestErrorCodesAreSnakeCaseAndUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range httpx.ErrorCodes {
		if seen[c.Code] || strings.ToLower(c.Code) != c.Code || strings.ContainsAny(c.Code, " -") {
			t.Errorf("code %q repeated or not snake_case", c.Code)
		}
		seen[c.Code] = true
	}
}

func TestClientGoneIsNoServerError(t *testing.T) {
	t.Parallel()
	got := make(chan int, 1)
	routes := []httpx.Route{{Method: "GET", Path: "/slow", Handler: func(w http.ResponseWriter, r *http.Request) error {
		<-r.Context().Done()
		return r.Context().Err()
	}}}
	rec := recorderFunc(func(e httpx.Entry) { got <- e.Status })
	s := &httpx.Server{Routes: routes, Auth: staticAuth{}, Recorder: rec}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/slow", nil)
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the request was not cancelled")
	}
	select {
	case status := <-got:
		if status != 499 {
			t.Errorf("recorded status %d, want 499", status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no request recorded")
	}
}

type recorderFunc func(httpx.Entry)

func (f recorderFunc) Record(e httpx.Entry) { f(e) }

// TestMetricsMethodLabelIsBounded: a made-up method is counted as "other",
// so callers cannot grow the metrics without bound.
func TestMetricsMethodLabelIsBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	read := httpx.Route{Method: "GET", Path: "/read", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	s := &httpx.Server{Routes: []httpx.Route{read}, Auth: staticAuth{}, Registry: reg}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	for _, m := range []string{"BREW", "GET", "X-" + strings.Repeat("A", 40)} {
		do(t, ts, m, "/read", "", "", "")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "o2i_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					methods[l.GetValue()] = true
				}
			}
		}
	}
	if len(methods) != 2 || !methods["GET"] || !methods["other"] {
		t.Errorf("method labels %v, want exactly GET and other", methods)
	}
}

type entries struct {
	mu sync.Mutex
	e  []httpx.Entry
}

func (r *entries) Record(e httpx.Entry) { r.mu.Lock(); r.e = append(r.e, e); r.mu.Unlock() }

// The request id and the principal live in one value of the request's
// context: the handler, its error body and the request log entry all see
// them, and an explicit WithPrincipal still takes precedence.
func TestRequestIDAndPrincipalReachHandlerAndLog(t *testing.T) {
	rec := &entries{}
	p := httpx.Principal{ProjectID: "p1", KeyPrefix: "o2i_abcd", Scopes: []httpx.Scope{httpx.ScopeInvoicesRead}}
	var seen httpx.Principal
	var seenID string
	var override httpx.Principal
	routes := []httpx.Route{{Method: "GET", Path: "/who", Scope: httpx.ScopeAnyKey, Handler: func(w http.ResponseWriter, r *http.Request) error {
		seen, _ = httpx.PrincipalFrom(r.Context())
		seenID = httpx.RequestID(r.Context())
		override, _ = httpx.PrincipalFrom(httpx.WithPrincipal(r.Context(), httpx.Principal{ProjectID: "other"}))
		return apperr.New(apperr.NotFound, "not_found", "nothing here")
	}}}
	s := &httpx.Server{Routes: routes, Auth: staticAuth{p}, Recorder: rec}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, e := do(t, ts, "GET", "/who", "", "Bearer good", "")
	id := resp.Header.Get("X-Request-Id")
	if id == "" || e.RequestID != id || seenID != id {
		t.Errorf("request id: header %q, body %q, handler %q", id, e.RequestID, seenID)
	}
	if seen.ProjectID != "p1" || seen.KeyPrefix != "o2i_abcd" || override.ProjectID != "other" {
		t.Errorf("handler saw principal %+v, override %+v", seen, override)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.e) != 1 || rec.e[0].RequestID != id || rec.e[0].ProjectID != "p1" || rec.e[0].KeyPrefix != "o2i_abcd" || rec.e[0].Status != 404 {
		t.Errorf("request log entries %+v", rec.e)
	}
	// Without a key: no principal anywhere, the entry has no project.
	rec.e = nil
	rec.mu.Unlock()
	resp, _ = do(t, ts, "GET", "/who", "", "", "")
	rec.mu.Lock()
	if resp.StatusCode != 401 || len(rec.e) != 1 || rec.e[0].ProjectID != "" {
		t.Errorf("anonymous: status %d, entries %+v", resp.StatusCode, rec.e)
	}
}

func TestPrincipalHas(t *testing.T) {
	for _, c := range []struct {
		scopes []httpx.Scope
		want   httpx.Scope
		has    bool
	}{
		{[]httpx.Scope{httpx.ScopeOrdersWrite}, httpx.ScopeOrdersWrite, true},
		{[]httpx.Scope{httpx.ScopeOrdersWrite}, httpx.ScopeInvoicesRead, false},
		{[]httpx.Scope{httpx.ScopeInvoicesRead, httpx.ScopeOrdersWrite}, httpx.ScopeInvoicesRead, true},
		{[]httpx.Scope{httpx.ScopeOrdersWrite}, httpx.ScopeAnyKey, true},
		{[]httpx.Scope{httpx.ScopeInvoicesRead}, httpx.ScopeAnyKey, true},
		{[]httpx.Scope{httpx.ScopeArchiveRead}, httpx.ScopeAnyKey, false},
		{[]httpx.Scope{httpx.ScopeAnyKey}, httpx.ScopeAnyKey, false}, // "any" is no scope a key holds
		{[]httpx.Scope{httpx.ScopeArchiveRead}, httpx.ScopeArchiveRead, true},
		{nil, httpx.ScopeOrdersWrite, false},
	} {
		if got := (httpx.Principal{Scopes: c.scopes}).Has(c.want); got != c.has {
			t.Errorf("%v.Has(%s) = %v, want %v", c.scopes, c.want, got, c.has)
		}
	}
}

// TestMetricsCountEverySeries: each method, route and status has its own
// count and latency histogram, also after its series was first looked up.
func TestMetricsCountEverySeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	ok := httpx.Route{Method: "GET", Path: "/ok/{id}", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error { return nil }}
	missing := httpx.Route{Method: "GET", Path: "/missing", Scope: httpx.ScopeOrdersWrite, Handler: func(w http.ResponseWriter, r *http.Request) error {
		return apperr.New(apperr.NotFound, "not_found", "nothing here")
	}}
	s := &httpx.Server{Routes: []httpx.Route{ok, missing}, Auth: staticAuth{p: httpx.Principal{ProjectID: "p1", Scopes: []httpx.Scope{httpx.ScopeOrdersWrite}}}, Registry: reg}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	for i := range 3 {
		do(t, ts, "GET", fmt.Sprintf("/ok/%d", i), "", "Bearer good", "")
	}
	do(t, ts, "GET", "/missing", "", "Bearer good", "")
	do(t, ts, "GET", "/missing", "", "Bearer good", "")
	do(t, ts, "POST", "/missing", "", "Bearer good", "")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts, observed := map[string]float64{}, map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var k []string
			for _, l := range m.GetLabel() {
				k = append(k, l.GetValue())
			}
			switch mf.GetName() {
			case "o2i_http_requests_total":
				counts[strings.Join(k, " ")] = m.GetCounter().GetValue()
			case "o2i_http_request_duration_seconds":
				observed[strings.Join(k, " ")] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	want := map[string]float64{"GET /ok/{id} 200": 3, "GET /missing 404": 2, "POST unmatched 405": 1}
	if len(counts) != len(want) {
		t.Errorf("series %v, want %v", counts, want)
	}
	for k, n := range want {
		if counts[k] != n || observed[k] != uint64(n) {
			t.Errorf("%s: counted %v, observed %d, want %v", k, counts[k], observed[k], n)
		}
	}
}
