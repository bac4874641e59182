package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/text/encoding/charmap"

	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestAccountingExportsShowLiveDocumentsOnly: a live project (OSS-registered,
// an invoice-first gateway, SKR04, a debtor per customer) issues a domestic
// service whose period crosses a month end (paid by store credit), a service
// to an Austrian business (reverse charge) and an OSS sale to a French
// consumer; then, switched to test mode, a test document. Through HTTP the
// DATEV export, the OSS return and the EC sales list show the live
// documents, and never the test one; the command writes the same DATEV file.
func TestAccountingExportsShowLiveDocumentsOnly(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	pid := testenv.Project(t, pool, false)
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.InvoiceFirstGateways = []string{"invoice"}
		s.OSSRegistered = true
		s.StripeWebhookSecret = "whsec_accounting"
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--chart-of-accounts", "skr04", "--debtors", "per-customer",
		"--accounts", "deferred=3901", "--datev-consultant", "29098", "--datev-client", "55003"); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	today := time.Now().UTC()
	start, end := today.Format(time.DateOnly), today.AddDate(0, 0, 40).Format(time.DateOnly)

	post := func(orderNo, body string) {
		t.Helper()
		r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", orderNo)
		if r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", orderNo, r.Status, r.Body)
		}
	}
	invoiced := func(orderNo string) string {
		t.Helper()
		// The order's status and its documents arrive in two events: wait for both.
		data := waitStatus(t, c, key, orderNo, func(d map[string]any) bool {
			invs, _ := d["invoices"].([]any)
			return d["status"] == "invoiced" && len(invs) > 0
		})
		return data["invoices"].([]any)[0].(map[string]any)["number"].(string)
	}

	de := "DE-" + suffix
	post(de, fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid","email":"kunde-%s@example.de",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Abo","quantity":1,"unitGrossCents":11900,"taxRate":19}],
		"service_period":{"start_date":%q,"end_date":%q},
		"creditRedemptions":[{"type":"referral_credit","amountCents":11900,"externalRef":"cr-%s"}],"grossTotalCents":11900}`,
		de, suffix, start, end, suffix))
	numDE := invoiced(de) // one after the other, so the debtors are given in this order
	at := "AT-" + suffix
	post(at, fmt.Sprintf(`{"orderNo":%q,"paymentGateway":"invoice",
		"billingAddress":{"country_code":"AT","company_name":"Kunde GmbH","name":"Eva Huber","vat_id":"ATU12345678","street":"Ring 1","postal_code":"1010","city":"Wien"},
		"items":[{"name":"Beratung","quantity":1,"unitNetCents":25050}],
		"service_period":{"start_date":%q,"end_date":%q}}`, at, start, start))
	numAT := invoiced(at)
	pay := func(ref string, cents int) {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":%q,"object":"payment_intent","amount":%d,"amount_received":%d,"currency":"eur"}}}`,
			uuid.NewString()[:12], ref, cents, cents))
		r := c.Do("POST", "/v1/webhooks/stripe/"+pid, "", body, "Stripe-Signature", testenv.StripeSignature("whsec_accounting", body, time.Now()))
		if r.Status != 200 {
			t.Fatalf("webhook: %d %s", r.Status, r.Body)
		}
	}
	fr := "FR-" + suffix
	post(fr, fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid","email":"marie-%s@example.fr",
		"billingAddress":{"country_code":"FR","name":"Marie Curie","street":"2 rue Cuvier","postal_code":"75005","city":"Paris"},
		"items":[{"name":"Kurs","quantity":1,"unitGrossCents":6000,"taxRate":19}],
		"service_period":{"start_date":%q,"end_date":%q},
		"creditRedemptions":[{"type":"referral_credit","amountCents":6000,"externalRef":"cr2-%s"}],"grossTotalCents":6000}`,
		fr, suffix, start, start, suffix))
	numFR := invoiced(fr)
	// Paid through the provider by the customer of the first order: the same debtor.
	paid := "PAY-" + suffix
	post(paid, fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe","email":"KUNDE-%s@example.de",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"E-Book","quantity":1,"unitGrossCents":1190,"taxRate":7}],
		"service_period":{"start_date":%q,"end_date":%q}}`, paid, paid, suffix, start, start))
	pay("pi_"+paid, 1190)
	numPaid := invoiced(paid)
	// 5,00 of it refunded through the provider: a credit note, and money out.
	refund := []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","type":"charge.refunded","data":{"object":{"id":"ch_%s","object":"charge","payment_intent":"pi_%s","amount":1190,"amount_refunded":500,"refunded":false,"currency":"eur"}}}`,
		uuid.NewString()[:12], paid, paid))
	if r := c.Do("POST", "/v1/webhooks/stripe/"+pid, "", refund, "Stripe-Signature", testenv.StripeSignature("whsec_accounting", refund, time.Now())); r.Status != 200 {
		t.Fatalf("refund webhook: %d %s", r.Status, r.Body)
	}
	d := waitStatus(t, c, key, paid, func(d map[string]any) bool { return len(d["invoices"].([]any)) == 2 })
	numNote := d["invoices"].([]any)[1].(map[string]any)["number"].(string)
	// Another order refunded in full: cancelled, and all the money goes back.
	full := "FULL-" + suffix
	post(full, fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe","email":"kunde-%s@example.de",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Kurs","quantity":1,"unitGrossCents":2380,"taxRate":19}],
		"service_period":{"start_date":%q,"end_date":%q}}`, full, full, suffix, start, start))
	pay("pi_"+full, 2380)
	numFull := invoiced(full)
	refundAll := []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","type":"charge.refunded","data":{"object":{"id":"ch_%s","object":"charge","payment_intent":"pi_%s","amount":2380,"amount_refunded":2380,"refunded":true,"currency":"eur"}}}`,
		uuid.NewString()[:12], full, full))
	if r := c.Do("POST", "/v1/webhooks/stripe/"+pid, "", refundAll, "Stripe-Signature", testenv.StripeSignature("whsec_accounting", refundAll, time.Now())); r.Status != 200 {
		t.Fatalf("refund webhook: %d %s", r.Status, r.Body)
	}
	d = waitStatus(t, c, key, full, func(d map[string]any) bool { return len(d["invoices"].([]any)) == 2 })
	numStorno := d["invoices"].([]any)[1].(map[string]any)["number"].(string)

	// The same project in test mode: its document is a test document.
	if _, err := runCmd(t, "project", "set", "--project", pid, "--test-mode=true"); err != nil {
		t.Fatal(err)
	}
	tst := "T-" + suffix
	post(tst, fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"FR","name":"Test Kunde","vat_id":"FR99999999999","street":"1 rue","postal_code":"75001","city":"Paris"},
		"items":[{"name":"Test","quantity":1,"unitNetCents":77700}],
		"service_period":{"start_date":%q,"end_date":%q},
		"creditRedemptions":[{"type":"referral_credit","amountCents":77700,"externalRef":"cr3-%s"}],"grossTotalCents":77700}`,
		tst, start, start, suffix))
	if n := invoiced(tst); !strings.HasPrefix(n, "TEST-") {
		t.Fatalf("test document %s", n)
	}
	tpaid := "TPAY-" + suffix
	post(tpaid, fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
		"billingAddress":{"country_code":"DE","name":"Test Kunde","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Test","quantity":1,"unitGrossCents":88800,"taxRate":19}],
		"service_period":{"start_date":%q,"end_date":%q}}`, tpaid, tpaid, start, start))
	pay("pi_"+tpaid, 88800)
	if n := invoiced(tpaid); !strings.HasPrefix(n, "TEST-") {
		t.Fatalf("test document %s", n)
	}

	from := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	r := c.Do("GET", "/v1/exports/datev?from="+from+"&to="+today.Format(time.DateOnly), key, nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("DATEV export: %d %s", r.Status, r.Body)
	}
	text, err := charmap.Windows1252.NewDecoder().Bytes(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	file := string(text)
	lines := strings.Split(strings.TrimSuffix(file, "\r\n"), "\r\n")
	if !strings.HasPrefix(lines[0], `"EXTF";700;21;"Buchungsstapel";13;`) || !strings.Contains(lines[0], ";29098;55003;") ||
		!strings.Contains(lines[0], `;"04";`) {
		t.Errorf("header record %s", lines[0])
	}
	rows := map[string][]string{}
	for _, l := range lines[2:] {
		f := strings.Split(l, ";")
		if len(f) != 125 {
			t.Fatalf("booking with %d fields: %s", len(f), l)
		}
		doc := strings.Trim(f[10], `"`)
		rows[doc] = append(rows[doc], fmt.Sprintf("%s %s>%s %s", f[0], f[6], f[7], strings.Trim(f[8], `"`)))
	}
	if strings.Contains(file, "TEST-") || strings.Contains(file, "777,00") || strings.Contains(file, "888,00") {
		t.Errorf("the test document is in the DATEV export:\n%s", file)
	}
	// Debtors per customer: 10001, 10002, 10003 in the order the documents were issued.
	want := map[string][]string{
		numDE: {"119,00 10001>4400 ", "119,00 3500>10001 ", "x 4400>3901 40"},
		numAT: {"250,50 10002>4336 "},
		numFR: {"60,00 10003>4320 ", "60,00 3500>10003 "},
		// 11,90 gross at 7 %, and the provider's payment on the collective Geldtransit account.
		// The refund leaves through the provider, named after the order's invoice.
		numPaid: {"11,90 10001>4300 ", "11,90 1460>10001 ", "5,00 10001>1460 "},
		// The credit note takes the revenue back.
		numNote:   {"5,00 4300>10001 "},
		numFull:   {"23,80 10001>4400 ", "23,80 1460>10001 ", "23,80 10001>1460 "},
		numStorno: {"23,80 4400>10001 "},
	}
	for doc, w := range want {
		got := rows[doc]
		if len(got) != len(w) {
			t.Errorf("%s: bookings %q, want %q", doc, got, w)
			continue
		}
		for i := range w {
			if strings.HasPrefix(w[i], "x ") { // the deferred net depends on today's date: only its accounts and BU
				if !strings.HasSuffix(got[i], strings.TrimPrefix(w[i], "x ")) {
					t.Errorf("%s booking %d: %q, want %q", doc, i, got[i], w[i])
				}
				continue
			}
			if got[i] != w[i] {
				t.Errorf("%s booking %d: %q, want %q", doc, i, got[i], w[i])
			}
		}
	}

	if len(rows) != len(want) {
		t.Errorf("bookings of %d documents, want %d: %v", len(rows), len(want), rows)
	}
	// A second export books every customer on the same debtor again.
	again := c.Do("GET", "/v1/exports/datev?from="+from+"&to="+today.Format(time.DateOnly), key, nil)
	if a, b := strings.SplitN(string(again.Body), "\r\n", 2), strings.SplitN(string(r.Body), "\r\n", 2); again.Status != 200 || a[1] != b[1] {
		t.Errorf("a second export differs:\n%s", again.Body)
	}

	// The command writes the same bookings to a file.
	out := filepath.Join(t.TempDir(), "datev.csv")
	if _, err := runCmd(t, "export", "datev", "--project", pid, "--from", from, "--to", today.Format(time.DateOnly), "--out", out, "--quiet"); err != nil {
		t.Fatal(err)
	}
	cmdFile, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Only the creation time of the header record differs.
	if a, b := strings.SplitN(string(cmdFile), "\r\n", 2), strings.SplitN(string(r.Body), "\r\n", 2); len(a) != 2 || len(b) != 2 || a[1] != b[1] {
		t.Errorf("the command's file differs from the API's")
	}

	month := today.Format("2006-01")
	r = c.Do("GET", "/v1/reports/ecsl?period="+month, key, nil)
	if r.Status != 200 || string(r.Body) != "#v1.0\r\n#ve1.0\r\nLaenderkennzeichen,USt-IdNr.,Betrag(EUR),Art der Leistung\r\nAT,U12345678,251,S\r\n" {
		t.Errorf("EC sales list: %d %q", r.Status, r.Body)
	}
	quarter := fmt.Sprintf("%d-Q%d", today.Year(), (int(today.Month())-1)/3+1)
	r = c.Do("GET", "/v1/reports/oss?quarter="+quarter, key, nil)
	if r.Status != 200 || !strings.HasSuffix(string(r.Body), "Umsatzsteuerbetrag\r\n3,FR,STANDARD,20.00,50.00,10.00\r\n") {
		t.Errorf("OSS return: %d %q", r.Status, r.Body)
	}
	ossOut, err := runCmd(t, "report", "oss", "--project", pid, "--quarter", quarter, "--quiet")
	if err != nil || ossOut != string(r.Body) {
		t.Errorf("o2i report oss: %q %v", ossOut, err)
	}

	// Bad parameters name their field; a key without invoices:read is refused.
	for _, tc := range []struct{ path, field string }{
		{"/v1/exports/datev?from=" + from + "&to=2099-01-01", "to"},
		{"/v1/exports/datev?from=2026-13-01&to=2026-12-31", "from"},
		{"/v1/exports/datev?from=2026-03-02&to=2026-03-01", "to"},
		{"/v1/reports/oss?quarter=2026-Q5", "quarter"},
		{"/v1/reports/ecsl?period=2026-3", "period"},
	} {
		r := c.Do("GET", tc.path, key, nil)
		if e, _ := r.JSON(t)["error"].(map[string]any); r.Status != 422 || e["field"] != tc.field {
			t.Errorf("%s: %d %s, want 422 with field %s", tc.path, r.Status, r.Body, tc.field)
		}
	}
	writeOnly := testenv.Key(t, pool, pid, "orders:write")
	if r := c.Do("GET", "/v1/reports/ecsl?period="+month, writeOnly, nil); r.Status != 403 {
		t.Errorf("a key without invoices:read: %d", r.Status)
	}
}

