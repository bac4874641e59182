package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// The provider_transfer rows of the spec's state table, end to end: the
// service (run()) talks to the local stack's payment provider (stripe-mock
// behind the devstack fake, O2I_STRIPE_API_BASE) with stripe-go.

// fakeProvider calls a test control of the provider fake.
func fakeProvider(t *testing.T, path string, form url.Values) []byte {
	t.Helper()
	base := testenv.Env("O2I_STRIPE_API_BASE")
	var resp *http.Response
	var err error
	if form == nil {
		resp, err = http.Get(base + path)
	} else {
		resp, err = http.PostForm(base+path, form)
	}
	if err != nil {
		t.Fatalf("the payment provider fake of the local stack is required: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 300 {
		t.Fatalf("fake %s: %d %s", path, resp.StatusCode, raw)
	}
	return raw
}

type transferRow struct {
	customer, intent, iban, reference string
	amount                            int64
}

// transferOf waits for the order's bank-transfer order.
func transferOf(t *testing.T, pool *pgxpool.Pool, projectID, orderNo string) transferRow {
	t.Helper()
	var r transferRow
	testenv.Eventually(t, 60*time.Second, "the payment order of "+orderNo, func() bool {
		err := pool.QueryRow(context.Background(), `SELECT customer_id, payment_intent_id, iban, reference, amount_cents FROM provider_transfers
			WHERE project_id = $1 AND order_no = $2`, projectID, orderNo).Scan(&r.customer, &r.intent, &r.iban, &r.reference, &r.amount)
		return err == nil
	})
	return r
}

// intentsAt lists the payment intents the provider holds for a customer.
func intentsAt(t *testing.T, customer string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(fakeProvider(t, "/_fake/payment_intents?customer="+url.QueryEscape(customer), nil), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func transferOrder(orderNo, email string, goods bool) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"email":%q,"paymentGateway":"provider_transfer","requiresShipping":%t,
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Beratung","quantity":1,"unitNetCents":10000,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"}}`, orderNo, email, goods))
}

func transferProject(t *testing.T, pool *pgxpool.Pool, live bool, apiKey, secret string) string {
	t.Helper()
	pid := testenv.Project(t, pool, !live)
	if _, err := project.Apply(context.Background(), pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.StripeAPIKey, s.StripeWebhookSecret = apiKey, secret
	}}); err != nil {
		t.Fatal(err)
	}
	return pid
}

func orderStatus(t *testing.T, c *apitest.Client, key, orderNo string) map[string]any {
	t.Helper()
	return waitStatus(t, c, key, orderNo, func(map[string]any) bool { return true })
}

// TestProviderTransferServiceAndPayment: a service order is invoiced at once
// with the provider's bank-transfer order: payment means 58, the virtual
// IBAN (BT-84) and the provider's reference (BT-83) of a PaymentIntent for
// exactly the gross, passing the official validator; the payment is open
// until the transfer arrives for that payment intent, then paid (and a
// full refund of it cancels the order). A transfer of the wrong amount opens
// payment_amount_mismatch.
func TestProviderTransferServiceAndPayment(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	secret := "whsec_" + suffix
	pid := transferProject(t, pool, false, "sk_test_"+suffix, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)

	orderNo := "PT-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(orderNo, "kunde-"+suffix+"@example.com", false), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	docs := documents(t, c, key, orderNo, "invoiced", 1)
	tr := transferOf(t, pool, pid, orderNo)
	if tr.amount != 11900 || !strings.HasPrefix(tr.iban, "DE") || tr.reference == "" {
		t.Errorf("payment order %+v", tr)
	}
	if pis := intentsAt(t, tr.customer); len(pis) != 1 || pis[0]["id"] != tr.intent || pis[0]["amount"] != float64(11900) || pis[0]["reference"] != tr.reference {
		t.Errorf("payment intents at the provider %v, want one: %+v", pis, tr)
	}
	xml := c.Do("GET", "/v1/invoices/"+docs[0]["id"].(string)+"/xml", key, nil)
	for _, want := range []string{"<ram:TypeCode>58</ram:TypeCode>", "<ram:IBANID>" + tr.iban + "</ram:IBANID>",
		"<ram:PaymentReference>" + tr.reference + "</ram:PaymentReference>"} {
		if !strings.Contains(string(xml.Body), want) {
			t.Errorf("invoice XML lacks %s", want)
		}
	}
	file := filepath.Join(t.TempDir(), "transfer.xml")
	if err := os.WriteFile(file, xml.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	judgeFiles(t, file)
	if p := orderStatus(t, c, key, orderNo)["payment"]; p != "open" {
		t.Errorf("payment %v, want open", p)
	}
	stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":11900,"amount_received":11900,"currency":"eur"}`, tr.intent))
	waitStatus(t, c, key, orderNo, func(d map[string]any) bool { return d["payment"] == "paid" })
	// A refund of the transfer is matched by the payment intent too: refunded in full, the order is cancelled.
	stripeEvent(t, pid, secret, "charge.refunded", fmt.Sprintf(`{"id":"ch_%s","object":"charge","payment_intent":%q,"amount":11900,"amount_refunded":11900,"refunded":true,"currency":"eur"}`, suffix, tr.intent))
	documents(t, c, key, orderNo, "cancelled", 2)

	wrong := "PTW-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(wrong, "kunde2-"+suffix+"@example.com", false), "Idempotency-Key", wrong); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, wrong, "invoiced", 1)
	wtr := transferOf(t, pool, pid, wrong)
	stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":11900,"amount_received":11899,"currency":"eur"}`, wtr.intent))
	taskState(t, pool, pid, "payment_amount_mismatch", wrong, "open")

	// A transfer short of the amount: Stripe reports payment_intent.partially_funded.
	short := "PTS-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(short, "kunde4-"+suffix+"@example.com", false), "Idempotency-Key", short); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, short, "invoiced", 1)
	str := transferOf(t, pool, pid, short)
	if d := stripeEvent(t, pid, secret, "payment_intent.partially_funded", fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":11900,"amount_received":0,"currency":"eur",
		"next_action":{"type":"display_bank_transfer_instructions","display_bank_transfer_instructions":{"amount_remaining":900}}}`, str.intent)); d["orderNo"] != short {
		t.Errorf("partially_funded: %v", d)
	}
	taskState(t, pool, pid, "payment_amount_mismatch", short, "open")
	var paid float64
	if err := pool.QueryRow(context.Background(), `SELECT (details->>'paidCents')::float8 FROM tasks WHERE project_id = $1 AND subject = $2 AND kind = 'payment_amount_mismatch'`,
		pid, short).Scan(&paid); err != nil || paid != 11000 {
		t.Errorf("task paidCents %v (%v), want 11000", paid, err)
	}
	if p := orderStatus(t, c, key, short)["payment"]; p != "open" {
		t.Errorf("payment %v after a short transfer, want open", p)
	}
}

// TestProviderTransferGoodsAndCancellation: goods are invoiced at the
// shipping report (no payment order before it); a payment order cancelled at
// the provider before payment cancels the order, its invoice gets a
// cancellation.
func TestProviderTransferGoodsAndCancellation(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	secret := "whsec_" + suffix
	pid := transferProject(t, pool, false, "sk_test_"+suffix, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)

	goods := "PTG-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(goods, "kunde-"+suffix+"@example.com", true), "Idempotency-Key", goods); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	if d := waitStatus(t, c, key, goods, func(d map[string]any) bool { return d["waitingFor"] == "fulfillment" }); len(d["invoices"].([]any)) != 0 {
		t.Fatalf("goods invoiced before the shipping report: %v", d)
	}
	if r := c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled","shippedAt":"2026-11-20T10:00:00Z"}`, goods)), "Idempotency-Key", goods+"-f"); r.Status != http.StatusOK {
		t.Fatalf("fulfillment: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, goods, "invoiced", 1)
	transferOf(t, pool, pid, goods)

	cancelled := "PTC-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(cancelled, "kunde3-"+suffix+"@example.com", false), "Idempotency-Key", cancelled); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, cancelled, "invoiced", 1)
	tr := transferOf(t, pool, pid, cancelled)
	if d := stripeEvent(t, pid, secret, "payment_intent.canceled", fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":11900,"currency":"eur"}`, tr.intent)); d["applied"] != true || d["orderNo"] != cancelled {
		t.Errorf("payment_intent.canceled: %v", d)
	}
	docs := documents(t, c, key, cancelled, "cancelled", 2)
	if docs[1]["type"] != "cancellation" {
		t.Errorf("documents %v, want the invoice and its cancellation", docs)
	}
}

// TestProviderTransferMissingRights: a restricted key without write rights:
// no invoice, an urgent provider_rights_missing task mailed to the invoice
// contact; once the key has the rights, the reconciler invoices the order
// without anyone pushing it again.
func TestProviderTransferMissingRights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	apiKey := "rk_test_" + suffix
	pid := transferProject(t, pool, true, apiKey, "whsec_"+suffix)
	contact := "kontakt-" + suffix + "@example.com"
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) { s.ContactEmail = contact }}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	orderNo := "PTR-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(orderNo, "kunde-"+suffix+"@example.com", false), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	taskState(t, pool, pid, "provider_rights_missing", orderNo, "open")
	if n := numbersOf(t, pool, pid, orderNo); n != 0 {
		t.Errorf("%d documents without the provider's payment order", n)
	}
	waitStatus(t, c, key, orderNo, func(d map[string]any) bool {
		hs := d["holds"].([]any)
		return len(hs) == 1 && hs[0].(map[string]any)["type"] == "provider_rights_missing"
	})
	var mails []testenv.Mail
	testenv.Eventually(t, 30*time.Second, "the urgent notice to the invoice contact", func() bool { mails = testenv.Mails(t, contact); return len(mails) > 0 })
	if !strings.Contains(mails[0].Subject, "provider_rights_missing") || !strings.Contains(mails[0].Text, orderNo) {
		t.Errorf("notice %q %q", mails[0].Subject, mails[0].Text)
	}

	fakeProvider(t, "/_fake/grant", url.Values{"key": {apiKey}})
	docs := documents(t, c, key, orderNo, "invoiced", 1) // the reconciler's next round (15 s)
	if !strings.HasPrefix(docs[0]["number"].(string), "RE-") {
		t.Errorf("document %v", docs[0])
	}
	if res := taskState(t, pool, pid, "provider_rights_missing", orderNo, "resolved"); !strings.Contains(res, "invoiced") {
		t.Errorf("resolution %q", res)
	}
}

