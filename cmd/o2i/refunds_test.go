package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// stripeEvent posts a signed provider event and returns its data.
func stripeEvent(t *testing.T, projectID, secret, typ, object string) map[string]any {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","type":%q,"data":{"object":%s}}`, uuid.NewString()[:12], typ, object))
	r := client(t).Do("POST", "/v1/webhooks/stripe/"+projectID, "", body, "Stripe-Signature", testenv.StripeSignature(secret, body, time.Now()))
	if r.Status != 200 {
		t.Fatalf("webhook %s: %d %s", typ, r.Status, r.Body)
	}
	return r.JSON(t)["data"].(map[string]any)
}

// withWebhookSecret sets the project's Stripe webhook signing secret, so
// that stripeEvent's deliveries to it verify.
func withWebhookSecret(t *testing.T, pool *pgxpool.Pool, projectID, secret string) {
	t.Helper()
	if _, err := project.Apply(context.Background(), pool, projectID, project.Update{Settings: func(s *project.Settings) { s.StripeWebhookSecret = secret }}); err != nil {
		t.Fatal(err)
	}
}

// TestRefunds: the provider's charge.refunded events. A partial refund gets
// a credit note (381, Rechnungskorrektur) over the newly refunded gross; a
// later one another; a repeated report nothing; the whole charge refunded at
// once cancels the order (a cancellation of its invoice); a refund without
// an order is a task. Every document passes the official rules.
func TestRefunds(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_refund_test"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	partial, full := "REF-P-"+suffix, "REF-F-"+suffix
	for _, no := range []string{partial, full} {
		// Two rates: 100.00 at 19 % and 50.00 at 7 %, 172.50 in all.
		if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
			"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
			"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
			"items":[{"name":"Kurs","quantity":1,"unitNetCents":10000,"taxRate":19},{"name":"Skript","quantity":1,"unitNetCents":5000,"taxRate":7}]}`,
			no, no)), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", no, r.Status, r.Body)
		}
		stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":"pi_%s","object":"payment_intent","amount":17250,"amount_received":17250,"currency":"eur"}`, no))
		documents(t, c, key, no, "invoiced", 1)
	}
	charge := func(no string, refunded int, all bool) map[string]any {
		return stripeEvent(t, pid, secret, "charge.refunded", fmt.Sprintf(
			`{"id":"ch_%s","object":"charge","payment_intent":"pi_%s","amount":17250,"amount_refunded":%d,"refunded":%t,"currency":"eur"}`,
			no, no, refunded, all))
	}

	// 50.00 back, then 20.00 more (amount_refunded is the running total).
	if d := charge(partial, 5000, false); d["applied"] != true || d["orderNo"] != partial {
		t.Fatalf("partial refund: %v", d)
	}
	docs := documents(t, c, key, partial, "invoiced", 2)
	if got := typesOf(docs); got != "invoice,credit_note" {
		t.Fatalf("documents %s", got)
	}
	charge(partial, 7000, false)
	if d := charge(partial, 7000, false); d["applied"] != false { // the same total again: nothing new
		t.Errorf("repeated total applied: %v", d)
	}
	docs = documents(t, c, key, partial, "invoiced", 3)
	if got := typesOf(docs); got != "invoice,credit_note,credit_note" {
		t.Fatalf("documents %s", got)
	}
	// Each note's amount is the refund to the cent (a cent no rate step
	// reaches is the rounding amount, so the gross may differ by one). The
	// provider paid it back already: BT-113 is the refund, nothing is due,
	// and the terms say when and how.
	for i, want := range []string{"50.00", "20.00"} {
		inv := c.Do("GET", "/v1/invoices/"+docs[i+1]["id"].(string), key, nil).JSON(t)["data"].(map[string]any)
		x := c.Do("GET", "/v1/invoices/"+docs[i+1]["id"].(string)+"/xml", key, nil)
		flat := strings.Join(strings.Fields(string(x.Body)), "")
		if inv["type"] != "credit_note" || !strings.Contains(flat, "<ram:TotalPrepaidAmount>"+want+"</ram:TotalPrepaidAmount>") ||
			!strings.Contains(flat, "<ram:DuePayableAmount>0.00</ram:DuePayableAmount>") ||
			!strings.Contains(flat, "Erstattetam") || !strings.Contains(flat, "(pi_"+partial+")") {
			t.Errorf("credit note %d: %v, want %s refunded, nothing due:\n%s", i+1, inv, want, x.Body)
		}
	}
	x := c.Do("GET", "/v1/invoices/"+docs[1]["id"].(string)+"/xml", key, nil)
	flat := strings.Join(strings.Fields(string(x.Body)), "")
	if !strings.Contains(flat, "<ram:TypeCode>381</ram:TypeCode>") || !strings.Contains(flat, "<ram:InvoiceReferencedDocument><ram:IssuerAssignedID>"+docs[0]["number"].(string)) ||
		!strings.Contains(flat, "Rechnungskorrektur") || strings.Contains(flat, "Gutschrift") {
		t.Errorf("credit note XML:\n%s", x.Body)
	}
	refereeFiles(t, c, key, docs[1:])

	// The whole charge refunded at once: the order is cancelled.
	if d := charge(full, 17250, true); d["applied"] != true {
		t.Fatalf("full refund: %v", d)
	}
	docs = documents(t, c, key, full, "cancelled", 2)
	if got := typesOf(docs); got != "invoice,cancellation" {
		t.Fatalf("documents after the full refund: %s", got)
	}

	// A refund of a payment no order has.
	stray := "pi_stray_" + suffix
	if d := stripeEvent(t, pid, secret, "charge.refunded", fmt.Sprintf(`{"id":"ch_x%s","object":"charge","payment_intent":%q,"amount":100,"amount_refunded":100,"refunded":true,"currency":"eur"}`, suffix, stray)); d["orderNo"] != nil {
		t.Errorf("stray refund matched %v", d)
	}
	taskState(t, pool, pid, "refund_without_order", stray, "open")
}

