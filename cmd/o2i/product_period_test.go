package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestProductDefaultPeriodOnTheDocument: a service order whose line has no
// productId (its product is matched by sku) and no service_period waits
// under accrual accounting; the product is found in GET /v1/products
// (unconfigured), configured by its catalogue id, and the released invoice
// carries the product's default period from the date of supply
// (15th to 14th style: from the payment date for the product's months,
// ending the day before the same date) as its service period (BG-14).
func TestProductDefaultPeriodOnTheDocument(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true) // accrual accounting
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	no, sku := "PD-"+suffix, "SAAS-"+suffix
	body := fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Erika Musterfrau","street":"Lindenstraße 12","postal_code":"50667","city":"Köln"},
		"items":[{"name":"Team-Abo","sku":%q,"quantity":1,"unitNetCents":1000,"taxRate":19}],
		"creditRedemptions":[{"type":"referral_credit","amountCents":1190,"externalRef":"r-%s"}],"grossTotalCents":1190}`, no, sku, no)
	if r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", no); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	taskState(t, pool, pid, "product_without_revenue_recognition", no, "open")

	// The listing finds it among the unconfigured products, with its id.
	r := c.Do("GET", "/v1/products?unconfigured=true&limit=100", key, nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/products: %d %s", r.Status, r.Body)
	}
	var id string
	for _, p := range r.JSON(t)["data"].([]any) {
		p := p.(map[string]any)
		if p["sku"] == sku {
			if p["matchedBy"] != "sku" || p["productId"] != nil || p["revenueRecognition"] != nil {
				t.Errorf("listed product: %v", p)
			}
			id = p["id"].(string)
		}
	}
	if id == "" {
		t.Fatalf("product %s not listed: %s", sku, r.Body)
	}
	for _, bad := range []struct{ query, field string }{{"limit=0", "limit"}, {"unconfigured=yes", "unconfigured"}, {"cursor=abc", "cursor"}} {
		if r := c.Do("GET", "/v1/products?"+bad.query, key, nil); r.Status != 422 || r.JSON(t)["error"].(map[string]any)["field"] != bad.field {
			t.Errorf("GET /v1/products?%s: %d %s", bad.query, r.Status, r.Body)
		}
	}
	if r := c.Do("GET", "/v1/products", testenv.Key(t, pool, pid, "invoices:read"), nil); r.Status != 403 {
		t.Errorf("listing without orders:write: %d", r.Status)
	}

	// Configured by its id: one month from the date of supply.
	r = c.Do("PUT", "/v1/products/"+id, key, []byte(`{"revenueRecognition":{"periodMonths":1}}`))
	if d, _ := r.JSON(t)["data"].(map[string]any); r.Status != 200 || d["id"] != id || d["matchedBy"] != "sku" {
		t.Fatalf("PUT by id: %d %s", r.Status, r.Body)
	}
	docs := documents(t, c, key, no, "invoiced", 1)
	taskState(t, pool, pid, "product_without_revenue_recognition", no, "resolved")
	x := c.Do("GET", "/v1/invoices/"+docs[0]["id"].(string)+"/xml", key, nil)
	flat := strings.Join(strings.Fields(string(x.Body)), "")
	var issue string
	if err := pool.QueryRow(t.Context(), `SELECT to_char(issue_date, 'YYYYMMDD') FROM invoices WHERE id = $1`, docs[0]["id"]).Scan(&issue); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flat, `<ram:BillingSpecifiedPeriod><ram:StartDateTime><udt:DateTimeStringformat="102">`+issue) {
		t.Errorf("no service period from the date of supply %s:\n%s", issue, x.Body)
	}
	// Listed as configured now, and the CLI lists it too.
	out, err := runCmd(t, "product", "list", "--project", pid)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, `"periodMonths": 1`) {
		t.Errorf("o2i product list: %v\n%s", err, out)
	}
	refereeFiles(t, c, key, docs)
}
