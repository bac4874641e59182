package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	r := client(t).Do("GET", "/api/health", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var h httpx.HealthBody
	if err := json.Unmarshal(r.Body, &h); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"db": true, "redis": true, "kafka": true, "s3": true}
	if h.Status != "ok" || !h.DB || !cmp.Equal(h.Checks, want) {
		t.Errorf("health = %+v, want status ok, db true, checks %v", h, want)
	}
}

func TestErrorBodiesForUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	c := client(t)
	tests := []struct {
		name, method, path string
		status             int
		code               string
	}{
		{"unknown route", "GET", "/v1/nothing-here", 404, "not_found"},
		{"unknown version", "GET", "/v2/orders/1", 404, "not_found"},
		{"wrong method on collection", "DELETE", "/v1/orders", 405, "method_not_allowed"},
		{"wrong method on health", "POST", "/api/health", 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.Do(tt.method, tt.path, "", nil)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			if code, _ := r.ErrorCode(t); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
		})
	}
}

func TestRequestIDIsUniqueAndEqualsBody(t *testing.T) {
	t.Parallel()
	c := client(t)
	seen := map[string]bool{}
	for _, p := range []string{"/api/health", "/v1", "/v1/nope", "/v1/invoices"} {
		r := c.Do("GET", p, "", nil)
		id := r.Header.Get("X-Request-Id")
		if id == "" || seen[id] {
			t.Fatalf("%s: X-Request-Id %q missing or repeated", p, id)
		}
		seen[id] = true
		if got := r.JSON(t)["requestId"]; got != id {
			t.Errorf("%s: body requestId %v, header %s", p, got, id)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	pid := testenv.Project(t, pool, true)
	expired, err := apikey.Create(ctx, pool, pid, []string{"orders:write", "invoices:read"}, 30*24*time.Hour, "expired", apikey.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID); err != nil {
		t.Fatal(err)
	}
	revoked := testenv.Key(t, pool, pid)
	var revokedID string
	if err := pool.QueryRow(ctx, `SELECT id::text FROM api_keys WHERE key_hash = $1`, apikey.Hash(revoked)).Scan(&revokedID); err != nil {
		t.Fatal(err)
	}
	if _, err := apikey.Revoke(ctx, pool, revokedID); err != nil {
		t.Fatal(err)
	}
	unknown, _, _ := apikey.Generate(apikey.Prefix)

	tests := []struct{ name, header string }{
		{"no header", ""},
		{"basic scheme", "Basic dXNlcjpwYXNz"},
		{"bearer without key", "Bearer "},
		{"malformed key", "Bearer not-a-key"},
		{"wrong prefix", "Bearer sk_live_" + strings.Repeat("a", 40)},
		{"short secret", "Bearer " + apikey.Prefix + "abc"},
		{"unknown key", "Bearer " + unknown},
		{"expired key", "Bearer " + expired.Key},
		{"revoked key", "Bearer " + revoked},
	}
	c := client(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h []string
			if tt.header != "" {
				h = []string{"Authorization", tt.header}
			}
			r := c.Do("GET", "/v1/orders/any", "", nil, h...)
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.Status, r.Body)
			}
			if code, _ := r.ErrorCode(t); code != "unauthorized" {
				t.Errorf("code %q, want unauthorized", code)
			}
		})
	}
}

func TestLegacyKeyPrefixesStayValid(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	for _, format := range []string{apikey.LegacyTest, apikey.LegacyLive, apikey.Prefix} {
		k, err := apikey.Create(context.Background(), pool, pid, []string{"invoices:read"}, 0, "legacy", format)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k.Key, format) || !strings.HasPrefix(k.Prefix, format) {
			t.Fatalf("key %q / prefix %q do not start with %q", k.Key, k.Prefix, format)
		}
		r := client(t).Do("GET", "/v1/orders/none", k.Key, nil)
		if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			t.Errorf("%s key: status %d: %s", format, r.Status, r.Body)
		}
	}
}

