package main

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// taskState waits until the project has a task of kind about orderNo in
// status and returns its resolution: the order's own task, or the shared
// task of a cause of the project or a product that holds (or held) it.
func taskState(t *testing.T, pool *pgxpool.Pool, projectID, kind, orderNo, status string) string {
	t.Helper()
	var resolution *string
	testenv.Eventually(t, 60*time.Second, kind+" task of "+orderNo+" "+status, func() bool {
		err := pool.QueryRow(context.Background(), `SELECT resolution FROM tasks t WHERE project_id = $1 AND kind = $2 AND status = $4
			AND (subject = $3 OR EXISTS (SELECT 1 FROM held_orders h WHERE h.task_id = t.id AND h.order_no = $3))
			ORDER BY created_at DESC LIMIT 1`,
			projectID, kind, orderNo, status).Scan(&resolution)
		return err == nil
	})
	if resolution == nil {
		return ""
	}
	return *resolution
}

// numbersOf reads the order's invoice numbers straight from the write model.
func numbersOf(t *testing.T, pool *pgxpool.Pool, projectID, orderNo string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM invoices WHERE project_id = $1 AND order_no = $2`, projectID, orderNo).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHoldsReleaseThemselves: orders held as a task take no invoice number
// and are invoiced once their cause clears, without the order being pushed
// again: the invoice contact's phone for XRechnung (BR-DE-6), the product's
// revenue recognition under accrual accounting (PUT /v1/products), or the
// service period sent later. Each task is then resolved with the invoice
// number.
func TestHoldsReleaseThemselves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true) // accrual accounting
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) { s.ContactPhone = "" }}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	xr, accrual, later := "XR-"+suffix, "ACC-"+suffix, "LATER-"+suffix
	product := "course-" + suffix

	post := func(orderNo, extra string, want int) {
		t.Helper()
		body := fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
			"billingAddress":{"country_code":"DE","name":"Stadt Musterstadt","street":"Rathausplatz 1","postal_code":"10115","city":"Berlin"%s},
			"items":[{"name":"Online-Kurs","productId":%q,"quantity":1,"unitNetCents":1000,"taxRate":19}],
			"creditRedemptions":[{"type":"referral_credit","amountCents":1190,"externalRef":"r-%s"}],"grossTotalCents":1190%s}`,
			orderNo, map[bool]string{true: `,"leitweg_id":"04011000-12345-03"`}[orderNo == xr], product, orderNo,
			extra)
		if r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", orderNo+extra); r.Status != want {
			t.Fatalf("order %s: %d %s", orderNo, r.Status, r.Body)
		}
	}
	const period = `,"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"}`
	post(xr, period, http.StatusCreated)
	post(accrual, "", http.StatusCreated)
	post(later, "", http.StatusCreated)

	// Held, without a number.
	taskState(t, pool, pid, "xrechnung_contact_phone_missing", xr, "open")
	taskState(t, pool, pid, "product_without_revenue_recognition", accrual, "open")
	taskState(t, pool, pid, "product_without_revenue_recognition", later, "open")
	for _, no := range []string{xr, accrual, later} {
		if n := numbersOf(t, pool, pid, no); n != 0 {
			t.Errorf("held order %s has %d invoices", no, n)
		}
	}

	// The status record names the hold and its task.
	d := waitStatus(t, c, key, xr, func(d map[string]any) bool { return len(d["holds"].([]any)) == 1 })
	h := d["holds"].([]any)[0].(map[string]any)
	if h["type"] != "xrechnung_contact_phone_missing" || d["waitingFor"] != "none" || d["status"] != "created" {
		t.Errorf("status record of the held order: %v", d)
	}
	// A cause of the project: the project's one task, holding the order.
	if r := c.Do("GET", "/v1/tasks/"+h["taskId"].(string), key, nil); r.Status != 200 ||
		r.JSON(t)["data"].(map[string]any)["heldOrderSample"].([]any)[0] != xr {
		t.Errorf("the hold's task: %d %s", r.Status, r.Body)
	}

	// Both wait for the same product: one task of the product holds both.
	var productTask string
	var heldBy int
	if err := pool.QueryRow(ctx, `SELECT min(task_id::text), count(DISTINCT task_id) FROM held_orders WHERE project_id = $1 AND order_no = ANY($2)`,
		pid, []string{accrual, later}).Scan(&productTask, &heldBy); err != nil || heldBy != 1 {
		t.Fatalf("the orders of one product are held by %d tasks (%v), want 1", heldBy, err)
	}

	// The period sent later releases that order (its own event); the
	// product's task holds the other one still.
	post(later, period, http.StatusOK)
	documents(t, c, key, later, "invoiced", 1)
	testenv.Eventually(t, 30*time.Second, "the product's task holding the other order only", func() bool {
		r := c.Do("GET", "/v1/tasks/"+productTask, key, nil)
		d, _ := r.JSON(t)["data"].(map[string]any)
		return r.Status == 200 && d["status"] == "open" && d["heldOrders"] == float64(1) && fmt.Sprint(d["heldOrderSample"]) == "["+accrual+"]"
	})

	// The phone is set: the reconciler releases the XRechnung order.
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) { s.ContactPhone = "+49 30 7654321" }}); err != nil {
		t.Fatal(err)
	}
	documents(t, c, key, xr, "invoiced", 1)
	taskState(t, pool, pid, "xrechnung_contact_phone_missing", xr, "resolved")
	if d := waitStatus(t, c, key, xr, func(map[string]any) bool { return true }); len(d["holds"].([]any)) != 0 {
		t.Errorf("holds after the release: %v", d)
	}

	// The product's revenue recognition is set through the API.
	if r := c.Do("PUT", "/v1/products/no-such-product-"+suffix, key, []byte(`{"revenueRecognition":null}`)); r.Status != 404 ||
		r.JSON(t)["error"].(map[string]any)["code"] != "product_not_found" {
		t.Errorf("unknown product: %d %s", r.Status, r.Body)
	}
	for _, bad := range []struct{ body, field string }{
		{`{}`, "revenueRecognition"},
		{`{"revenueRecognition":{"periodMonths":0}}`, "revenueRecognition.periodMonths"},
		{`{"revenueRecognition":{"periodMonths":121}}`, "revenueRecognition.periodMonths"},
		{`{"revenueRecognition":"saas"}`, "revenueRecognition"},
	} {
		r := c.Do("PUT", "/v1/products/"+product, key, []byte(bad.body))
		if e, _ := r.JSON(t)["error"].(map[string]any); r.Status != 422 || e["field"] != bad.field {
			t.Errorf("PUT %s: %d %s, want 422 with field %s", bad.body, r.Status, r.Body, bad.field)
		}
	}
	r := c.Do("PUT", "/v1/products/"+product, key, []byte(`{"revenueRecognition":{"periodMonths":12}}`))
	data, _ := r.JSON(t)["data"].(map[string]any)
	if rr, _ := data["revenueRecognition"].(map[string]any); r.Status != 200 || data["productId"] != product || rr["mode"] != "saas" || rr["periodMonths"] != float64(12) {
		t.Fatalf("PUT product: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, accrual, "invoiced", 1)
	if r := taskState(t, pool, pid, "product_without_revenue_recognition", accrual, "resolved"); r == "" {
		t.Error("the resolved task has no resolution")
	}

	// The same setting from the admin CLI.
	out, err := runCmd(t, "product", "set", "--project", pid, "--product-id", product, "--immediate")
	if err != nil || !strings.Contains(out, `"mode": "immediate"`) || !strings.Contains(out, product) {
		t.Errorf("o2i product set --immediate: %v\n%s", err, out)
	}
	if out, err := runCmd(t, "product", "set", "--project", pid, "--product-id", product, "--period-months", "6"); err != nil || !strings.Contains(out, `"periodMonths": 6`) {
		t.Errorf("o2i product set --period-months 6: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"product", "set", "--project", pid, "--product-id", product},                                        // neither
		{"product", "set", "--project", pid, "--product-id", product, "--immediate", "--period-months", "3"}, // both
		{"product", "set", "--project", pid, "--product-id", "no-such-" + suffix, "--immediate"},             // unknown
		{"product", "set", "--project", pid, "--product-id", product, "--period-months", "121"},              // out of range
	} {
		if _, err := runCmd(t, bad...); err == nil {
			t.Errorf("o2i %v succeeded", bad)
		}
	}
}

// TestStatusSaysWhatTheOrderWaitsFor: the status record lists everything an
// order waits for in process order (waitingForAll: payment, then
// fulfillment) and names the first in waitingFor. An unpaid order of goods
// not shipped waits for both; whichever arrives first, the other is left;
// once invoiced it waits for nothing. Paid first, then shipped; and shipped
// first, then paid.
func TestStatusSaysWhatTheOrderWaitsFor(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_waiting"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	waits := func(no, first string, all ...any) {
		t.Helper()
		if all == nil {
			all = []any{}
		}
		var last map[string]any
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("%s waiting for %s %v", no, first, all), func() bool {
			last = waitStatus(t, c, key, no, func(map[string]any) bool { return true })
			return last["waitingFor"] == first && reflect.DeepEqual(last["waitingForAll"], all)
		})
	}
	order := func(no string) {
		t.Helper()
		if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe","requiresShipping":true,
			"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
			"items":[{"name":"Tee","quantity":1,"unitGrossCents":1190,"taxRate":19}]}`, no, no)), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order: %d %s", r.Status, r.Body)
		}
	}
	ship := func(no string) {
		t.Helper()
		if r := c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled"}`, no)), "Idempotency-Key", no+"-f"); r.Status != 200 {
			t.Fatalf("fulfilled: %d %s", r.Status, r.Body)
		}
	}
	pay := func(no string) {
		t.Helper()
		stripeEvent(t, pid, secret, "payment_intent.succeeded", fmt.Sprintf(`{"id":"pi_%s","object":"payment_intent","amount":1190,"amount_received":1190,"currency":"eur"}`, no))
	}

	shippedFirst := "WAIT-" + uuid.NewString()[:8]
	order(shippedFirst)
	waits(shippedFirst, "payment", "payment", "fulfillment")
	ship(shippedFirst)
	waits(shippedFirst, "payment", "payment")
	pay(shippedFirst)
	documents(t, c, key, shippedFirst, "invoiced", 1)
	waits(shippedFirst, "none")

	paidFirst := "WAIT-" + uuid.NewString()[:8]
	order(paidFirst)
	waits(paidFirst, "payment", "payment", "fulfillment")
	pay(paidFirst)
	waits(paidFirst, "fulfillment", "fulfillment")
	ship(paidFirst)
	documents(t, c, key, paidFirst, "invoiced", 1)
	waits(paidFirst, "none")
}