// TestOpenItems: an invoice-first order's invoice is an open item with the
// project's payment term (BT-9 due date, BT-20 terms); a provider payment
// of that amount closes it, another amount opens a payment_amount_mismatch
// task.
func TestOpenItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_open_items"
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.StripeWebhookSecret, s.InvoiceFirstGateways, s.PaymentTermDays = secret, []string{"invoice"}, 30
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	exact, short := "OI-E-"+suffix, "OI-S-"+suffix
	for _, no := range []string{exact, short} {
		if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"invoice",
			"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
			"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
			"items":[{"name":"Beratung","quantity":1,"unitNetCents":10000,"taxRate":19}]}`, no, no)), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", no, r.Status, r.Body)
		}
	}
	docs := documents(t, c, key, exact, "invoiced", 1)
	documents(t, c, key, short, "invoiced", 1)
	if d := waitStatus(t, c, key, exact, func(map[string]any) bool { return true }); d["payment"] != "open" {
		t.Errorf("invoice-first order before its payment: payment %v, want open", d["payment"])
	}
	x := c.Do("GET", "/v1/invoices/"+docs[0]["id"].(string)+"/xml", key, nil)
	var issue time.Time
	if err := pool.QueryRow(ctx, `SELECT issue_date FROM invoices WHERE id = $1`, docs[0]["id"]).Scan(&issue); err != nil {
		t.Fatal(err)
	}
	due := issue.AddDate(0, 0, 30)
	flat := strings.Join(strings.Fields(string(x.Body)), " ")
	if !strings.Contains(flat, `<ram:DueDateDateTime> <udt:DateTimeString format="102">`+due.Format("20060102")+`</udt:DateTimeString>`) ||
		!strings.Contains(flat, "Zahlbar innerhalb von 30 Tagen ohne Abzug bis zum "+due.Format("02.01.2006")) {
		t.Errorf("open item without due date %s:\n%s", due.Format("2006-01-02"), x.Body)
	}
	refereeFiles(t, c, key, docs)

	stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":"pi_%s","object":"payment_intent","amount":11900,"amount_received":11900,"currency":"eur"}`, exact))
	stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":"pi_%s","object":"payment_intent","amount":11000,"amount_received":11000,"currency":"eur"}`, short))
	taskState(t, pool, pid, "payment_amount_mismatch", short, "open")
	waitStatus(t, c, key, exact, func(d map[string]any) bool { return d["payment"] == "paid" })
	var paid bool
	var mismatches int
	if err := pool.QueryRow(ctx, `SELECT paid_at IS NOT NULL, (SELECT count(*) FROM tasks WHERE project_id = $1 AND subject = $2 AND kind = 'payment_amount_mismatch')
		FROM orders WHERE project_id = $1 AND order_no = $2`, pid, exact).Scan(&paid, &mismatches); err != nil || !paid || mismatches != 0 {
		t.Errorf("exact payment: paid %v, %d mismatch tasks (%v)", paid, mismatches, err)
	}
}

