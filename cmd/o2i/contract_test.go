package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestContract drives every operation of the OpenAPI document against the
// running service, each at least once with a success and once with an
// error, with a validator of its own: every response is checked against
// the document (status, body, headers), every request before it is sent
// (a request the service accepts but the document types differently
// fails), and at the end each operation must have answered both. An
// operation added to the document without a case here fails the test.
func TestContract(t *testing.T) {
	t.Parallel()
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	v, err := apitest.New(doc)
	if err != nil {
		t.Fatal(err)
	}
	c := &apitest.Client{T: t, BaseURL: baseURL, V: v}
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false) // live: the archive and the tax reports list its documents
	const secret = "whsec_contract"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	auditor := testenv.Key(t, pool, pid, "archive:read")
	sfx := uuid.NewString()[:8]
	orderA, orderB, product := "CT-A-"+sfx, "CT-B-"+sfx, "course-"+sfx
	unknown := "CT-NONE-" + sfx

	want := func(r apitest.Response, status int, code string) {
		t.Helper()
		if r.Status != status {
			t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
		}
		if code != "" {
			if got, _ := r.ErrorCode(t); got != code {
				t.Errorf("code %q, want %q", got, code)
			}
		}
	}
	// notText is a query value that is no UTF-8 text: 400 on every route.
	const notText = "?q=%FF"

	// The public system routes.
	for _, p := range []string{"/api/health", "/v1", "/v1/openapi.json"} {
		want(c.Do("GET", p, "", nil), 200, "")
		want(c.Do("GET", p+notText, "", nil), 400, "invalid_request")
	}

	// Orders: created, replayed, refused; a product line and a goods order.
	bodyA := []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"items":[{"name":"Kurs","productId":%q,"quantity":1,"unitNetCents":10000,"taxRate":19}]}`, orderA, orderA, product))
	created := c.Do("POST", "/v1/orders", key, bodyA, "Idempotency-Key", orderA)
	want(created, 201, "")
	if h := created.Header.Get("Idempotent-Replayed"); h != "" {
		t.Errorf("a new order answered with Idempotent-Replayed %q", h)
	}
	replay := c.Do("POST", "/v1/orders", key, bodyA, "Idempotency-Key", orderA)
	want(replay, 200, "")
	if h := replay.Header.Get("Idempotent-Replayed"); h != "true" {
		t.Errorf("replayed order: Idempotent-Replayed %q, want true", h)
	}
	want(c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"billingAddress":{"country_code":"DE"}}`, unknown)),
		"Idempotency-Key", unknown), 422, "validation_failed")
	want(c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"requiresShipping":true,
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Tee","quantity":2,"unitNetCents":1000,"taxRate":7}]}`, orderB)), "Idempotency-Key", orderB), 201, "")
	// A method the path does not serve: 405 with Allow (checked by the validator).
	want(c.Do("DELETE", "/v1/orders", key, nil), 405, "method_not_allowed")

	// The order status: ETag on 200 and 304.
	var etag string
	testenv.Eventually(t, 30*time.Second, "order "+orderA+" readable", func() bool {
		r := c.Do("GET", "/v1/orders/"+orderA, key, nil)
		etag = r.Header.Get("ETag")
		return r.Status == 200
	})
	notModified := c.Do("GET", "/v1/orders/"+orderA, key, nil, "If-None-Match", etag)
	if notModified.Status != 304 && notModified.Status != 200 { // 200: the order changed meanwhile
		t.Errorf("If-None-Match: %d", notModified.Status)
	}
	want(c.Do("GET", "/v1/orders/"+unknown, key, nil), 404, "order_not_found")

	// Products: configured with a deferral, then with null; listed.
	want(c.Do("PUT", "/v1/products/"+product, key, []byte(`{"revenueRecognition":{"periodMonths":12}}`)), 200, "")
	want(c.Do("PUT", "/v1/products/"+product, key, []byte(`{"revenueRecognition":null}`)), 200, "")
	want(c.Do("PUT", "/v1/products/"+unknown, key, []byte(`{"revenueRecognition":null}`)), 404, "product_not_found")
	want(c.Do("GET", "/v1/products?limit=10", key, nil), 200, "")
	want(c.Do("GET", "/v1/products?cursor=garbage", key, nil), 422, "validation_failed")

	// The payment provider's webhook: a whole event as Stripe sends it (more
	// members than the service reads, nulls, an expanded charge) pays order
	// A; a payment of no order opens a task; a wrong signature is refused.
	event := func(id, paymentRef string) []byte {
		return []byte(fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,"livemode":false,
			"type":"payment_intent.succeeded","pending_webhooks":1,"request":{"id":null,"idempotency_key":null},
			"data":{"object":{"id":"pi_%s","object":"payment_intent","amount":11900,"amount_received":11900,"currency":"eur",
				"status":"succeeded","metadata":{},"next_action":null,"payment_method_types":["card"],
				"latest_charge":{"id":"ch_%s","object":"charge","billing_details":{"name":"Max Muster","email":null},
					"payment_method_details":{"type":"card","card":{"brand":"visa","funding":"credit","last4":"4242","exp_year":2030}}}}}}`,
			id, time.Now().Unix(), paymentRef, paymentRef))
	}
	hook := func(body []byte, sig string) apitest.Response {
		return c.Do("POST", "/v1/webhooks/stripe/"+pid, "", body, "Stripe-Signature", sig)
	}
	paid := event("evt_a_"+sfx, orderA)
	r := hook(paid, testenv.StripeSignature(secret, paid, time.Now()))
	want(r, 200, "")
	if d := r.JSON(t)["data"].(map[string]any); d["applied"] != true || d["orderNo"] != orderA {
		t.Errorf("payment of %s: %v", orderA, d)
	}
	stray := event("evt_s_"+sfx, "none-"+sfx)
	want(hook(stray, testenv.StripeSignature(secret, stray, time.Now())), 200, "")
	want(hook(paid, testenv.StripeSignature("whsec_wrong", paid, time.Now())), 400, "invalid_signature")

	// Fulfillment and cancellation of order B, each replayed.
	fulfil := []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled","shippedAt":"2026-11-20T10:00:00Z","trackingNumber":"T1"}`, orderB))
	want(c.Do("POST", "/v1/fulfillments", key, fulfil, "Idempotency-Key", "ful-"+orderB), 200, "")
	if h := c.Do("POST", "/v1/fulfillments", key, fulfil, "Idempotency-Key", "ful-"+orderB).Header.Get("Idempotent-Replayed"); h != "true" {
		t.Errorf("replayed fulfillment: Idempotent-Replayed %q", h)
	}
	want(c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q}`, unknown)), "Idempotency-Key", "ful-"+unknown), 404, "order_not_found")
	want(c.Do("POST", "/v1/orders/"+orderB+"/cancel", key, nil, "Idempotency-Key", "cancel-"+orderB), 200, "")
	if h := c.Do("POST", "/v1/orders/"+orderB+"/cancel", key, nil, "Idempotency-Key", "cancel-"+orderB).Header.Get("Idempotent-Replayed"); h != "true" {
		t.Errorf("replayed cancellation: Idempotent-Replayed %q", h)
	}
	want(c.Do("POST", "/v1/orders/"+unknown+"/cancel", key, nil, "Idempotency-Key", "cancel-"+unknown), 404, "order_not_found")

	// Store credit.
	email := "kunde-" + sfx + "@example.com"
	want(c.Do("POST", "/v1/credit-transactions", key, []byte(fmt.Sprintf(
		`{"transactions":[{"id":"ct-%s","type":"earn","email":%q,"amount_cents":500,"occurred_at":"2026-11-01T10:00:00Z"}]}`, sfx, email))), 200, "")
	want(c.Do("POST", "/v1/credit-transactions", key, []byte(fmt.Sprintf(
		`{"transactions":[{"id":"ct-%s","type":"gift","email":%q,"amount_cents":500,"occurred_at":"2026-11-01T10:00:00Z"}]}`, sfx, email))), 422, "validation_failed")
	want(c.Do("PUT", "/v1/credit-balances", key, []byte(fmt.Sprintf(`{"balances":[{"email":%q,"balance_cents":500}]}`, email))), 200, "")
	want(c.Do("PUT", "/v1/credit-balances", key, []byte(fmt.Sprintf(`{"balances":[{"email":%q,"balance_cents":"500"}]}`, email))), 422, "validation_failed")

	// The invoice of order A: metadata with ETag and 304, PDF, XML.
	number := archivedNumber(t, c, key, orderA)
	inv := c.Do("GET", "/v1/invoices/"+number, key, nil)
	want(inv, 200, "")
	issue, _ := inv.JSON(t)["data"].(map[string]any)["issueDate"].(string)
	issued, err := time.Parse(time.DateOnly, issue)
	if err != nil {
		t.Fatalf("issueDate %q: %v", issue, err)
	}
	if r := c.Do("GET", "/v1/invoices/"+number, key, nil, "If-None-Match", inv.Header.Get("ETag")); r.Status != 304 && r.Status != 200 {
		t.Errorf("invoice If-None-Match: %d", r.Status)
	}
	want(c.Do("GET", "/v1/invoices/"+unknown, key, nil), 404, "invoice_not_found")
	for _, kind := range []string{"pdf", "xml"} {
		r := c.Do("GET", "/v1/invoices/"+number+"/"+kind, key, nil)
		want(r, 200, "")
		if cd := r.Header.Get("Content-Disposition"); !strings.Contains(cd, number) {
			t.Errorf("%s: Content-Disposition %q names no %s", kind, cd, number)
		}
		want(c.Do("GET", "/v1/invoices/"+unknown+"/"+kind, key, nil), 404, "invoice_not_found")
	}
	want(c.Do("GET", "/v1/invoices?orderNo="+orderA+"&status=", key, nil), 200, "")
	want(c.Do("GET", "/v1/invoices?limit=0", key, nil), 422, "validation_failed")

	// The auditor's archive.
	year := fmt.Sprint(issued.Year())
	want(c.Do("GET", "/v1/archive?year="+year, auditor, nil), 200, "")
	want(c.Do("GET", "/v1/archive", auditor, nil), 422, "validation_failed")
	want(c.Do("GET", "/v1/archive/export?year="+year, auditor, nil), 200, "")
	want(c.Do("GET", "/v1/archive/export?year=19", auditor, nil), 422, "validation_failed")

	// Accounting exports and reports.
	want(c.Do("GET", "/v1/exports/datev?from="+year+"-01-01&to="+year+"-12-31", key, nil), 200, "")
	want(c.Do("GET", "/v1/exports/datev?from="+year+"-01-01", key, nil), 422, "validation_failed")
	quarter := fmt.Sprintf("%s-Q%d", year, (int(issued.Month())+2)/3)
	want(c.Do("GET", "/v1/reports/oss?quarter="+quarter, key, nil), 200, "")
	want(c.Do("GET", "/v1/reports/oss?quarter=Q1", key, nil), 422, "validation_failed")
	want(c.Do("GET", "/v1/reports/ecsl?period="+issued.Format("2006-01"), key, nil), 200, "")
	want(c.Do("GET", "/v1/reports/ecsl?period=13", key, nil), 422, "validation_failed")

	// Review tasks: the payment without an order.
	var taskID string
	testenv.Eventually(t, 10*time.Second, "the payment_without_order task listed", func() bool {
		r := c.Do("GET", "/v1/tasks?type=payment_without_order&status=open", key, nil)
		want(r, 200, "")
		tasks, _ := r.JSON(t)["data"].([]any)
		if len(tasks) == 0 {
			return false
		}
		taskID, _ = tasks[0].(map[string]any)["id"].(string)
		return true
	})
	want(c.Do("GET", "/v1/tasks/"+taskID, key, nil), 200, "")
	want(c.Do("GET", "/v1/tasks/"+uuid.NewString(), key, nil), 404, "task_not_found")
	// An open task holding nothing: no recheck; dismissed (twice: the same
	// answer); a resolved task's recheck has nothing to do.
	want(c.Do("POST", "/v1/tasks/"+taskID+"/recheck", key, nil), 409, "task_not_a_hold")
	want(c.Do("POST", "/v1/tasks/"+taskID+"/dismiss", key, nil), 200, "")
	want(c.Do("POST", "/v1/tasks/"+taskID+"/dismiss", key, nil), 200, "")
	want(c.Do("POST", "/v1/tasks/"+taskID+"/recheck", key, nil), 200, "")
	want(c.Do("POST", "/v1/tasks/"+uuid.NewString()+"/dismiss", key, nil), 404, "task_not_found")
	want(c.Do("GET", "/v1/tasks?limit=101", key, nil), 422, "validation_failed")

	// The request log, by any integration key; an auditor's key is told
	// which scopes the route accepts.
	id := created.Header.Get("X-Request-Id")
	testenv.Eventually(t, 10*time.Second, "request "+id+" recorded", func() bool {
		return c.Do("GET", "/v1/requests/"+id, key, nil).Status == 200
	})
	want(c.Do("GET", "/v1/requests/"+uuid.NewString(), key, nil), 404, "request_not_found")
	r = c.Do("GET", "/v1/requests/"+id, auditor, nil)
	want(r, 403, "forbidden")
	if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "orders:write or invoices:read") {
		t.Errorf("403 message %q does not name the accepted scopes", msg)
	}

	for _, u := range v.Uncovered() {
		t.Errorf("contract: %s", u)
	}
	if t.Failed() {
		for _, op := range v.Operations() {
			t.Logf("%s answered %v", op, v.Statuses(op))
		}
	}
}
