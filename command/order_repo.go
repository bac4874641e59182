package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
)

// The order repository: an order row, locked FOR UPDATE for a change, and
// its state published after the change. Every write use case that changes
// an existing order (fulfillment, payment, invoicing, correction,
// cancellation) locks it here.

type orderRow struct {
	id                string
	version           int64
	status            string
	fulfillmentStatus string
	shippedAt         *time.Time
	suppliedAt        *time.Time
	trackingNumber    *string
	createdAt         time.Time
	updatedAt         time.Time
	invoicedAt        *time.Time
	correctionPending bool
	refundPending     int64      // refunded gross no credit note covers yet
	holds             []byte     // JSON [{type, taskId}]
	paidAt            *time.Time // when the provider's payment was matched
}

// lockedOrderRow is an order row locked FOR UPDATE with what its changes need.
type lockedOrderRow struct {
	orderRow
	orderNo          string
	requiresShipping bool
	paidCents        *int64 // the provider's payment, when matched
	refundedCents    int64  // what the provider reported refunded in all
	content          []byte
	testMode         bool // taken while its project was in test mode: its documents are test documents
}

// lockOrder locks the project's order whose column (order_no or
// payment_ref) is value; pgx.ErrNoRows when there is none.
func lockOrder(ctx context.Context, tx pgx.Tx, projectID, column, value string) (lockedOrderRow, error) {
	var o lockedOrderRow
	err := tx.QueryRow(ctx, `SELECT id::text, order_no, version, status, fulfillment_status, shipped_at, supplied_at, tracking_number,
  created_at, updated_at, invoiced_at, correction_pending, refund_pending_cents, requires_shipping, paid_at, paid_cents,
  refunded_cents, holds, content, test_mode
FROM orders WHERE project_id = $1 AND `+column+` = $2 FOR UPDATE`, projectID, value).
		Scan(&o.id, &o.orderNo, &o.version, &o.status, &o.fulfillmentStatus, &o.shippedAt, &o.suppliedAt, &o.trackingNumber,
			&o.createdAt, &o.updatedAt, &o.invoicedAt, &o.correctionPending, &o.refundPending, &o.requiresShipping, &o.paidAt, &o.paidCents,
			&o.refundedCents, &o.holds, &o.content, &o.testMode)
	return o, err
}

// enqueueState records event typ with the order's state after a change
// (o.version and o.updatedAt already the new ones) in tx.
func (o lockedOrderRow) enqueueState(ctx context.Context, tx pgx.Tx, projectID, typ string) error {
	var c event.OrderContent
	if err := json.Unmarshal(o.content, &c); err != nil {
		return fmt.Errorf("order %s content: %w", o.orderNo, err)
	}
	ev, err := event.New(typ, projectID, "order", o.id, o.orderNo, o.version, o.updatedAt, o.state(projectID, c))
	if err != nil {
		return err
	}
	return outbox.Enqueue(ctx, tx, ev)
}

func (r orderRow) state(projectID string, c event.OrderContent) event.Order {
	o := event.Order{
		ID: r.id, ProjectID: projectID, Status: r.status, Version: r.version,
		FulfillmentStatus: r.fulfillmentStatus, ShippedAt: utc(r.shippedAt), SuppliedAt: utc(r.suppliedAt),
		CreatedAt: r.createdAt.UTC(), UpdatedAt: r.updatedAt.UTC(), InvoicedAt: utc(r.invoicedAt),
		CorrectionPending: r.correctionPending, RefundPendingCents: r.refundPending, PaidAt: utc(r.paidAt), OrderContent: c,
	}
	if len(r.holds) > 2 { // not "[]"
		_ = json.Unmarshal(r.holds, &o.Holds) // written by this package from []event.Hold
	}
	if r.trackingNumber != nil {
		o.TrackingNumber = *r.trackingNumber
	}
	return o
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// noteHoldsTx records the order's open hold tasks on the locked order and
// publishes its state when they changed.
func noteHoldsTx(ctx context.Context, tx pgx.Tx, projectID string, o *lockedOrderRow) error {
	err := tx.QueryRow(ctx, `UPDATE orders o SET holds = h.holds, version = o.version + 1, updated_at = now()
		FROM (SELECT coalesce(jsonb_agg(jsonb_build_object('type', kind, 'taskId', id) ORDER BY created_at), '[]'::jsonb) AS holds
			FROM tasks WHERE project_id = $2 AND subject = $3 AND status = 'open' AND kind = ANY($4)) h
		WHERE o.id = $1 AND o.holds <> h.holds
		RETURNING o.version, o.updated_at, o.holds`, o.id, projectID, o.orderNo, holdKinds).Scan(&o.version, &o.updatedAt, &o.holds)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // unchanged
	}
	if err != nil {
		return err
	}
	return o.enqueueState(ctx, tx, projectID, event.OrderUpdated)
}
