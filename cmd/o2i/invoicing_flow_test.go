package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestDueOrdersAreInvoicedAndVisible: an order paid completely with store
// credit is invoiced without a payment; a goods order with an invoice-first
// gateway is invoiced at the fulfilled report. Both invoices appear in the
// order status, the metadata and the listing.
func TestDueOrdersAreInvoicedAndVisible(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	if _, err := project.Apply(context.Background(), pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.InvoiceFirstGateways = []string{"invoice"}
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]

	credit := "CR-" + suffix
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":4900,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":4900,"externalRef":"ref-1"}],"grossTotalCents":4900}`, credit, "pay-"+credit)),
		"Idempotency-Key", credit)
	if r.Status != http.StatusCreated {
		t.Fatalf("credit order: %d %s", r.Status, r.Body)
	}
	data := waitStatus(t, c, key, credit, func(d map[string]any) bool {
		invs := d["invoices"].([]any)
		return len(invs) == 1 && d["status"] == "invoiced" && invs[0].(map[string]any)["status"] == "archived"
	})
	inv := data["invoices"].([]any)[0].(map[string]any)
	if !strings.HasPrefix(inv["number"].(string), "TEST-") {
		t.Errorf("credit order status record %v", data)
	}
	// The archived XML is served and passes the rules.
	xml := c.Do("GET", "/v1/invoices/"+inv["id"].(string)+"/xml", key, nil)
	if xml.Status != 200 || !strings.HasPrefix(xml.Header.Get("Content-Type"), "application/xml") {
		t.Fatalf("GET xml: %d %s", xml.Status, xml.Body)
	}
	if fs := einvoice.CheckXML(xml.Body); !einvoice.Valid(fs) || !strings.Contains(string(xml.Body), inv["number"].(string)) {
		t.Errorf("archived XML: %v", fs)
	}
	// So is the PDF: a ZUGFeRD PDF/A-3 with the XML embedded, clean by the
	// official rules.
	pdf := c.Do("GET", "/v1/invoices/"+inv["number"].(string)+"/pdf", key, nil)
	if pdf.Status != 200 || pdf.Header.Get("Content-Type") != "application/pdf" || !strings.HasPrefix(string(pdf.Body), "%PDF-") {
		t.Fatalf("GET pdf: %d %s %.200q", pdf.Status, pdf.Header.Get("Content-Type"), pdf.Body)
	}
	file := filepath.Join(t.TempDir(), "invoice.pdf")
	if err := os.WriteFile(file, pdf.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	judgeFiles(t, file)
	for _, ref := range []string{inv["id"].(string), inv["number"].(string), credit, "pay-" + credit} {
		r := c.Do("GET", "/v1/invoices/"+ref, key, nil)
		var body struct{ Data map[string]any }
		if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != 200 || body.Data["id"] != inv["id"] {
			t.Errorf("GET /v1/invoices/%s: %d %s", ref, r.Status, r.Body)
			continue
		}
		if body.Data["totalGrossCents"] != float64(4900) || body.Data["testMode"] != true || body.Data["format"] != "zugferd" ||
			body.Data["archivedAt"] == nil {
			t.Errorf("metadata %v", body.Data)
		}
	}

	goods := "IF-" + suffix
	r = c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentGateway":"invoice","requiresShipping":true,
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Tee","quantity":3,"unitNetCents":500,"taxRate":7}]}`, goods)), "Idempotency-Key", goods)
	if r.Status != http.StatusCreated {
		t.Fatalf("goods order: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, goods, func(d map[string]any) bool { return d["status"] == "created" })
	r = c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"partial"}`, goods)), "Idempotency-Key", goods+"-p")
	if r.Status != 200 {
		t.Fatalf("partial: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, goods, func(d map[string]any) bool { return d["fulfillmentStatus"] == "partial" })
	if d := waitStatus(t, c, key, goods, func(map[string]any) bool { return true }); len(d["invoices"].([]any)) != 0 {
		t.Fatalf("invoice before the complete shipment: %v", d)
	}
	r = c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled","shippedAt":"2026-11-21T09:30:00Z"}`, goods)), "Idempotency-Key", goods+"-f")
	if r.Status != 200 {
		t.Fatalf("fulfilled: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, goods, func(d map[string]any) bool { return len(d["invoices"].([]any)) == 1 })
	var supply string
	if err := pool.QueryRow(context.Background(), `SELECT convert_from(xml, 'UTF8') FROM invoices WHERE project_id = $1 AND order_no = $2`, pid, goods).Scan(&supply); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(supply, "20261121") {
		t.Error("the invoice's date of supply is not the shipping date 2026-11-21")
	}
	page := c.Do("GET", "/v1/invoices?limit=10", key, nil)
	if n := len(page.JSON(t)["data"].([]any)); n != 2 {
		t.Errorf("listing has %d invoices, want 2", n)
	}
}

// TestProviderPaymentInvoicesTheOrder: the payment provider's signed webhook
// pays a digital order, and the invoicer issues and archives its invoice
// with the payment date; a goods order paid before shipping waits for the
// fulfilled report.
func TestProviderPaymentInvoicesTheOrder(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_flow_test"
	if _, err := project.Apply(context.Background(), pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.StripeWebhookSecret = secret
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	pay := func(ref string, cents int) {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":%q,"object":"payment_intent","amount":%d,"amount_received":%d,"currency":"eur"}}}`,
			uuid.NewString()[:12], ref, cents, cents))
		r := c.Do("POST", "/v1/webhooks/stripe/"+pid, "", body, "Stripe-Signature", testenv.StripeSignature(secret, body, time.Now()))
		if r.Status != 200 {
			t.Fatalf("webhook: %d %s", r.Status, r.Body)
		}
	}
	suffix := uuid.NewString()[:8]
	digital, goods, short := "DIG-"+suffix, "GDS-"+suffix, "SHORT-"+suffix
	for _, o := range []struct {
		no       string
		shipping bool
	}{{digital, false}, {goods, true}, {short, false}} {
		r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe","requiresShipping":%t,
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"items":[{"name":"E-Book-Abo","quantity":1,"unitGrossCents":1190,"taxRate":19}]}`, o.no, o.no, o.shipping)), "Idempotency-Key", o.no)
		if r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", o.no, r.Status, r.Body)
		}
	}
	pay("pi_"+digital, 1190)
	pay("pi_"+goods, 1190)
	pay("pi_"+short, 1000) // not the amount due: invoiced, and a task for clarification
	d := waitStatus(t, c, key, digital, func(d map[string]any) bool {
		invs := d["invoices"].([]any)
		return len(invs) == 1 && invs[0].(map[string]any)["status"] == "archived"
	})
	number := d["invoices"].([]any)[0].(map[string]any)["number"].(string)
	if x := c.Do("GET", "/v1/invoices/"+number+"/xml", key, nil); x.Status != 200 || !strings.Contains(string(x.Body), "pi_"+digital) {
		t.Errorf("XML of the paid order: %d", x.Status)
	}
	// The goods order is paid but not shipped: no invoice yet.
	if g := waitStatus(t, c, key, goods, func(map[string]any) bool { return true }); len(g["invoices"].([]any)) != 0 {
		t.Fatalf("invoice before shipping: %v", g)
	}
	if r := c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled"}`, goods)), "Idempotency-Key", goods+"-f"); r.Status != 200 {
		t.Fatalf("fulfilled: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, goods, func(d map[string]any) bool { return len(d["invoices"].([]any)) == 1 })
	waitStatus(t, c, key, short, func(d map[string]any) bool { return len(d["invoices"].([]any)) == 1 })
	var mismatches int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = 'payment_amount_mismatch' AND status = 'open'
		AND subject = ANY($2)`, pid, []string{digital, goods, short}).Scan(&mismatches); err != nil {
		t.Fatal(err)
	}
	if mismatches != 1 {
		t.Errorf("%d payment_amount_mismatch tasks, want 1 (for %s only)", mismatches, short)
	}
}
