package orders

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

// Row is an order row as the write side changes it.
type Row struct {
	ID                string
	Version           int64
	Status            string
	FulfillmentStatus string
	ShippedAt         *time.Time
	SuppliedAt        *time.Time
	TrackingNumber    *string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	InvoicedAt        *time.Time
	CorrectionPending bool
	RefundPending     int64      // refunded gross no credit note covers yet
	Holds             []byte     // JSON [{type, taskId}]
	PaidAt            *time.Time // when the provider's payment was matched
}

// Locked is an order row locked FOR UPDATE with what its changes need.
type Locked struct {
	Row
	OrderNo          string
	RequiresShipping bool
	PaidCents        *int64 // the provider's payment, when matched
	RefundedCents    int64  // what the provider reported refunded in all
	Content          []byte
	TestMode         bool // taken while its project was in test mode: its documents are test documents
}

// Lock locks the project's order whose column (order_no or
// payment_ref) is value; pgx.ErrNoRows when there is none.
func Lock(ctx context.Context, tx pgx.Tx, projectID, column, value string) (Locked, error) {
	var o Locked
	err := tx.QueryRow(ctx, lockSQL(column), projectID, value).Scan(o.dest()...)
	return o, err
}

// QueueLock adds Lock to b, for a transaction that sends it with other
// statements in one round trip: the order is stored in dst when the
// batch's results are read (pgx.ErrNoRows when there is none).
func QueueLock(b *pgx.Batch, projectID, column, value string, dst *Locked) {
	b.Queue(lockSQL(column), projectID, value).QueryRow(func(row pgx.Row) error { return row.Scan(dst.dest()...) })
}

func lockSQL(column string) string {
	return `SELECT id::text, order_no, version, status, fulfillment_status, shipped_at, supplied_at, tracking_number,
  created_at, updated_at, invoiced_at, correction_pending, refund_pending_cents, requires_shipping, paid_at, paid_cents,
  refunded_cents, holds, content, test_mode
FROM orders WHERE project_id = $1 AND ` + column + ` = $2 FOR UPDATE`
}

func (o *Locked) dest() []any {
	return []any{&o.ID, &o.OrderNo, &o.Version, &o.Status, &o.FulfillmentStatus, &o.ShippedAt, &o.SuppliedAt, &o.TrackingNumber,
		&o.CreatedAt, &o.UpdatedAt, &o.InvoicedAt, &o.CorrectionPending, &o.RefundPending, &o.RequiresShipping, &o.PaidAt, &o.PaidCents,
		&o.RefundedCents, &o.Holds, &o.Content, &o.TestMode}
}

// EnqueueState records event typ with the order's state after a change
// (o.Version and o.UpdatedAt already the new ones) in tx.
func (o Locked) EnqueueState(ctx context.Context, tx pgx.Tx, projectID, typ string) error {
	var c event.OrderContent
	if err := json.Unmarshal(o.Content, &c); err != nil {
		return fmt.Errorf("order %s content: %w", o.OrderNo, err)
	}
	ev, err := event.New(typ, projectID, "order", o.ID, o.OrderNo, o.Version, o.UpdatedAt, o.State(projectID, c))
	if err != nil {
		return err
	}
	return outbox.Enqueue(ctx, tx, ev)
}

func (r Row) State(projectID string, c event.OrderContent) event.Order {
	o := event.Order{
		ID: r.ID, ProjectID: projectID, Status: r.Status, Version: r.Version,
		FulfillmentStatus: r.FulfillmentStatus, ShippedAt: utc(r.ShippedAt), SuppliedAt: utc(r.SuppliedAt),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), InvoicedAt: utc(r.InvoicedAt),
		CorrectionPending: r.CorrectionPending, RefundPendingCents: r.RefundPending, PaidAt: utc(r.PaidAt), OrderContent: c,
	}
	if len(r.Holds) > 2 { // not "[]"
		_ = json.Unmarshal(r.Holds, &o.Holds) // written by NoteHoldsTx from the tasks that hold it
	}
	if r.TrackingNumber != nil {
		o.TrackingNumber = *r.TrackingNumber
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

// NoteHoldsTx records the open tasks that hold the locked order (its rows
// of held_orders not released) on it and publishes its state when they
// changed. A shared task (a cause of the project or of a product) is
// named like a task of the order alone.
func NoteHoldsTx(ctx context.Context, tx pgx.Tx, projectID string, o *Locked) error {
	err := tx.QueryRow(ctx, `UPDATE orders o SET holds = h.holds, version = o.version + 1, updated_at = now()
		FROM (SELECT coalesce(jsonb_agg(jsonb_build_object('type', t.kind, 'taskId', t.id) ORDER BY t.created_at, t.id), '[]'::jsonb) AS holds
			FROM held_orders ho JOIN tasks t ON t.id = ho.task_id
			WHERE ho.order_id = $1 AND ho.released_at IS NULL AND t.project_id = $2 AND t.status = 'open') h
		WHERE o.id = $1 AND o.holds <> h.holds
		RETURNING o.version, o.updated_at, o.holds`, o.ID, projectID).Scan(&o.Version, &o.UpdatedAt, &o.Holds)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // unchanged
	}
	if err != nil {
		return err
	}
	return o.EnqueueState(ctx, tx, projectID, event.OrderUpdated)
}