// TestCancelAfterPartialRefund: an order cancelled after a partial refund
// does not credit the refunded part twice. 100.00 (59.50 at 19 %, 40.50 at
// 7 %) paid, 30.00 refunded (a credit note), then cancelled: the invoice is
// cancelled by one more credit note over the 70.00 left, per rate, linked
// as its cancellation, and the documents sum to zero. A corrected order
// with a partial refund still gets a full cancellation and a new invoice;
// an invoice its credit notes credited in full gets nothing more. Every
// document passes the official rules.
func TestCancelAfterPartialRefund(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_cancel_refund_test"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	cancelled, corrected, credited := "REF-C-"+suffix, "REF-K-"+suffix, "REF-A-"+suffix
	order := func(no, name, idem string) int {
		return c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
			"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
			"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
			"items":[{"name":%q,"quantity":1,"unitNetCents":5000,"taxRate":19},{"name":"Skript","quantity":1,"unitNetCents":3785,"taxRate":7}]}`,
			no, no, name)), "Idempotency-Key", idem).Status
	}
	for _, no := range []string{cancelled, corrected, credited} {
		if s := order(no, "Kurs", no); s != http.StatusCreated {
			t.Fatalf("order %s: %d", no, s)
		}
		stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":"pi_%s","object":"payment_intent","amount":10000,"amount_received":10000,"currency":"eur"}`, no))
		documents(t, c, key, no, "invoiced", 1)
		if d := stripeEvent(t, pid, secret, "charge.refunded", fmt.Sprintf(
			`{"id":"ch_%s","object":"charge","payment_intent":"pi_%s","amount":10000,"amount_refunded":3000,"refunded":false,"currency":"eur"}`,
			no, no)); d["applied"] != true {
			t.Fatalf("partial refund of %s: %v", no, d)
		}
		documents(t, c, key, no, "invoiced", 2)
	}
	type doc struct {
		meta map[string]any
		xml  string // without white space
	}
	fetch := func(docs []map[string]any) []doc {
		var out []doc
		for _, d := range docs {
			id := d["id"].(string)
			x := c.Do("GET", "/v1/invoices/"+id+"/xml", key, nil)
			if x.Status != 200 {
				t.Fatalf("XML of %s: %d", d["number"], x.Status)
			}
			out = append(out, doc{c.Do("GET", "/v1/invoices/"+id, key, nil).JSON(t)["data"].(map[string]any), strings.Join(strings.Fields(string(x.Body)), "")})
		}
		return out
	}

	// Cancelled: invoice 100.00, credit note 30.00, remainder 70.00.
	if r := c.Do("POST", "/v1/orders/"+cancelled+"/cancel", key, nil, "Idempotency-Key", cancelled+"-c"); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	docs := documents(t, c, key, cancelled, "cancelled", 3)
	if got := typesOf(docs); got != "invoice,credit_note,credit_note" {
		t.Fatalf("documents after the cancellation: %s", got)
	}
	all := fetch(docs)
	var gross int64
	for i, d := range all {
		g := int64(d.meta["totalGrossCents"].(float64))
		if i > 0 {
			g = -g
		}
		gross += g
	}
	if gross != 0 {
		t.Errorf("the documents sum to %d cents gross, want 0", gross)
	}
	rem, invNo, noteNo := all[2], docs[0]["number"].(string), docs[1]["number"].(string)
	// 30.00 back was 17.85 + 12.16 (12.15 at 7 % is no rate step); left are
	// 41.65 (35.00 + 6.65) and 28.34 (26.49 + 1.85), 69.99 and a cent of rounding.
	for _, want := range []string{
		"<ram:TypeCode>381</ram:TypeCode>",
		"<ram:InvoiceReferencedDocument><ram:IssuerAssignedID>" + invNo + "</ram:IssuerAssignedID>",
		"<ram:GrandTotalAmount>69.99</ram:GrandTotalAmount>",
		// Settled by offset against the invoice: nothing paid, nothing due.
		"<ram:TotalPrepaidAmount>70.00</ram:TotalPrepaidAmount><ram:DuePayableAmount>0.00</ram:DuePayableAmount>",
		"<ram:TypeCode>97</ram:TypeCode>", "VerrechnetmitRechnung" + invNo,
		"<ram:CalculatedAmount>6.65</ram:CalculatedAmount><ram:TypeCode>VAT</ram:TypeCode><ram:BasisAmount>35.00</ram:BasisAmount>",
		"<ram:CalculatedAmount>1.85</ram:CalculatedAmount><ram:TypeCode>VAT</ram:TypeCode><ram:BasisAmount>26.49</ram:BasisAmount>",
		"StornierungderRechnung" + invNo, "nachderRechnungskorrektur" + noteNo + "verbleibendeBetragvon70.00EUR",
	} {
		if !strings.Contains(rem.xml, want) {
			t.Errorf("remainder credit note lacks %s:\n%s", want, rem.xml)
		}
	}
	if strings.Contains(rem.xml, "Gutschrift") {
		t.Errorf("remainder credit note titled Gutschrift:\n%s", rem.xml)
	}
	// Linked as the invoice's cancellation.
	var cancels string
	if err := pool.QueryRow(ctx, `SELECT coalesce(cancels::text, '') FROM invoices WHERE id = $1`, docs[2]["id"]).Scan(&cancels); err != nil || cancels != docs[0]["id"] {
		t.Errorf("remainder cancels %q (%v), want the invoice %s", cancels, err, docs[0]["id"])
	}

	// Corrected: the invoice is cancelled in full and a new one issued.
	if s := order(corrected, "Kurs (Aufbau)", corrected+"-2"); s != http.StatusOK {
		t.Fatalf("correction: %d", s)
	}
	kdocs := documents(t, c, key, corrected, "invoiced", 4)
	if got := typesOf(kdocs); got != "invoice,credit_note,cancellation,invoice" {
		t.Fatalf("documents after the correction: %s", got)
	}
	k := fetch(kdocs)
	if k[2].meta["totalGrossCents"] != float64(10000) || !strings.Contains(k[2].xml, "<ram:TotalPrepaidAmount>100.00</ram:TotalPrepaidAmount>") ||
		!strings.Contains(k[2].xml, "<ram:DuePayableAmount>0.00</ram:DuePayableAmount>") || !strings.Contains(k[2].xml, "Stornorechnung") {
		t.Errorf("cancellation of the corrected order: %v\n%s", k[2].meta, k[2].xml)
	}
	// The new invoice carries the payment over: paid 100.00, refunded 30.00,
	// so 70.00 of what was paid stands against it, named in its terms.
	if !strings.Contains(k[3].xml, "<ram:TotalPrepaidAmount>70.00</ram:TotalPrepaidAmount>") ||
		!strings.Contains(k[3].xml, "vonderstorniertenRechnung"+kdocs[0]["number"].(string)+"übertragen") {
		t.Errorf("new invoice of the corrected order:\n%s", k[3].xml)
	}

	// Credited in full (30.00, then the rest: a second credit note), then
	// cancelled: no further document.
	stripeEvent(t, pid, secret, "charge.refunded", fmt.Sprintf(
		`{"id":"ch_%s","object":"charge","payment_intent":"pi_%s","amount":10000,"amount_refunded":10000,"refunded":true,"currency":"eur"}`,
		credited, credited))
	documents(t, c, key, credited, "invoiced", 3)
	if r := c.Do("POST", "/v1/orders/"+credited+"/cancel", key, nil, "Idempotency-Key", credited+"-c"); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	testenv.Eventually(t, 30*time.Second, "the correction of the credited order done", func() bool {
		var pending bool
		err := pool.QueryRow(ctx, `SELECT correction_pending FROM orders WHERE project_id = $1 AND order_no = $2`, pid, credited).Scan(&pending)
		return err == nil && !pending
	})
	adocs := documents(t, c, key, credited, "cancelled", 3)
	if got := typesOf(adocs); got != "invoice,credit_note,credit_note" {
		t.Fatalf("documents of the order credited in full: %s", got)
	}
	refereeFiles(t, c, key, append(append(docs, kdocs[2:]...), adocs[2]))
}
