package main

import (
	"archive/zip"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestSmallAmountInvoice: a German consumer's PayPal-paid order of 14.99 EUR
// whose billing address is only a country (with an e-mail on the order) is
// issued as a small-amount invoice (§ 33 UStDV): format small_amount in the
// metadata and the listing, no xmlUrl, GET .../xml 409 xml_not_applicable,
// the PDF served, the archive holding the PDF alone and verifying. The same
// order from Austria, and one of 250.01 EUR, stay held with a task naming
// the missing fields.
func TestSmallAmountInvoice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false)
	const secret = "whsec_small_test"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	order := func(no, country string, gross int, rate string) {
		t.Helper()
		body := fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe","email":"kunde@example.org",
			"billingAddress":{"country_code":%q},"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
			"items":[{"name":"Online-Kurs Gartenbau (November)","quantity":1,"unitGrossCents":%d,"taxRate":%s}]}`,
			no, no, country, gross, rate)
		if r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", no, r.Status, r.Body)
		}
		stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(
			`{"id":"pi_%s","object":"payment_intent","amount":%d,"amount_received":%d,"currency":"eur","payment_method_types":["paypal"]}`, no, gross, gross))
	}
	small, abroad, large := "KB-"+suffix, "KB-AT-"+suffix, "KB-L-"+suffix
	order(small, "DE", 1499, "7")
	order(abroad, "AT", 1499, "19")
	order(large, "DE", 25001, "19")

	docs := documents(t, c, key, small, "invoiced", 1)
	id := docs[0]["id"].(string)
	meta := c.Do("GET", "/v1/invoices/"+id, key, nil).JSON(t)["data"].(map[string]any)
	if meta["format"] != "small_amount" || meta["xmlUrl"] != nil || meta["pdfUrl"] == nil {
		t.Errorf("metadata: %v", meta)
	}
	if r := c.Do("GET", "/v1/invoices/"+id+"/xml", key, nil); r.Status != http.StatusConflict || r.JSON(t)["error"].(map[string]any)["code"] != "xml_not_applicable" {
		t.Errorf("GET xml: %d %s", r.Status, r.Body)
	}
	pdf := c.Do("GET", "/v1/invoices/"+id+"/pdf", key, nil)
	if pdf.Status != 200 || !strings.HasPrefix(string(pdf.Body), "%PDF-") || strings.Contains(string(pdf.Body), "/EmbeddedFile") {
		t.Errorf("GET pdf: %d, embedded file %v", pdf.Status, strings.Contains(string(pdf.Body), "/EmbeddedFile"))
	}
	if r := c.Do("GET", "/v1/invoices?orderNo="+small, key, nil); r.Status != 200 ||
		r.JSON(t)["data"].([]any)[0].(map[string]any)["format"] != "small_amount" {
		t.Errorf("listing: %d %s", r.Status, r.Body)
	}
	// The archive holds its PDF alone, and it verifies.
	var kinds string
	if err := pool.QueryRow(ctx, `SELECT string_agg(kind, ',' ORDER BY kind) FROM archive_objects WHERE invoice_id = $1`, id).Scan(&kinds); err != nil || kinds != "manifest,pdf" {
		t.Errorf("archived objects %q (%v), want the PDF and its manifest", kinds, err)
	}
	year := strings.Split(meta["issueDate"].(string), "-")[0]
	out, err := runCmd(t, "archive", "verify", "--project", pid, "--year", year, "--quiet")
	if err != nil || !strings.Contains(out, `"checked":2,"ok":2,"problems":[]`) {
		t.Errorf("archive verify: %v\n%s", err, out)
	}
	// The tax-audit export lists it with its PDF alone.
	zipFile := filepath.Join(t.TempDir(), "export.zip")
	if _, err := runCmd(t, "archive", "export", "--project", pid, "--year", year, "--out", zipFile, "--quiet"); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		if strings.HasPrefix(f.Name, "documents/") {
			names = append(names, f.Name)
		}
	}
	if len(names) != 1 || !strings.HasSuffix(names[0], ".pdf") {
		t.Errorf("exported documents %v, want one PDF", names)
	}
	// Held: a distance sale, and more than 250 EUR; the task names the fields.
	for _, no := range []string{abroad, large} {
		taskState(t, pool, pid, "order_not_invoiceable", no, "open")
		var details string
		if err := pool.QueryRow(ctx, `SELECT details->>'details' FROM tasks WHERE project_id = $1 AND subject = $2 AND kind = 'order_not_invoiceable'`,
			pid, no).Scan(&details); err != nil || !strings.Contains(details, "billingAddress.street") || !strings.Contains(details, "§ 33 UStDV") {
			t.Errorf("task of %s: %q (%v)", no, details, err)
		}
		if n := numbersOf(t, pool, pid, no); n != 0 {
			t.Errorf("held order %s has %d invoices", no, n)
		}
	}
}