// TestProviderTransferOutageMidFlow: the provider carries out the payment
// intent but the answer is lost (500): the invoicer tries again with the
// same Idempotency-Key and gets the same payment intent, so the order has
// exactly one payment order and one invoice.
func TestProviderTransferOutageMidFlow(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	apiKey := "sk_test_" + suffix
	pid := transferProject(t, pool, false, apiKey, "whsec_"+suffix)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	fakeProvider(t, "/_fake/fail", url.Values{"key": {apiKey}, "path": {"/v1/payment_intents"}, "times": {"2"}})
	fakeProvider(t, "/_fake/fail", url.Values{"key": {apiKey}, "path": {"/v1/customers"}, "times": {"1"}})
	orderNo := "PTO-" + suffix
	if r := c.Do("POST", "/v1/orders", key, transferOrder(orderNo, "kunde-"+suffix+"@example.com", false), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, orderNo, "invoiced", 1)
	// Every ordered failure happened.
	if left := fakeProvider(t, "/_fake/failures?key="+apiKey, nil); !strings.Contains(string(left), `"left":0`) {
		t.Errorf("failures not yet met: %s", left)
	}
	tr := transferOf(t, pool, pid, orderNo)
	if pis := intentsAt(t, tr.customer); len(pis) != 1 || pis[0]["id"] != tr.intent {
		t.Errorf("payment intents at the provider %v, want exactly %s", pis, tr.intent)
	}
	var customers struct{ Data []any }
	req, _ := http.NewRequest("GET", testenv.Env("O2I_STRIPE_API_BASE")+"/v1/customers?email="+url.QueryEscape("kunde-"+suffix+"@example.com"), nil)
	req.SetBasicAuth(apiKey, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&customers); err != nil || len(customers.Data) != 1 {
		t.Errorf("customers at the provider %v (%v), want one", customers.Data, err)
	}
}

