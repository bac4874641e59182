package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestPathParametersWithSlashes: an orderNo holding "/" is written and read
// back through its %2F-escaped path, the order status and the invoice.
// Parameters that are not text are 400 invalid_request, on the read side too.
func TestPathParametersWithSlashes(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	key := testenv.Key(t, pool, testenv.Project(t, pool, true))
	c := client(t)
	// The response checker finds the route by the unescaped path, where
	// A/B-1 is two segments: these requests are checked against the
	// documented route by hand.
	raw := &apitest.Client{T: t, BaseURL: baseURL}
	check := func(method, route string, r apitest.Response) {
		t.Helper()
		if err := validator.Check(method, route, r.Status, r.Header, r.Body); err != nil {
			t.Errorf("OpenAPI: %v", err)
		}
	}

	const orderNo = "A/B-1"
	r := c.Do("POST", "/v1/orders", key, []byte(`{"orderNo":"A/B-1","financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":4900,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":4900,"externalRef":"ref-1"}],"grossTotalCents":4900}`),
		"Idempotency-Key", "slash-1")
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/orders: %d %s", r.Status, r.Body)
	}

	testenv.Eventually(t, 60*time.Second, "order A/B-1 invoiced and archived", func() bool {
		r := raw.Do("GET", "/v1/orders/A%2FB-1", key, nil)
		check("GET", "/v1/orders/x", r)
		if r.Status == http.StatusNotFound {
			return false
		}
		if r.Status != http.StatusOK {
			t.Fatalf("GET /v1/orders/A%%2FB-1: %d %s", r.Status, r.Body)
		}
		var body struct {
			Data struct {
				OrderNo, Status string
				Invoices        []map[string]any
			}
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Data.OrderNo != orderNo {
			t.Fatalf("order status %s (%v)", r.Body, err)
		}
		return body.Data.Status == "invoiced" && len(body.Data.Invoices) == 1 && body.Data.Invoices[0]["status"] == "archived"
	})

	r = raw.Do("GET", "/v1/invoices/A%2FB-1", key, nil)
	check("GET", "/v1/invoices/x", r)
	var inv struct{ Data map[string]any }
	if err := json.Unmarshal(r.Body, &inv); err != nil || r.Status != http.StatusOK || inv.Data["orderNo"] != orderNo {
		t.Fatalf("GET /v1/invoices/A%%2FB-1: %d %s", r.Status, r.Body)
	}
	r = raw.Do("GET", "/v1/invoices/A%2FB-1/xml", key, nil)
	check("GET", "/v1/invoices/x/xml", r)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), inv.Data["number"].(string)) {
		t.Errorf("GET /v1/invoices/A%%2FB-1/xml: %d %.200s", r.Status, r.Body)
	}
	r = c.Do("GET", "/v1/invoices?orderNo=A%2FB-1", key, nil)
	if !strings.Contains(string(r.Body), inv.Data["id"].(string)) {
		t.Errorf("GET /v1/invoices?orderNo=A%%2FB-1: %d %s", r.Status, r.Body)
	}
	r = raw.Do("POST", "/v1/orders/A%2FB-1/cancel", key, nil, "Idempotency-Key", "slash-cancel")
	check("POST", "/v1/orders/x/cancel", r)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"orderNo":"A/B-1"`) {
		t.Errorf("POST /v1/orders/A%%2FB-1/cancel: %d %s", r.Status, r.Body)
	}

	for _, tc := range []struct{ path, route, field string }{
		{"/v1/orders/A%00", "/v1/orders/x", "orderNo"},
		{"/v1/orders/A%2F%FF", "/v1/orders/x", "orderNo"},
		{"/v1/invoices/A%00", "/v1/invoices/x", "reference"},
		{"/v1/invoices/A%2F%00/pdf", "/v1/invoices/x/pdf", "reference"},
		{"/v1/tasks/%00", "/v1/tasks/x", "id"},
		{"/v1/invoices?orderNo=%00", "/v1/invoices", "orderNo"},
		{"/v1/invoices?paymentRef=%FF", "/v1/invoices", "paymentRef"},
		{"/v1/tasks?orderNo=A%00", "/v1/tasks", "orderNo"},
		{"/v1/invoices?limit=%zz", "/v1/invoices", ""},
	} {
		r := raw.Do("GET", tc.path, key, nil)
		check("GET", tc.route, r)
		if code, field := r.ErrorCode(t); r.Status != http.StatusBadRequest || code != "invalid_request" || field != tc.field {
			t.Errorf("GET %s: %d %s, want 400 invalid_request field %q", tc.path, r.Status, r.Body, tc.field)
		}
	}
}