// TestScopeMatrix drives every protected route of the route table with a key
// lacking its scope (403) and with a key holding it (neither 401 nor 403);
// a route for any key of the project lets every key through.
func TestScopeMatrix(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	keys := map[httpx.Scope]string{}
	for _, s := range httpx.Scopes {
		keys[s] = testenv.Key(t, pool, pid, string(s))
	}
	c := client(t)
	routes := newWiring(&deps{}, nil).routes(&health{})
	protected := 0
	for _, rt := range routes {
		if rt.Public() {
			continue
		}
		protected++
		path := strings.NewReplacer("{orderNo}", "ORD-MATRIX", "{reference}", "REF-MATRIX").Replace(rt.Path)
		for _, s := range httpx.Scopes {
			r := c.Do(rt.Method, path, keys[s], []byte(`{}`), "Idempotency-Key", "matrix-"+string(s))
			// Any integration key may call an any-key route; an auditor's key only the archive.
			if s == rt.Scope || rt.Scope == httpx.ScopeAnyKey && s != httpx.ScopeArchiveRead {
				if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
					t.Errorf("%s %s with %s: status %d: %s", rt.Method, rt.Path, s, r.Status, r.Body)
				}
				continue
			}
			if r.Status != http.StatusForbidden {
				t.Errorf("%s %s with only %s: status %d, want 403", rt.Method, rt.Path, s, r.Status)
				continue
			}
			if code, _ := r.ErrorCode(t); code != "forbidden" {
				t.Errorf("%s %s: code %q, want forbidden", rt.Method, rt.Path, code)
			}
		}
	}
	if protected < 9 {
		t.Errorf("route table has %d protected routes, the spec names 9", protected)
	}
}

func TestKeysAreStoredOnlyAsHash(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	out, err := runCmd(t, "key", "create", "--project", pid, "--scopes", "orders:write,invoices:read", "--expires", "90d", "--name", "ci")
	if err != nil {
		t.Fatal(err)
	}
	var k apikey.Created
	if err := json.Unmarshal([]byte(out), &k); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.HasPrefix(k.Key, apikey.Prefix) || !strings.HasPrefix(k.Key, k.Prefix) || len(k.Prefix) >= len(k.Key) {
		t.Fatalf("key %q prefix %q", k.Key, k.Prefix)
	}
	if k.ExpiresAt == nil || time.Until(*k.ExpiresAt) < 89*24*time.Hour || time.Until(*k.ExpiresAt) > 91*24*time.Hour {
		t.Errorf("expiresAt %v, want in 90 days", k.ExpiresAt)
	}
	var hash []byte
	var leaks int
	secret := k.Key[len(apikey.Prefix):]
	if err := pool.QueryRow(context.Background(), `SELECT key_hash,
		(SELECT count(*) FROM api_keys a WHERE row_to_json(a)::text LIKE '%' || $2 || '%')
		FROM api_keys WHERE id = $1`, k.ID, secret).Scan(&hash, &leaks); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte(k.Key))
	if !bytes.Equal(hash, want[:]) {
		t.Errorf("stored hash %x, want sha256 of the key", hash)
	}
	if leaks != 0 {
		t.Errorf("the key's secret appears in %d api_keys rows", leaks)
	}
	// The key works at once.
	if r := client(t).Do("GET", "/v1/invoices", k.Key, nil); r.Status == 401 || r.Status == 403 {
		t.Errorf("fresh key rejected: %d %s", r.Status, r.Body)
	}
}