// TestPriorYearRevenue: under accrual accounting, a service period that
// starts in an earlier financial year still gets its invoice, and a
// prior_year_revenue task tells the accountant; under cash accounting not.
func TestPriorYearRevenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	c := client(t)
	year := time.Now().UTC().Year()
	for _, accounting := range []string{project.Accrual, project.Cash} {
		pid := testenv.Project(t, pool, true)
		if _, err := project.Apply(ctx, pool, pid, project.Update{Accounting: &accounting}); err != nil {
			t.Fatal(err)
		}
		key := testenv.Key(t, pool, pid)
		no := "PY-" + uuid.NewString()[:8]
		body := strings.Replace(string(creditOrder(no, "1", 1000, 1190)), `"start_date":"2026-11-01"`,
			fmt.Sprintf(`"start_date":"%d-12-01"`, year-1), 1)
		if r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order: %d %s", r.Status, r.Body)
		}
		documents(t, c, key, no, "invoiced", 1)
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = 'prior_year_revenue' AND subject = $2 AND status = 'open'`,
			pid, no).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{project.Accrual: 1, project.Cash: 0}[accounting]; n != want {
			t.Errorf("%s accounting: %d prior_year_revenue tasks, want %d", accounting, n, want)
		}
	}
}

// TestDataHoldsRelease: an order whose billing address the invoice cannot
// do without is held as order_not_invoiceable until the order is pushed
// again complete; an order whose document would break the rules (the seller
// has neither VAT ID nor tax number) is held as invoice_validation_failed
// without taking a number, and issued once the seller data is there. Both
// show their hold in the status record.
func TestDataHoldsRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	partial, rules := "ADDR-"+suffix, "RULES-"+suffix

	// A business buyer without street: no small-amount invoice (§ 33 UStDV
	// is for consumers), so the order waits.
	incomplete := strings.Replace(string(creditOrder(partial, "1", 1000, 1190)), `"street":"Weg 1","postal_code":"10115","city":"Berlin"`,
		`"postal_code":"10115","company_name":"Kunde AG"`, 1)
	if r := c.Do("POST", "/v1/orders", key, []byte(incomplete), "Idempotency-Key", partial); r.Status != http.StatusCreated {
		t.Fatalf("order without street: %d %s", r.Status, r.Body)
	}
	taskState(t, pool, pid, "order_not_invoiceable", partial, "open")
	waitStatus(t, c, key, partial, func(d map[string]any) bool {
		hs := d["holds"].([]any)
		return len(hs) == 1 && hs[0].(map[string]any)["type"] == "order_not_invoiceable"
	})
	if r := c.Do("POST", "/v1/orders", key, creditOrder(partial, "1", 1000, 1190), "Idempotency-Key", partial+"-2"); r.Status != http.StatusOK {
		t.Fatalf("complete order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, partial, "invoiced", 1)
	taskState(t, pool, pid, "order_not_invoiceable", partial, "resolved")

	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) { s.SellerVATID, s.SellerTaxNumber = "", "" }}); err != nil {
		t.Fatal(err)
	}
	if r := c.Do("POST", "/v1/orders", key, creditOrder(rules, "1", 1000, 1190), "Idempotency-Key", rules); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	// Seller data without VAT ID and tax number: a cause of the project,
	// decided before the order is computed, held by the project's one task.
	taskState(t, pool, pid, "seller_data_incomplete", rules, "open")
	if n := numbersOf(t, pool, pid, rules); n != 0 {
		t.Errorf("an order of a project lacking seller data was invoiced (%d)", n)
	}
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) { *s = testenv.DemoSeller() }}); err != nil {
		t.Fatal(err)
	}
	docs := documents(t, c, key, rules, "invoiced", 1)
	taskState(t, pool, pid, "seller_data_incomplete", rules, "resolved")
	// No number was lost: the first order took 000001, this one 000002.
	if docs[0]["number"] != fmt.Sprintf("TEST-%d-000002", time.Now().UTC().Year()) {
		t.Errorf("number %v, want the next after the first order's", docs[0]["number"])
	}
}
