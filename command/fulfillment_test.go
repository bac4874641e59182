package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/httpx"
)

func (r reply) fulfillment(t *testing.T) command.FulfillmentResult {
	t.Helper()
	var env httpx.Envelope[command.FulfillmentResult]
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if env.RequestID == "" {
		t.Errorf("no requestId in %s", r.body)
	}
	return env.Data
}

func (e *env) postFulfillment(v map[string]any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, "/v1/fulfillments", uuid.NewString(), mustJSON(e.t, v))
}

func (e *env) newOrder(t *testing.T) string {
	t.Helper()
	no := uniqueNo("FUL")
	if r := e.postOrder(mustJSON(t, order(no))); r.status != 201 {
		t.Fatalf("order: %d %s", r.status, r.body)
	}
	return no
}

func TestFulfillmentValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := e.newOrder(t)
	tests := []struct {
		name   string
		body   map[string]any
		status int
		code   string
		field  string
	}{
		{"orderNo missing", map[string]any{"status": "fulfilled"}, 422, "validation_failed", "orderNo"},
		{"orderNo empty", map[string]any{"orderNo": ""}, 422, "validation_failed", "orderNo"},
		{"orderNo number", map[string]any{"orderNo": 12}, 422, "validation_failed", "orderNo"},
		{"status unknown", map[string]any{"orderNo": no, "status": "shipped"}, 422, "validation_failed", "status"},
		{"status upper case", map[string]any{"orderNo": no, "status": "FULFILLED"}, 422, "validation_failed", "status"},
		{"status number", map[string]any{"orderNo": no, "status": 1}, 422, "validation_failed", "status"},
		{"shippedAt date only", map[string]any{"orderNo": no, "shippedAt": "2026-03-01"}, 422, "validation_failed", "shippedAt"},
		{"shippedAt without offset", map[string]any{"orderNo": no, "shippedAt": "2026-03-01T10:00:00"}, 422, "validation_failed", "shippedAt"},
		{"shippedAt garbage", map[string]any{"orderNo": no, "shippedAt": "yesterday"}, 422, "validation_failed", "shippedAt"},
		{"shippedAt number", map[string]any{"orderNo": no, "shippedAt": 1700000000}, 422, "validation_failed", "shippedAt"},
		{"trackingNumber number", map[string]any{"orderNo": no, "trackingNumber": 1}, 422, "validation_failed", "trackingNumber"},
		{"trackingNumber with LF", map[string]any{"orderNo": no, "trackingNumber": "TRK\n1"}, 422, "validation_failed", "trackingNumber"},
		{"orderNo with RLO", map[string]any{"orderNo": no + "\u202e"}, 422, "validation_failed", "orderNo"},
		{"unknown order", map[string]any{"orderNo": "no-such-order", "status": "fulfilled"}, 404, "order_not_found", ""},
		{"unknown order is per project", map[string]any{"orderNo": "FUL-elsewhere"}, 404, "order_not_found", ""},
		{"partial", map[string]any{"orderNo": no, "status": "partial", "trackingNumber": nil, "shippedAt": nil}, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.postFulfillment(tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status >= 300 {
				eb := r.errBody(t)
				if eb.Error.Code != tt.code || eb.Error.Field != tt.field {
					t.Errorf("code %q field %q, want %q %q", eb.Error.Code, eb.Error.Field, tt.code, tt.field)
				}
			}
		})
	}
	// Another project's order is unknown here.
	other := newEnv(t)
	if r := other.postFulfillment(map[string]any{"orderNo": no}); r.status != 404 {
		t.Errorf("other project's order: %d %s", r.status, r.body)
	}
}

func TestFulfillmentStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := e.newOrder(t)

	// partial: no date of supply yet.
	r := e.postFulfillment(map[string]any{"orderNo": no, "status": "partial", "trackingNumber": "TRK-1"})
	if r.status != 200 {
		t.Fatalf("partial: %d %s", r.status, r.body)
	}
	if got := r.fulfillment(t); got.OrderNo != no || got.FulfillmentStatus != "partial" || got.ShippedAt != nil {
		t.Errorf("partial: %+v", got)
	}

	// fulfilled with shippedAt: the date of supply is shippedAt.
	r = e.postFulfillment(map[string]any{"orderNo": no, "status": "fulfilled", "shippedAt": "2026-03-01T11:15:00+01:00"})
	if r.status != 200 {
		t.Fatalf("fulfilled: %d %s", r.status, r.body)
	}
	if got := r.fulfillment(t); got.FulfillmentStatus != "fulfilled" || got.ShippedAt == nil || *got.ShippedAt != "2026-03-01T10:15:00Z" {
		t.Errorf("fulfilled: %+v", got)
	}

	evs := e.outboxEvents()
	if len(evs) != 3 || evs[1].Type != event.OrderFulfillmentUpdated || evs[2].Type != event.OrderFulfilled {
		t.Fatalf("events %+v", evs)
	}
	o := orderOf(t, evs[2])
	want := time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC)
	if o.FulfillmentStatus != "fulfilled" || o.SuppliedAt == nil || !o.SuppliedAt.Equal(want) || o.ShippedAt == nil ||
		o.TrackingNumber != "TRK-1" || o.Version != 3 || evs[2].AggregateVersion != 3 || o.Items == nil {
		t.Errorf("state after fulfilled: %+v", o)
	}

	// The same report again (new key): unchanged, no event.
	r = e.postFulfillment(map[string]any{"orderNo": no, "status": "fulfilled", "shippedAt": "2026-03-01T10:15:00Z"})
	if r.status != 200 || len(e.outboxEvents()) != 3 {
		t.Errorf("repeat: %d %s, %d events", r.status, r.body, len(e.outboxEvents()))
	}
	// fulfilled without shippedAt keeps the date it set.
	r = e.postFulfillment(map[string]any{"orderNo": no})
	if got := r.fulfillment(t); got.ShippedAt == nil || *got.ShippedAt != "2026-03-01T10:15:00Z" {
		t.Errorf("fulfilled again without shippedAt: %+v", got)
	}
	var reports int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM fulfillments WHERE project_id = $1`, e.project).Scan(&reports); err != nil || reports != 4 {
		t.Errorf("%d fulfillment reports (%v), want 4", reports, err)
	}
}

func TestFulfillmentWithoutShippedAtUsesReceiptTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := e.newOrder(t)
	before := time.Now().Add(-time.Second)
	r := e.postFulfillment(map[string]any{"orderNo": no, "status": "fulfilled"})
	after := time.Now().Add(time.Second)
	got := r.fulfillment(t)
	if r.status != 200 || got.ShippedAt == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	at, err := time.Parse(time.RFC3339Nano, *got.ShippedAt)
	if err != nil || at.Before(before) || at.After(after) {
		t.Errorf("date of supply %v (%v), want the receipt time", at, err)
	}
	// Default status is fulfilled.
	no2 := e.newOrder(t)
	if got := e.postFulfillment(map[string]any{"orderNo": no2, "trackingNumber": "T"}).fulfillment(t); got.FulfillmentStatus != "fulfilled" {
		t.Errorf("default status %q", got.FulfillmentStatus)
	}
}

func TestFulfillmentIdempotencyAndInvoiced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := e.newOrder(t)
	key := uuid.NewString()
	body := mustJSON(t, map[string]any{"orderNo": no, "status": "fulfilled", "shippedAt": "2026-03-02T08:00:00Z"})
	first := e.do(http.MethodPost, "/v1/fulfillments", key, body)
	second := e.do(http.MethodPost, "/v1/fulfillments", key, body)
	if first.status != 200 || second.status != 200 || !bytes.Equal(first.body, second.body) || second.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %d %s / %d %s %v", first.status, first.body, second.status, second.body, second.header)
	}
	diff := mustJSON(t, map[string]any{"orderNo": no, "status": "partial"})
	if r := e.do(http.MethodPost, "/v1/fulfillments", key, diff); r.status != 422 || r.errBody(t).Error.Code != "idempotency_key_reused" {
		t.Errorf("reuse: %d %s", r.status, r.body)
	}

	if _, err := e.pool.Exec(context.Background(), `UPDATE orders SET status = 'invoiced' WHERE project_id = $1 AND order_no = $2`, e.project, no); err != nil {
		t.Fatal(err)
	}
	// A tracking number changes nothing on the invoice ...
	r := e.postFulfillment(map[string]any{"orderNo": no, "status": "fulfilled", "trackingNumber": "TRK-9"})
	if r.status != 200 {
		t.Errorf("tracking number after invoicing: %d %s", r.status, r.body)
	}
	if o := orderOf(t, e.outboxEvents()[len(e.outboxEvents())-1]); o.Status != "invoiced" || o.CorrectionPending || o.TrackingNumber != "TRK-9" {
		t.Errorf("after the tracking number: %+v", o)
	}
	// ... moving the date of supply of an invoiced shipped order corrects
	// the invoice: accepted, and the order waits for the correction.
	r = e.postFulfillment(map[string]any{"orderNo": no, "status": "fulfilled", "shippedAt": "2026-03-05T08:00:00Z"})
	if r.status != 200 {
		t.Fatalf("move date of supply: %d %s", r.status, r.body)
	}
	evs := e.outboxEvents()
	o := orderOf(t, evs[len(evs)-1])
	if o.Status != "created" || !o.CorrectionPending || o.SuppliedAt == nil || !o.SuppliedAt.Equal(time.Date(2026, 3, 5, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("after moving the date of supply: %+v", o)
	}
}
