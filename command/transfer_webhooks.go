package command

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
)

// The payment provider's events about the payment order of a bank transfer
// through the provider (paymentGateway provider_transfer):
// command/invoicing/provider_transfer.go describes the whole flow.

// cancelTransferTx handles payment_intent.canceled: the order of the
// payment intent is cancelled (its documents get cancellations) unless it
// was paid. It returns the order number, "" when the payment intent is no
// order's.
func cancelTransferTx(ctx context.Context, tx pgx.Tx, projectID, paymentIntent string) (string, bool, error) {
	id, err := orders.TransferOrderID(ctx, tx, projectID, paymentIntent)
	if err != nil || id == "" {
		return "", false, err
	}
	o, err := orders.Lock(ctx, tx, projectID, "id", id)
	if err != nil {
		return "", false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE provider_transfers SET cancelled_at = coalesce(cancelled_at, now()) WHERE order_id = $1`, id); err != nil {
		return "", false, err
	}
	if o.PaidAt != nil || o.Status == "cancelled" {
		return o.OrderNo, false, nil
	}
	applied, err := cancelTx(ctx, tx, projectID, &o, "payment order cancelled at the payment provider")
	return o.OrderNo, applied, err
}

// underpaidTransferTx handles payment_intent.partially_funded: the customer
// transferred less than the payment order's amount, which opens a
// payment_amount_mismatch task for the order (the invoice stands; Stripe
// keeps the payment intent open for the rest). It returns the order
// number, "" when the payment intent is no order's.
func underpaidTransferTx(ctx context.Context, tx pgx.Tx, projectID, paymentIntent string, amount int64, remaining *int64) (string, error) {
	id, err := orders.TransferOrderID(ctx, tx, projectID, paymentIntent)
	if err != nil || id == "" {
		return "", err
	}
	var orderNo string
	var due int64
	if err := tx.QueryRow(ctx, `SELECT order_no, amount_cents FROM provider_transfers WHERE order_id = $1`, id).Scan(&orderNo, &due); err != nil {
		return "", err
	}
	details := map[string]any{"orderNo": orderNo, "paymentIntent": paymentIntent, "dueCents": due,
		"details": "the bank transfer is short of the amount due; the rest is still open at the payment provider"}
	if remaining != nil {
		details["remainingCents"] = *remaining
		details["paidCents"] = due - *remaining
	}
	return orderNo, orders.OpenTask(ctx, tx, projectID, orders.TaskPaymentAmountMismatch, orderNo, details)
}
