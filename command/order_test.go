package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/money"
)

func TestPlaceOrderCreatesOrderAndEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := uniqueNo("C")
	m := order(no)
	m["service_period"] = map[string]any{"start_date": "2026-01-01", "end_date": "2026-12-31"}
	m["shippingGrossCents"] = json.Number("490")
	r := e.postOrder(mustJSON(t, m))
	if r.status != 201 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	res := r.order(t)
	if _, err := uuid.Parse(res.ID); err != nil || res.OrderNo != no || res.Status != "created" {
		t.Fatalf("data = %+v", res)
	}
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Error("first response marked as replay")
	}
	evs := e.outboxEvents()
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Type != event.OrderCreated || ev.Version != 1 || ev.ProjectID != e.project || ev.AggregateID != res.ID ||
		ev.AggregateKey != no || ev.AggregateVersion != 1 || ev.Topic != event.TopicOrders || ev.OccurredAt.IsZero() {
		t.Errorf("envelope = %+v", ev)
	}
	if _, err := uuid.Parse(ev.ID); err != nil {
		t.Errorf("eventId %q: %v", ev.ID, err)
	}
	o := orderOf(t, ev)
	if o.ID != res.ID || o.OrderNo != no || o.Status != "created" || o.FulfillmentStatus != "unfulfilled" || o.Version != 1 ||
		o.Currency != "EUR" || !o.RequiresShipping || o.Email != "erika@example.com" || o.PaymentRef != "pi_"+no ||
		o.ServicePeriod == nil || o.ServicePeriod.EndDate != "2026-12-31" || o.ShippingGrossCents == nil || *o.ShippingGrossCents != 490 ||
		o.BillingAddress.CountryCode != "DE" || o.BillingAddress.City != "Köln" || len(o.Items) != 2 {
		t.Errorf("order state = %+v", o)
	}
	if q := o.Items[1].Quantity; !q.Equal(money.MustParse("1.5")) {
		t.Errorf("quantity %s, want exactly 1.5", q)
	}
	for i, it := range o.Items {
		if _, err := uuid.Parse(it.CatalogProductID); err != nil {
			t.Errorf("items[%d] catalogProductId %q", i, it.CatalogProductID)
		}
	}
}

