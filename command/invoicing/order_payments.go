package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// providerName is how the payment provider is named on documents.
const providerName = "Stripe"

// appliedPaymentTx is the provider payment that paid order o (the first
// payment_intent.succeeded matched to it), with how the buyer paid; ok is
// false when the order is not paid. Its amount is what the provider
// received, less refunds already documented by credit notes (a refund
// still pending gets its own credit note after the invoice).
func appliedPaymentTx(ctx context.Context, tx pgx.Tx, o *orders.Locked, gateway string) (billing.ReceivedPayment, bool, error) {
	if o.PaidCents == nil || o.PaidAt == nil {
		return billing.ReceivedPayment{}, false, nil
	}
	p := billing.ReceivedPayment{Provider: providerName, Date: *o.PaidAt}
	var method []byte
	err := tx.QueryRow(ctx, `SELECT payment_ref, received_at, method FROM payments
		WHERE order_id = $1 AND event_type = 'payment_intent.succeeded'
		ORDER BY matched_at, received_at LIMIT 1`, o.ID).Scan(&p.Reference, &p.Date, &method)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return billing.ReceivedPayment{}, false, fmt.Errorf("payment of order %s: %w", o.OrderNo, err)
	}
	if len(method) > 0 {
		if err := json.Unmarshal(method, &p.Method); err != nil {
			return billing.ReceivedPayment{}, false, fmt.Errorf("payment method of order %s: %w", o.OrderNo, err)
		}
	}
	if p.Method.Kind == billing.MethodUnknown && gateway == orders.GatewayProviderTransfer {
		p.Method.Kind = billing.MethodProviderTransfer
	}
	p.Cents = money.Cents(*o.PaidCents - o.RefundedCents + o.RefundPending)
	return p, p.Cents > 0, nil
}

// lastRefundTx is when the provider last reported a refund of order o.
func lastRefundTx(ctx context.Context, tx pgx.Tx, orderID string) (time.Time, error) {
	var at *time.Time
	err := tx.QueryRow(ctx, `SELECT max(p.received_at) FROM provider_refunds r JOIN payments p ON p.id = r.payment_id
		WHERE r.order_id = $1`, orderID).Scan(&at)
	if err != nil || at == nil {
		return time.Time{}, err
	}
	return *at, nil
}

// lastCancelledInvoiceTx is the number of the order's invoice cancelled
// last, "" when none is.
func lastCancelledInvoiceTx(ctx context.Context, tx pgx.Tx, orderID string) (string, error) {
	var number string
	err := tx.QueryRow(ctx, `SELECT i.number FROM invoices i JOIN invoices c ON c.cancels = i.id
		WHERE i.order_id = $1 AND i.type = 'invoice' ORDER BY c.created_at DESC, c.seq DESC LIMIT 1`, orderID).Scan(&number)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return number, err
}