// TestRequestLookupByAnyKeyOfTheProject: a recorded request is served to
// any key of its project, whatever the key's scopes, and is 404 for another
// project's key and for an unknown id.
func TestRequestLookupByAnyKeyOfTheProject(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid, "invoices:read")
	writeOnly := testenv.Key(t, pool, pid, "orders:write")
	other := testenv.Key(t, pool, testenv.Project(t, pool, true))
	c := client(t)

	first := c.Do("GET", "/v1/orders/NOPE-"+uuid.NewString()[:8], key, nil, "Idempotency-Key", "idem-lookup")
	if first.Status != 404 {
		t.Fatalf("order lookup: %d", first.Status)
	}
	id := first.Header.Get("X-Request-Id")
	var rec map[string]any
	testenv.Eventually(t, 10*time.Second, "the request recorded", func() bool {
		r := c.Do("GET", "/v1/requests/"+id, writeOnly, nil)
		if r.Status == 200 {
			rec = r.JSON(t)["data"].(map[string]any)
		}
		return r.Status == 200
	})
	if rec["requestId"] != id || rec["method"] != "GET" || !strings.HasPrefix(rec["path"].(string), "/v1/orders/NOPE-") ||
		rec["status"] != float64(404) || rec["idempotencyKey"] != "idem-lookup" || rec["keyPrefix"] == nil || rec["at"] == nil {
		t.Errorf("record %v", rec)
	}
	if _, ok := rec["durationMicros"].(float64); !ok {
		t.Errorf("record without duration: %v", rec)
	}
	for _, tc := range []struct{ name, key, id string }{
		{"another project's key", other, id},
		{"an unknown id", key, uuid.Must(uuid.NewV7()).String()},
		{"not a UUID", key, "nope"},
	} {
		r := c.Do("GET", "/v1/requests/"+tc.id, tc.key, nil)
		if e, _ := r.JSON(t)["error"].(map[string]any); r.Status != 404 || e["code"] != "request_not_found" {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	if r := c.Do("GET", "/v1/requests/"+id, "", nil); r.Status != 401 {
		t.Errorf("without a key: %d", r.Status)
	}
}

// TestDATEVExportConflicts: invalid accounting settings and a document that
// cannot be booked are 409 with their codes, never an export with a gap.
func TestDATEVExportConflicts(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	pid := testenv.Project(t, pool, false)
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.InvoiceFirstGateways = []string{"invoice"}
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	no := "CONF-" + uuid.NewString()[:8]
	today := time.Now().UTC().Format(time.DateOnly)
	if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentGateway":"invoice",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Kurs","quantity":1,"unitNetCents":1000,"taxRate":19}],
		"service_period":{"start_date":%q,"end_date":%q}}`, no, today, today)), "Idempotency-Key", no); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, no, func(d map[string]any) bool { return d["status"] == "invoiced" })
	path := "/v1/exports/datev?from=" + today + "&to=" + today
	if r := c.Do("GET", path, key, nil); r.Status != 200 || !strings.Contains(string(r.Body), `;10000;8400;`) {
		t.Fatalf("export: %d %s", r.Status, r.Body)
	}

	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.AccountOverrides = map[string]string{"revenue19": "84000"}
	}}); err != nil {
		t.Fatal(err)
	}
	if r := c.Do("GET", path, key, nil); r.Status != 409 {
		t.Errorf("invalid settings: %d %s", r.Status, r.Body)
	} else if code, _ := r.ErrorCode(t); code != "accounting_settings_invalid" {
		t.Errorf("invalid settings: code %s", code)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounts", "revenue19=84000"); err == nil ||
		!strings.Contains(err.Error(), "four digits") {
		t.Errorf("project set accepted a five-digit ledger account: %v", err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounts", ""); err != nil {
		t.Fatal(err)
	}

	// A document without its stored computation cannot be booked.
	if _, err := pool.Exec(ctx, `UPDATE invoices SET document = NULL WHERE project_id = $1 AND order_no = $2`, pid, no); err != nil {
		t.Fatal(err)
	}
	if r := c.Do("GET", path, key, nil); r.Status != 409 {
		t.Errorf("document without computation: %d %s", r.Status, r.Body)
	} else if code, _ := r.ErrorCode(t); code != "export_failed" {
		t.Errorf("document without computation: code %s", code)
	}
}