func TestPlaceOrderIsIdempotentByOrderNo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := uniqueNo("U")
	m := order(no)
	first := e.postOrder(mustJSON(t, m))
	if first.status != 201 {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	id := first.order(t).ID

	// Same content, new key: 200, same id, no event.
	again := e.postOrder(mustJSON(t, m))
	if again.status != 200 || again.order(t).ID != id || again.order(t).Status != "created" {
		t.Fatalf("repeat: %d %s", again.status, again.body)
	}
	if again.header.Get("Idempotent-Replayed") != "" {
		t.Error("repeat with a new key marked as replay")
	}
	if n := len(e.outboxEvents()); n != 1 {
		t.Errorf("%d events after an unchanged repeat, want 1", n)
	}

	// Changed content: 200, same id, order.updated with version 2.
	item(m, 0)["quantity"] = json.Number("3")
	upd := e.postOrder(mustJSON(t, m))
	if upd.status != 200 || upd.order(t).ID != id {
		t.Fatalf("update: %d %s", upd.status, upd.body)
	}
	evs := e.outboxEvents()
	if len(evs) != 2 || evs[1].Type != event.OrderUpdated || evs[1].AggregateVersion != 2 {
		t.Fatalf("events %+v", evs)
	}
	if o := orderOf(t, evs[1]); !o.Items[0].Quantity.Equal(money.Int(3)) || o.Version != 2 || o.ID != id {
		t.Errorf("updated state = %+v", o)
	}
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE project_id = $1 AND order_no = $2`, e.project, no).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d orders (%v), want 1", n, err)
	}
}

func TestPlaceOrderAfterInvoicing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := uniqueNo("I")
	m := order(no)
	first := e.postOrder(mustJSON(t, m))
	if first.status != 201 {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE orders SET status = 'invoiced', invoiced_at = now() WHERE project_id = $1 AND order_no = $2`, e.project, no); err != nil {
		t.Fatal(err)
	}

	same := e.postOrder(mustJSON(t, m))
	if same.status != 200 || same.order(t).Status != "invoiced" {
		t.Errorf("unchanged after invoicing: %d %s", same.status, same.body)
	}

	// financialStatus and email are not invoice-relevant: a plain update.
	status := order(no)
	status["financialStatus"] = "refunded"
	r := e.postOrder(mustJSON(t, status))
	if r.status != 200 || r.order(t).Status != "invoiced" {
		t.Fatalf("financialStatus change: %d %s", r.status, r.body)
	}
	evs := e.outboxEvents()
	if len(evs) != 2 || evs[1].Type != event.OrderUpdated {
		t.Fatalf("events %+v", evs)
	}
	if o := orderOf(t, evs[1]); o.FinancialStatus != "refunded" || o.Status != "invoiced" || o.InvoicedAt == nil || o.CorrectionPending {
		t.Errorf("state after financialStatus change: %+v", o)
	}

	// An invoice-relevant change is accepted: the order goes back to
	// created with a correction pending (the invoicer cancels the invoice
	// and issues a new one).
	changed := order(no)
	changed["financialStatus"] = "refunded"
	item(changed, 0)["unitGrossCents"] = json.Number("1290")
	r = e.postOrder(mustJSON(t, changed))
	if r.status != 200 || r.order(t).Status != "created" {
		t.Fatalf("invoice-relevant change: %d %s", r.status, r.body)
	}
	evs = e.outboxEvents()
	if len(evs) != 3 {
		t.Fatalf("events %+v", evs)
	}
	if o := orderOf(t, evs[2]); o.Status != "created" || !o.CorrectionPending || o.Items[0].UnitGrossCents == nil || *o.Items[0].UnitGrossCents != 1290 {
		t.Errorf("state after the correction: %+v", o)
	}
	addr := order(no)
	addr["financialStatus"] = "refunded"
	item(addr, 0)["unitGrossCents"] = json.Number("1290")
	ba(addr)["street"] = "Other street 1"
	if r := e.postOrder(mustJSON(t, addr)); r.status != 200 {
		t.Errorf("address change after invoicing: %d %s", r.status, r.body)
	}
	// (The correction pending on the order is the invoicer's to clear: it
	// may run beside this test, so the event above is what is checked.)

	// A cancelled order's invoice-relevant content is final.
	if _, err := e.pool.Exec(context.Background(), `UPDATE orders SET status = 'cancelled' WHERE project_id = $1 AND order_no = $2`, e.project, no); err != nil {
		t.Fatal(err)
	}
	if r := e.postOrder(mustJSON(t, addr)); r.status != 200 || r.order(t).Status != "cancelled" {
		t.Errorf("unchanged cancelled order: %d %s", r.status, r.body)
	}
	if r := e.postOrder(mustJSON(t, changed)); r.status != 409 || r.errBody(t).Error.Code != "order_cancelled" {
		t.Errorf("change of a cancelled order: %d %s", r.status, r.body)
	}
}

func TestPaymentRefConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := order(uniqueNo("PA"))
	a["paymentRef"] = "pi_shared"
	if r := e.postOrder(mustJSON(t, a)); r.status != 201 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	b := order(uniqueNo("PB"))
	b["paymentRef"] = "pi_shared"
	r := e.postOrder(mustJSON(t, b))
	if r.status != 409 || r.errBody(t).Error.Code != "payment_ref_conflict" {
		t.Fatalf("second: %d %s", r.status, r.body)
	}
	// The failed transaction left neither an order nor an event behind.
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE project_id = $1`, e.project).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d orders, want 1 (%v)", n, err)
	}
	if evs := e.outboxEvents(); len(evs) != 1 || evs[0].AggregateKey != a["orderNo"] {
		t.Errorf("events %+v", evs)
	}
	// The same paymentRef in another project is fine.
	other := newEnv(t)
	if r := other.postOrder(mustJSON(t, b)); r.status != 201 {
		t.Errorf("other project: %d %s", r.status, r.body)
	}
	// An order keeps its own paymentRef on update.
	a["financialStatus"] = "refunded"
	if r := e.postOrder(mustJSON(t, a)); r.status != 200 {
		t.Errorf("update keeping paymentRef: %d %s", r.status, r.body)
	}
}

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := mustJSON(t, order(uniqueNo("R")))
	key := uuid.NewString()
	first := e.do(http.MethodPost, "/v1/orders", key, body)
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	second := e.do(http.MethodPost, "/v1/orders", key, body)
	if second.status != 200 {
		t.Errorf("replay status %d, want 200 (spec: an existing order is updated or replayed with 200)", second.status)
	}
	if !bytes.Equal(second.body, first.body) {
		t.Errorf("replay body differs:\n%s\n%s", first.body, second.body)
	}
	if second.header.Get("Idempotent-Replayed") != "true" {
		t.Error("replay lacks Idempotent-Replayed: true")
	}
	if second.header.Get("X-Request-Id") != first.header.Get("X-Request-Id") {
		t.Errorf("replay X-Request-Id %q, want the original %q", second.header.Get("X-Request-Id"), first.header.Get("X-Request-Id"))
	}
	if n := len(e.outboxEvents()); n != 1 {
		t.Errorf("%d events, want 1", n)
	}

	// Same key, different body.
	other := order(uniqueNo("R2"))
	r := e.do(http.MethodPost, "/v1/orders", key, mustJSON(t, other))
	if r.status != 422 || r.errBody(t).Error.Code != "idempotency_key_reused" {
		t.Errorf("reuse: %d %s", r.status, r.body)
	}
	// Same key in another project, and on another endpoint, is another key.
	e2 := newEnv(t)
	if r := e2.do(http.MethodPost, "/v1/orders", key, body); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("other project: %d %s", r.status, r.body)
	}
	ful := mustJSON(t, map[string]any{"orderNo": first.order(t).OrderNo, "status": "partial"})
	if r := e.do(http.MethodPost, "/v1/fulfillments", key, ful); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("other endpoint: %d %s", r.status, r.body)
	}
}

func TestIdempotencyFailedRequestStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := uuid.NewString()
	bad := order(uniqueNo("F"))
	ba(bad)["country_code"] = "xx"
	if r := e.do(http.MethodPost, "/v1/orders", key, mustJSON(t, bad)); r.status != 422 {
		t.Fatalf("bad: %d %s", r.status, r.body)
	}
	// A conflict (409) stores nothing either.
	a := order(uniqueNo("F1"))
	if r := e.postOrder(mustJSON(t, a)); r.status != 201 {
		t.Fatal(r.status)
	}
	conflicting := order(uniqueNo("F2"))
	conflicting["paymentRef"] = a["paymentRef"]
	if r := e.do(http.MethodPost, "/v1/orders", key, mustJSON(t, conflicting)); r.status != 409 {
		t.Fatalf("conflict: %d %s", r.status, r.body)
	}
	good := order(uniqueNo("F3"))
	if r := e.do(http.MethodPost, "/v1/orders", key, mustJSON(t, good)); r.status != 201 {
		t.Errorf("corrected retry: %d %s", r.status, r.body)
	}
}

func TestIdempotencyInProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	key := uuid.NewString()
	body := mustJSON(t, order(uniqueNo("P")))

	// Hold the key's lock as a running first request would.
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, command.LockKey(e.project, command.EndpointOrders, key)); err != nil {
		t.Fatal(err)
	}
	r := e.do(http.MethodPost, "/v1/orders", key, body)
	if r.status != 409 || r.errBody(t).Error.Code != "idempotency_in_progress" {
		t.Fatalf("while running: %d %s", r.status, r.body)
	}
	fb := mustJSON(t, map[string]any{"orderNo": "x"})
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, command.LockKey(e.project, command.EndpointFulfillments, key)); err != nil {
		t.Fatal(err)
	}
	if r := e.do(http.MethodPost, "/v1/fulfillments", key, fb); r.status != 409 || r.errBody(t).Error.Code != "idempotency_in_progress" {
		t.Fatalf("fulfillment while running: %d %s", r.status, r.body)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r := e.do(http.MethodPost, "/v1/orders", key, body); r.status != 201 {
		t.Errorf("after the first ended: %d %s", r.status, r.body)
	}
}

// TestParallelDeliveries sends one order from many connections at once, with
// one key and with a key each: there is only ever one order.
func TestParallelDeliveries(t *testing.T) {
	t.Parallel()
	for _, sameKey := range []bool{true, false} {
		name := map[bool]string{true: "same key", false: "same orderNo"}[sameKey]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			no := uniqueNo("PAR")
			body := mustJSON(t, order(no))
			key := uuid.NewString()
			const n = 24
			bodies, keys := make([][]byte, n), make([]string, n)
			for i := range n {
				bodies[i], keys[i] = body, key
				if !sameKey {
					keys[i] = uuid.NewString()
				}
			}
			replies := e.postAtOnce(bodies, keys)
			counts := map[int]int{}
			ids := map[string]bool{}
			var created []byte
			for _, r := range replies {
				counts[r.status]++
				switch r.status {
				case 201:
					created = r.body
					ids[r.order(t).ID] = true
				case 200:
					ids[r.order(t).ID] = true
				case 409:
					if !sameKey || r.errBody(t).Error.Code != "idempotency_in_progress" {
						t.Errorf("409 %s", r.body)
					}
				default:
					t.Errorf("status %d: %s", r.status, r.body)
				}
			}
			if len(ids) != 1 {
				t.Errorf("order ids %v, want exactly one", ids)
			}
			if sameKey {
				// Exactly one execution; every success is that response.
				for _, r := range replies {
					if r.status < 300 && !bytes.Equal(r.body, created) || r.status == 200 && r.header.Get("Idempotent-Replayed") != "true" {
						t.Errorf("success body %s differs from %s", r.body, created)
					}
				}
				if counts[201] != 1 {
					t.Errorf("statuses %v: want one 201, replays as 200 and 409s", counts)
				}
			} else if counts[201] != 1 || counts[200] != n-1 {
				t.Errorf("statuses %v, want one 201 and %d 200", counts, n-1)
			}
			var orders int
			if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE project_id = $1`, e.project).Scan(&orders); err != nil || orders != 1 {
				t.Errorf("%d orders (%v), want 1", orders, err)
			}
			evs := e.outboxEvents()
			if len(evs) != 1 || evs[0].Type != event.OrderCreated {
				t.Errorf("events: %d, want one order.created", len(evs))
			}
		})
	}
}

