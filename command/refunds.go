package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/event"
)

// Refunds reported by the payment provider (Stripe charge.refunded, whose
// amount_refunded is the charge's refunded total so far):
//   - the whole charge refunded at once cancels the order: every document
//     gets a cancellation, and an order not invoiced yet never is;
//   - anything else is a partial refund: the refunded gross since the last
//     report is pending on the order until the invoicer issues a credit note
//     for it (billing.Refund, type code 381) against the order's invoice,
//     once the order has one;
//   - a report that refunds nothing new (a repeat, or out of order) changes
//     nothing.
//
// An order cancelled after partial refunds does not cancel its invoice in
// full: what the credit notes left is credited by one more
// (cancelDocumentsTx of command/invoicing, billing.CancelRemainder).

// TaskRefundWithoutOrder: a refund arrived for a paymentRef no order has.
const TaskRefundWithoutOrder = "refund_without_order"

// refundOrder applies a refund report (the payments row paymentID) for the
// order with paymentRef ref in tx: refunded is the charge's refunded total so
// far, charged the charge's amount, full Stripe's "refunded" flag. What it
// refunds anew is kept in provider_refunds for the accounting export. It
// returns the orderNo ("" when no order has ref) and whether anything changed.
func refundOrder(ctx context.Context, tx pgx.Tx, projectID, paymentID, ref string, refunded, charged int64, full bool) (string, bool, error) {
	o, err := orders.Lock(ctx, tx, projectID, "payment_ref", ref)
	if errors.Is(err, pgx.ErrNoRows) {
		// A bank transfer through the provider: the payment intent is the
		// order's payment order (command/invoicing/provider_transfer.go).
		id, terr := orders.TransferOrderID(ctx, tx, projectID, ref)
		if terr != nil || id == "" {
			return "", false, terr
		}
		o, err = orders.Lock(ctx, tx, projectID, "id", id)
	}
	if err != nil {
		return "", false, err
	}
	increment := refunded - o.RefundedCents
	if increment <= 0 || o.Status == "cancelled" {
		return o.OrderNo, false, nil
	}
	whole := (full || refunded >= charged) && o.RefundedCents == 0
	if _, err := tx.Exec(ctx, `INSERT INTO provider_refunds (payment_id, project_id, order_id, amount_cents, full_refund)
		VALUES ($1, $2, $3, $4, $5)`, paymentID, projectID, o.ID, increment, whole); err != nil {
		return "", false, fmt.Errorf("record refund: %w", err)
	}
	if whole {
		_, err := cancelTx(ctx, tx, projectID, &o, "refunded in full")
		return o.OrderNo, true, err
	}
	err = tx.QueryRow(ctx, `UPDATE orders SET refunded_cents = $2, refund_pending_cents = refund_pending_cents + $3,
			version = version + 1, updated_at = now()
		WHERE id = $1 RETURNING version, updated_at, refund_pending_cents`, o.ID, refunded, increment).
		Scan(&o.Version, &o.UpdatedAt, &o.RefundPending)
	if err != nil {
		return "", false, err
	}
	o.RefundedCents = refunded
	return o.OrderNo, true, o.EnqueueState(ctx, tx, projectID, event.OrderUpdated)
}
