package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/banktransfer"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// Bank transfer through the payment provider (paymentGateway
// provider_transfer, an order with an e-mail): the invoice is due like an
// invoice-first open item (services at once, goods at the shipping report),
// but before it is issued the invoicer creates the payment order at the
// provider (banktransfer: customer by e-mail, PaymentIntent for exactly the
// order's gross, customer_balance / eu_bank_transfer) and records it in
// provider_transfers; the invoice then shows the customer's virtual IBAN and
// the provider's reference (payment means 58, BT-84, BT-83). The provider's
// payment_intent.succeeded for that payment intent closes the open item (a
// payment that is not the amount due opens payment_amount_mismatch);
// payment_intent.canceled before payment cancels the order, so its invoice
// gets a cancellation.
//
// A provider key without write rights for customers or payment intents
// holds the order with an urgent provider_rights_missing task (mailed to
// the invoice contact), without an invoice; the reconciler tries again
// every round and the invoice follows once the rights exist. Any other
// failure (the provider down, or not answering within its timeout) sends
// the event to the retry table at once (dependencies.go: a breaker per
// project refuses further calls while the provider keeps failing); the
// Idempotency-Keys per order and step make a retry return what the first
// attempt created, never a second payment order.

// PrepareTransfer makes sure the order has its payment order at the
// provider, creating it when missing. A key without rights records the
// hold (an urgent task) and returns a *HeldError.
func (s *Service) PrepareTransfer(ctx context.Context, bt *banktransfer.Client, projectID, orderID string) (err error) {
	defer func() {
		if err != nil {
			var held *HeldError
			if !errors.As(err, &held) {
				err = fmt.Errorf("bank transfer of order %s: %w", orderID, err)
			}
		}
	}()
	var raw []byte
	var orderNo, status string
	var paid bool
	if err := s.pool.QueryRow(ctx, `SELECT order_no, status, paid_at IS NOT NULL, content FROM orders WHERE project_id = $1 AND id = $2`,
		projectID, orderID).Scan(&orderNo, &status, &paid, &raw); err != nil {
		return err
	}
	if status != "created" || paid {
		return nil // invoiced, cancelled or paid: no payment order to create
	}
	var content event.OrderContent
	if err := json.Unmarshal(raw, &content); err != nil {
		return err
	}
	p, err := project.Get(ctx, s.pool, projectID)
	if err != nil {
		return err
	}
	amount, err := amountPayable(content, p.Seller())
	if err != nil {
		return err
	}
	// A payment order for this amount exists already; one for another
	// amount (a correction changed the order) is replaced.
	var prevIntent string
	var prevAmount int64
	generation := 1
	err = s.pool.QueryRow(ctx, `SELECT payment_intent_id, amount_cents, generation FROM provider_transfers WHERE order_id = $1`, orderID).
		Scan(&prevIntent, &prevAmount, &generation)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		generation = 0
	case err != nil:
		return err
	case prevAmount == amount:
		return nil
	}
	generation++
	if bt == nil {
		return errors.New("no payment provider client configured")
	}
	currency := content.Currency
	if currency == "" {
		currency = "EUR"
	}
	name := content.BillingAddress.CompanyName
	if name == "" {
		name = content.BillingAddress.Name
	}
	var in banktransfer.Instructions
	err = s.provider(ctx, projectID, func(ctx context.Context) (err error) {
		in, err = bt.Create(ctx, p.Settings.StripeAPIKey, banktransfer.Request{OrderID: orderID, OrderNo: orderNo, Email: content.Email,
			Name: name, AmountCents: amount, Currency: currency, Generation: generation})
		return err
	})
	var rights *banktransfer.RightsError
	if errors.As(err, &rights) {
		h := &HeldError{Kind: orders.TaskProviderRightsMissing, Details: rights.Error() + ": give the API key write rights for customers and payment intents; the invoice follows automatically"}
		slog.WarnContext(ctx, "invoicer: payment provider refused the payment order", "orderNo", orderNo, "err", err)
		// The key is the project's: one task holds all its orders that wait
		// for it (one notice), released when the key changes or on a recheck.
		return errors.Join(h, store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
			o, err := orders.Lock(ctx, tx, projectID, "id", orderID)
			if err != nil {
				return err
			}
			h.TaskID, err = orders.HoldTx(ctx, tx, projectID, &o, h.Kind, project.SharedSubject,
				map[string]any{"cause": h.Kind, "details": h.Details})
			return err
		}))
	}
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO provider_transfers (order_id, project_id, order_no, customer_id, payment_intent_id, amount_cents,
			currency, iban, bic, account_holder, reference, generation) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (order_id) DO UPDATE SET customer_id = EXCLUDED.customer_id, payment_intent_id = EXCLUDED.payment_intent_id,
			amount_cents = EXCLUDED.amount_cents, currency = EXCLUDED.currency, iban = EXCLUDED.iban, bic = EXCLUDED.bic,
			account_holder = EXCLUDED.account_holder, reference = EXCLUDED.reference, generation = EXCLUDED.generation, cancelled_at = NULL
		WHERE provider_transfers.generation < EXCLUDED.generation`, orderID, projectID, orderNo, in.CustomerID, in.PaymentIntentID,
		in.AmountCents, currency, in.IBAN, orders.Nullable(in.BIC), orders.Nullable(in.AccountHolder), in.Reference, generation)
	if err != nil || prevIntent == "" || prevIntent == in.PaymentIntentID {
		return err
	}
	// The replaced payment order is cancelled at the provider; its
	// payment_intent.canceled then matches no order any more. A failure
	// leaves it open there (a payment to it waits as payment_without_order).
	cerr := s.provider(ctx, projectID, func(ctx context.Context) error { return bt.Cancel(ctx, p.Settings.StripeAPIKey, prevIntent) })
	if cerr != nil {
		slog.WarnContext(ctx, "invoicer: cancelling the replaced payment order", "orderNo", orderNo, "paymentIntent", prevIntent, "err", cerr)
	}
	return nil
}

// amountPayable is what the order's documents will ask for: the sum of
// their amounts due, computed as the invoicer will (with placeholder numbers of the range).
func amountPayable(c event.OrderContent, seller billing.Seller) (int64, error) {
	o := orders.BillingOrder(c, nil)
	now := time.Now().UTC()
	pattern, err := billing.PatternFor(seller)
	if err != nil {
		return 0, err
	}
	numbers := make([]string, billing.Documents(o))
	for i := range numbers {
		if numbers[i], err = pattern.Format(now.Year(), i+1); err != nil {
			return 0, err
		}
	}
	docs, err := billing.Compute(o, seller, billing.Context{IssueDate: now, SupplyDate: now, PaymentDate: now, Numbers: numbers})
	if err != nil {
		return 0, err
	}
	var due int64
	for _, d := range docs {
		due += int64(d.Totals.DueCents)
	}
	return due, nil
}

// transferOfTx returns the order's bank-transfer order for its invoice, or
// nil when it has none yet.
func transferOfTx(ctx context.Context, tx pgx.Tx, orderID string) (*billing.BankTransfer, error) {
	var t billing.BankTransfer
	var bic, holder *string
	err := tx.QueryRow(ctx, `SELECT iban, bic, account_holder, reference FROM provider_transfers WHERE order_id = $1`, orderID).
		Scan(&t.IBAN, &bic, &holder, &t.Reference)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if bic != nil {
		t.BIC = *bic
	}
	if holder != nil {
		t.AccountHolder = *holder
	}
	return &t, nil
}