func TestOrderLinesBoundToCatalogue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	line := func(name, sku, productID string) map[string]any {
		l := map[string]any{"name": name, "quantity": json.Number("1"), "unitNetCents": json.Number("100")}
		if sku != "" {
			l["sku"] = sku
		}
		if productID != "" {
			l["productId"] = productID
		}
		return l
	}
	m1 := order(uniqueNo("CAT"))
	m1["items"] = []any{line("Mug", "", "ART-1"), line("Mug", "", "ART-2"), line("Tee", "T-1", ""), line("Sticker", "", "")}
	m2 := order(uniqueNo("CAT"))
	m2["items"] = []any{line("Mug XL", "NEW-SKU", "ART-1"), line("Tea", "T-1", ""), line("Sticker", "", ""), line("Sticker", "S-1", "")}
	for _, m := range []map[string]any{m1, m2} {
		if r := e.postOrder(mustJSON(t, m)); r.status != 201 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	evs := e.outboxEvents()
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	a, b := orderOf(t, evs[0]).Items, orderOf(t, evs[1]).Items
	got := []bool{
		a[0].CatalogProductID == b[0].CatalogProductID, // productId binds despite new name and SKU
		a[0].CatalogProductID == a[1].CatalogProductID, // other productId, same name
		a[2].CatalogProductID == b[1].CatalogProductID, // same SKU, other name
		a[3].CatalogProductID == b[2].CatalogProductID, // same name, no SKU
		b[2].CatalogProductID == b[3].CatalogProductID, // a SKU makes a new product
	}
	want := []bool{true, false, true, true, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
}

// TestGroupCommitGivesEachOrderItsOwnAnswer: new orders arriving together
// are created in shared statements, and each still gets exactly its own
// answer: a paymentRef conflict fails only its order, parallel deliveries of
// one orderNo create it once, every created order has one event.
func TestGroupCommitGivesEachOrderItsOwnAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	taken := order(uniqueNo("TAKEN"))
	if r := e.postOrder(mustJSON(t, taken)); r.status != 201 {
		t.Fatalf("setup: %d %s", r.status, r.body)
	}
	type sent struct {
		body []byte
		kind string // new, conflict, same
	}
	var reqs []sent
	for range 50 {
		reqs = append(reqs, sent{mustJSON(t, order(uniqueNo("GC"))), "new"})
	}
	for range 6 {
		o := order(uniqueNo("GC-CONFLICT"))
		o["paymentRef"] = taken["paymentRef"]
		reqs = append(reqs, sent{mustJSON(t, o), "conflict"})
	}
	same := mustJSON(t, order(uniqueNo("GC-SAME")))
	for range 8 {
		reqs = append(reqs, sent{same, "same"})
	}
	statementsBefore, ordersBefore, fallbacksBefore := e.svc.CreateBatches()
	bodies, keys := make([][]byte, len(reqs)), make([]string, len(reqs))
	for i, s := range reqs {
		bodies[i], keys[i] = s.body, uuid.NewString()
	}
	replies := e.postAtOnce(bodies, keys)

	sameIDs := map[string]bool{}
	sameCreated := 0
	for i, s := range reqs {
		r := replies[i]
		switch s.kind {
		case "new":
			if r.status != 201 {
				t.Errorf("new order: %d %s", r.status, r.body)
			}
		case "conflict":
			if r.status != 409 || r.errBody(t).Error.Code != "payment_ref_conflict" {
				t.Errorf("paymentRef conflict: %d %s", r.status, r.body)
			}
		case "same":
			if r.status != 201 && r.status != 200 {
				t.Errorf("same orderNo: %d %s", r.status, r.body)
				continue
			}
			if r.status == 201 {
				sameCreated++
			}
			sameIDs[r.order(t).ID] = true
		}
	}
	if sameCreated != 1 || len(sameIDs) != 1 {
		t.Errorf("parallel deliveries of one orderNo: %d created, %d ids; want 1 and 1", sameCreated, len(sameIDs))
	}
	created := map[string]int{}
	for _, ev := range e.outboxEvents() {
		if ev.Type == event.OrderCreated {
			created[ev.AggregateKey]++
		}
	}
	if len(created) != 1+50+1 {
		t.Errorf("%d orders have an order.created event, want 52", len(created))
	}
	for no, n := range created {
		if n != 1 {
			t.Errorf("order %s has %d order.created events", no, n)
		}
	}
	var conflicting int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE project_id = $1 AND order_no LIKE 'GC-CONFLICT-%'`, e.project).Scan(&conflicting); err != nil {
		t.Fatal(err)
	}
	if conflicting != 0 {
		t.Errorf("%d conflicting orders were stored", conflicting)
	}
	statements, orders, fallbacks := e.svc.CreateBatches()
	statements, orders, fallbacks = statements-statementsBefore, orders-ordersBefore, fallbacks-fallbacksBefore
	t.Logf("group commit: %d new orders in %d statements, %d fell back", orders, statements, fallbacks)
	if statements >= orders {
		t.Errorf("%d orders took %d statements: no order shared a statement", orders, statements)
	}
	if fallbacks < 6 {
		t.Errorf("%d orders fell back to one statement, want at least the 6 conflicting ones", fallbacks)
	}
}