// TestProviderTransferNeedsEmail: the door refuses a provider_transfer order
// without e-mail, naming the field.
func TestProviderTransferNeedsEmail(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	body := strings.Replace(string(transferOrder("PTE-"+uuid.NewString()[:8], "x@example.com", false)), `"email":"x@example.com",`, "", 1)
	r := client(t).Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", uuid.NewString())
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), `"field":"email"`) {
		t.Errorf("provider_transfer without email: %d %s", r.Status, r.Body)
	}
}

// TestProviderTransferCorrection: a correction that changes the amount of an
// invoiced provider_transfer order cancels the invoice, replaces the payment
// order (a new PaymentIntent for the new gross, the old one cancelled at the
// provider) and issues the new invoice with the new reference; the old
// payment intent's cancellation cancels nothing.
func TestProviderTransferCorrection(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	secret := "whsec_" + suffix
	pid := transferProject(t, pool, false, "sk_test_"+suffix, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	orderNo, email := "PTK-"+suffix, "kunde-"+suffix+"@example.com"
	if r := c.Do("POST", "/v1/orders", key, transferOrder(orderNo, email, false), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, orderNo, "invoiced", 1)
	first := transferOf(t, pool, pid, orderNo)
	changed := strings.Replace(string(transferOrder(orderNo, email, false)), `"quantity":1`, `"quantity":2`, 1)
	if r := c.Do("POST", "/v1/orders", key, []byte(changed), "Idempotency-Key", orderNo+"-2"); r.Status != http.StatusOK {
		t.Fatalf("correction: %d %s", r.Status, r.Body)
	}
	docs := documents(t, c, key, orderNo, "invoiced", 3)
	if docs[1]["type"] != "cancellation" || docs[2]["type"] != "invoice" {
		t.Errorf("documents %v", docs)
	}
	second := transferOf(t, pool, pid, orderNo)
	if second.intent == first.intent || second.amount != 23800 || second.reference == first.reference {
		t.Errorf("payment order after the correction %+v, before %+v", second, first)
	}
	pis := intentsAt(t, first.customer)
	status := map[any]any{}
	for _, pi := range pis {
		status[pi["id"]] = pi["status"]
	}
	if len(pis) != 2 || status[first.intent] != "canceled" || status[second.intent] != "requires_action" {
		t.Errorf("payment intents at the provider %v", pis)
	}
	xml := c.Do("GET", "/v1/invoices/"+docs[2]["id"].(string)+"/xml", key, nil)
	if !strings.Contains(string(xml.Body), "<ram:PaymentReference>"+second.reference+"</ram:PaymentReference>") {
		t.Errorf("new invoice lacks the new reference %s", second.reference)
	}
	if d := stripeEvent(t, pid, secret, "payment_intent.canceled", fmt.Sprintf(`{"id":%q,"object":"payment_intent","amount":11900,"currency":"eur"}`, first.intent)); d["applied"] != false {
		t.Errorf("the replaced payment intent's cancellation: %v", d)
	}
	if s := orderStatus(t, c, key, orderNo)["status"]; s != "invoiced" {
		t.Errorf("order %v after the old payment intent's cancellation", s)
	}
}

// TestProviderTransferLiveMail: in live mode the bank-transfer invoice is
// mailed to the customer with the IBAN and the reference in the text.
func TestProviderTransferLiveMail(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	pid := transferProject(t, pool, true, "sk_test_"+suffix, "whsec_"+suffix)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	orderNo, to := "PTM-"+suffix, "kunde-"+suffix+"@example.com"
	if r := c.Do("POST", "/v1/orders", key, transferOrder(orderNo, to, false), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	tr := transferOf(t, pool, pid, orderNo)
	var mails []testenv.Mail
	testenv.Eventually(t, 60*time.Second, "the invoice e-mail", func() bool { mails = testenv.Mails(t, to); return len(mails) > 0 })
	if text := mails[0].Text; !strings.Contains(text, tr.iban) || !strings.Contains(text, tr.reference) || !strings.Contains(text, "119,00 EUR") {
		t.Errorf("text without the payment instructions %s / %s:\n%s", tr.iban, tr.reference, text)
	}
}

// TestProviderTransferWithoutKey: a project without a stored provider key
// cannot create the payment order: the order is held like one with a key
// lacking the rights.
func TestProviderTransferWithoutKey(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	suffix := uuid.NewString()[:8]
	pid := transferProject(t, pool, false, "", "whsec_"+suffix)
	key := testenv.Key(t, pool, pid)
	orderNo := "PTN-" + suffix
	if r := client(t).Do("POST", "/v1/orders", key, transferOrder(orderNo, "kunde-"+suffix+"@example.com", false), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	taskState(t, pool, pid, "provider_rights_missing", orderNo, "open")
	if n := numbersOf(t, pool, pid, orderNo); n != 0 {
		t.Errorf("%d documents without a payment order", n)
	}
}
