package orders

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/store"
)

// PayOrder matches payment paymentID to the order with paymentRef ref in tx:
// the payment gets the order; an unpaid order becomes paid (amount, at) and
// an order.updated event follows. It returns the orderNo ("" when no order
// has ref) and whether the order became paid.
func PayOrder(ctx context.Context, tx pgx.Tx, projectID, paymentID, ref string, amount int64, at time.Time) (string, bool, error) {
	o, err := Lock(ctx, tx, projectID, "payment_ref", ref)
	if errors.Is(err, pgx.ErrNoRows) {
		// A bank transfer through the provider: the payment intent is the
		// order's payment order (command/invoicing/provider_transfer.go).
		id, terr := TransferOrderID(ctx, tx, projectID, ref)
		if terr != nil || id == "" {
			return "", false, terr
		}
		o, err = Lock(ctx, tx, projectID, "id", id)
	}
	if err != nil {
		return "", false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE payments SET order_id = $2, matched_at = $3 WHERE id = $1`, paymentID, o.ID, at); err != nil {
		return "", false, err
	}
	if o.PaidAt != nil {
		return o.OrderNo, false, nil // paid before: recorded, not applied twice
	}
	err = tx.QueryRow(ctx, `UPDATE orders SET paid_at = $2, paid_cents = $3, version = version + 1, updated_at = now()
WHERE id = $1 RETURNING version, updated_at`, o.ID, at, amount).Scan(&o.Version, &o.UpdatedAt)
	if err != nil {
		return "", false, err
	}
	o.PaidAt, o.PaidCents = &at, &amount
	// An invoiced order (an open item of an invoice-first gateway) is paid
	// now: the amount must be what its documents ask for, to the cent.
	if o.Status == "invoiced" {
		var due int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(due_cents), 0) FROM invoices i
			WHERE order_id = $1 AND type IN ('invoice', 'voucher_sale') AND failed_rules = '{}'
			AND NOT EXISTS (SELECT 1 FROM invoices c WHERE c.cancels = i.id)`, o.ID).Scan(&due); err != nil {
			return "", false, err
		}
		if due != amount {
			if err := OpenTask(ctx, tx, projectID, TaskPaymentAmountMismatch, o.OrderNo, map[string]any{
				"orderNo": o.OrderNo, "paidCents": amount, "dueCents": due,
			}); err != nil {
				return "", false, err
			}
		}
	}
	return o.OrderNo, true, o.EnqueueState(ctx, tx, projectID, event.OrderUpdated)
}

const paidAtQuery = `SELECT paid_at, payment_ref FROM orders WHERE project_id = $1 AND id = $2`

// waitingPayments are the succeeded payments of project $1's reference $2
// that no order took yet (they arrived before it).
const waitingPayments = `FROM payments
WHERE project_id = $1 AND payment_ref = $2 AND order_id IS NULL AND event_type = 'payment_intent.succeeded'`

// PaidAt says when the order's payment arrived (nil: not paid). An unpaid
// order with a paymentRef takes a payment that arrived before it and waits
// unmatched; that is how a payment without an order meets its order.
func PaidAt(ctx context.Context, pool *pgxpool.Pool, projectID, orderID string) (*time.Time, error) {
	// The invoicer asks for every event of an order paid through the
	// provider. Mostly the answer needs no transaction: the order is paid
	// (paid_at is never taken back), it takes no payment by reference, or
	// no payment waits for its reference (one that arrives from now on finds
	// the order and pays it). Only a waiting payment is matched, in a
	// transaction that reads both again.
	var paid *time.Time
	var ref *string
	if err := pool.QueryRow(ctx, paidAtQuery, projectID, orderID).Scan(&paid, &ref); err != nil || paid != nil || ref == nil {
		return paid, err
	}
	var waiting bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 `+waitingPayments+`)`, projectID, *ref).Scan(&waiting); err != nil || !waiting {
		return nil, err
	}
	err := store.WithTx(ctx, pool, func(tx pgx.Tx) error {
		var ref *string
		if err := tx.QueryRow(ctx, paidAtQuery, projectID, orderID).Scan(&paid, &ref); err != nil {
			return err
		}
		if paid != nil || ref == nil {
			return nil
		}
		var paymentID string
		var amount int64
		var at time.Time
		err := tx.QueryRow(ctx, `SELECT id::text, amount_cents, received_at `+waitingPayments+`
ORDER BY received_at LIMIT 1 FOR UPDATE SKIP LOCKED`, projectID, *ref).Scan(&paymentID, &amount, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, applied, err := PayOrder(ctx, tx, projectID, paymentID, *ref, amount, at); err != nil || !applied {
			return err
		}
		paid = &at
		_, err = tx.Exec(ctx, `UPDATE tasks SET status = 'resolved', resolved_at = now()
WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`,
			projectID, TaskPaymentWithoutOrder, *ref)
		return err
	})
	return paid, err
}

// GatewayProviderTransfer is the paymentGateway of bank transfers through
// the payment provider.
const GatewayProviderTransfer = "provider_transfer"

// ProviderTransfer reports whether the order pays by bank transfer through
// the provider.
func ProviderTransfer(c event.OrderContent) bool {
	return c.PaymentGateway == GatewayProviderTransfer // the door requires its email
}

// transferOrderRef returns the payment_ref-independent lookup of a payment
// intent: the order whose bank-transfer order it is, "" when none.
func TransferOrderID(ctx context.Context, tx pgx.Tx, projectID, paymentIntent string) (string, error) {
	var id string
	err := tx.QueryRow(ctx, `SELECT order_id::text FROM provider_transfers WHERE project_id = $1 AND payment_intent_id = $2`,
		projectID, paymentIntent).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return id, err
}