func TestKeyListRevokeAndUnusedFlag(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	var a, b apikey.Created
	for _, k := range []*apikey.Created{&a, &b} {
		out, err := runCmd(t, "key", "create", "--project", pid, "--scopes", "invoices:read")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(context.Background(), `UPDATE api_keys SET created_at = now() - interval '100 days' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "key", "list", "--project", pid)
	if err != nil {
		t.Fatal(err)
	}
	var list []apikey.Info
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	for _, i := range list {
		if strings.Contains(out, a.Key) || strings.Contains(out, b.Key) {
			t.Fatal("key list prints a full key")
		}
		flags[i.ID] = i.Unused90d
	}
	if len(list) != 2 || !flags[a.ID] || flags[b.ID] {
		t.Errorf("unused90d flags %v, want %s true and %s false", flags, a.ID, b.ID)
	}
	// Two keys active at once (rotation), then revoke one.
	for _, k := range []string{a.Key, b.Key} {
		if r := client(t).Do("GET", "/v1/invoices", k, nil); r.Status == 401 {
			t.Fatalf("active key rejected: %s", r.Body)
		}
	}
	if _, err := runCmd(t, "key", "revoke", "--key-id", b.ID); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, apikey.CacheTTL+5*time.Second, "the revoked key refused (401) once its cache entry expired", func() bool {
		return client(t).Do("GET", "/v1/invoices", b.Key, nil).Status == 401
	})
	// Last use is recorded in batches.
	testenv.Eventually(t, 15*time.Second, "last_used_at recorded", func() bool {
		var used *time.Time
		if err := pool.QueryRow(context.Background(), `SELECT last_used_at FROM api_keys WHERE id = $1`, a.ID).Scan(&used); err != nil {
			t.Fatal(err)
		}
		return used != nil
	})
}

func TestProjectCommands(t *testing.T) {
	t.Parallel()
	out, err := runCmd(t, "project", "create", "--name", "Shop A")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		ID         string `json:"id"`
		TestMode   bool   `json:"testMode"`
		Accounting string `json:"accounting"`
		Settings   map[string]any
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.ID == "" {
		t.Fatalf("create: %v: %s", err, out)
	}
	if !p.TestMode || p.Accounting != "accrual" {
		t.Errorf("new project testMode %v accounting %q, want test mode and accrual", p.TestMode, p.Accounting)
	}
	out, err = runCmd(t, "project", "set", "--project", p.ID, "--test-mode=false", "--accounting", "cash",
		"--seller-name", "Muster GmbH", "--contact-phone", "+49 30 1", "--invoice-first-gateways", "invoice, bank_transfer",
		"--stripe-api-key", "rk_test_1234567890")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.TestMode || p.Accounting != "cash" || p.Settings["sellerName"] != "Muster GmbH" ||
		!cmp.Equal(p.Settings["invoiceFirstGateways"], []any{"invoice", "bank_transfer"}) {
		t.Errorf("after set: %s", out)
	}
	if strings.Contains(out, "rk_test_1234567890") {
		t.Error("project set prints a secret in full")
	}
	// An empty value clears a setting; other settings stay.
	if _, err := runCmd(t, "project", "set", "--project", p.ID, "--seller-name", ""); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, "project", "show", "--project", p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "Muster GmbH") || !strings.Contains(out, "+49 30 1") {
		t.Errorf("show after clearing seller name: %s", out)
	}
	if _, err := runCmd(t, "project", "show", "--project", "00000000-0000-0000-0000-000000000000"); err == nil {
		t.Error("show of an unknown project succeeded")
	}
	if _, err := runCmd(t, "project", "create", "--name", "x", "--accounting", "barter"); err == nil {
		t.Error("create with an unknown accounting method succeeded")
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	if _, err := runCmd(t, "project", "set", "--project", pid, "--rate-limit", "1", "--rate-burst", "3"); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	limited := 0
	for i := 0; i < 8; i++ {
		r := c.Do("GET", "/v1/orders/rate-"+strconv.Itoa(i), key, nil)
		if r.Status != http.StatusTooManyRequests {
			continue
		}
		limited++
		if code, _ := r.ErrorCode(t); code != "rate_limited" {
			t.Errorf("code %q", code)
		}
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
			t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	}
	if limited < 4 {
		t.Errorf("%d of 8 requests limited with rate 1/s burst 3, want at least 4", limited)
	}
	// Another key of another project is not affected.
	other := testenv.Key(t, pool, testenv.Project(t, pool, true))
	if r := c.Do("GET", "/v1/orders/x", other, nil); r.Status == http.StatusTooManyRequests {
		t.Error("another project's key was limited")
	}
}

func TestRequestLogIsRetrievable(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	r := client(t).Do("POST", "/v1/fulfillments", key, []byte(`{"orderNo":"trace-1"}`), "Idempotency-Key", "trace-key-1")
	id := r.Header.Get("X-Request-Id")
	var out string
	testenv.Eventually(t, 10*time.Second, "request "+id+" retrievable with o2i requests show", func() bool {
		var err error
		out, err = runCmd(t, "requests", "show", id)
		return err == nil
	})
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"requestId": id, "projectId": pid, "keyPrefix": key[:len(apikey.Prefix)+8],
		"method": "POST", "path": "/v1/fulfillments", "status": float64(r.Status), "idempotencyKey": "trace-key-1"}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	if d, _ := rec["durationMicros"].(float64); d <= 0 {
		t.Errorf("durationMicros %v", rec["durationMicros"])
	}
}

func TestDiscoveryListsTheRouteTable(t *testing.T) {
	t.Parallel()
	r := client(t).Do("GET", "/v1", "", nil)
	var body httpx.DiscoveryBody
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	var want []httpx.EndpointEntry
	for _, rt := range newWiring(&deps{}, nil).routes(&health{}) {
		s := string(rt.Scope)
		if rt.Public() {
			s = "public"
		}
		want = append(want, httpx.EndpointEntry{Method: rt.Method, Path: rt.Path, Scope: s, Summary: rt.Summary})
	}
	if diff := cmp.Diff(want, body.Endpoints); diff != "" {
		t.Errorf("discovery differs from the route table (-table +served):\n%s", diff)
	}
	spec := map[string]string{
		"POST /v1/orders": "orders:write", "GET /v1/orders/{orderNo}": "invoices:read", "POST /v1/fulfillments": "orders:write",
		"GET /v1/invoices": "invoices:read", "GET /v1/invoices/{reference}": "invoices:read",
		"GET /v1/invoices/{reference}/pdf": "invoices:read", "GET /v1/invoices/{reference}/xml": "invoices:read",
		"POST /v1/credit-transactions": "orders:write", "PUT /v1/credit-balances": "orders:write",
		"GET /api/health": "public", "GET /v1": "public",
	}
	got := map[string]string{}
	for _, e := range body.Endpoints {
		got[e.Method+" "+e.Path] = e.Scope
	}
	for ep, scope := range spec {
		if got[ep] != scope {
			t.Errorf("%s: scope %q, want %q", ep, got[ep], scope)
		}
	}
}

// TestOpenAPIDocumentIsCommittedAndServed keeps cmd/o2i/openapi.json equal to
// what the route table generates (regenerate with `make openapi`).
func TestOpenAPIDocumentIsCommittedAndServed(t *testing.T) {
	t.Parallel()
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(committed), bytes.TrimSpace(doc)) {
		t.Error("cmd/o2i/openapi.json is out of date: run `make openapi`")
	}
	r := client(t).Do("GET", "/v1/openapi.json", "", nil)
	if !bytes.Equal(bytes.TrimSpace(r.Body), bytes.TrimSpace(doc)) {
		t.Error("served OpenAPI document differs from the generated one")
	}
	var d struct {
		OpenAPI string `json:"openapi"`
		Info    struct{ Version string }
	}
	if err := json.Unmarshal(doc, &d); err != nil || !strings.HasPrefix(d.OpenAPI, "3.1") || d.Info.Version != "1.0.0" {
		t.Errorf("openapi %q version %q (%v)", d.OpenAPI, d.Info.Version, err)
	}
}

// TestMetrics: the metrics are served on their own listener
// (O2I_METRICS_ADDR), never on the public API port.
func TestMetrics(t *testing.T) {
	t.Parallel()
	c := client(t)
	c.Do("GET", "/api/health", "", nil)
	if r := c.Do("GET", "/metrics", "", nil); r.Status != 404 {
		t.Errorf("GET /metrics on the API port: %d, want 404", r.Status)
	}
	r := (&apitest.Client{T: t, BaseURL: metricsURL}).Do("GET", "/metrics", "", nil)
	if r.Status != 200 || !bytes.Contains(r.Body, []byte(`o2i_http_requests_total{method="GET",route="/api/health",status="200"}`)) {
		t.Errorf("metrics lack the request counter by route and status:\n%.2000s", r.Body)
	}
	if !bytes.Contains(r.Body, []byte("o2i_http_request_duration_seconds_bucket")) {
		t.Error("metrics lack the latency histogram")
	}
	for _, name := range []string{"o2i_order_create_batch_orders_bucket", "o2i_order_create_fallbacks_total", "o2i_order_create_stall_runners_total",
		`o2i_db_group_statements_bucket{group="archived_mark"`, `o2i_db_group_fallbacks_total{group="mail_sent"}`, "o2i_db_round_trips_total "} {
		if !bytes.Contains(r.Body, []byte(name)) {
			t.Errorf("metrics lack %s", name)
		}
	}
}

// TestProjectSecretsFromFileOrStdin: the provider secrets can be given by
// file or standard input instead of a flag that lands in the shell history.
func TestProjectSecretsFromFileOrStdin(t *testing.T) {
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	file := t.TempDir() + "/secret"
	if err := os.WriteFile(file, []byte("whsec_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--stripe-webhook-secret-file", file); err != nil {
		t.Fatal(err)
	}
	stdin = strings.NewReader("sk_test_from_stdin\r\n")
	defer func() { stdin = os.Stdin }()
	if _, err := runCmd(t, "project", "set", "--project", pid, "--stripe-api-key-file", "-"); err != nil {
		t.Fatal(err)
	}
	p, err := project.Get(context.Background(), pool, pid)
	if err != nil {
		t.Fatal(err)
	}
	if p.Settings.StripeWebhookSecret != "whsec_from_file" || p.Settings.StripeAPIKey != "sk_test_from_stdin" {
		t.Errorf("secrets %q and %q, want whsec_from_file and sk_test_from_stdin", p.Settings.StripeWebhookSecret, p.Settings.StripeAPIKey)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--stripe-api-key", "x", "--stripe-api-key-file", file); err == nil {
		t.Error("a flag and its -file together were accepted")
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--stripe-api-key-file", file+".missing"); err == nil {
		t.Error("a missing secret file was accepted")
	}
}
