package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// Credit notes of the partial refunds the payment provider reported
// (command/refunds.go records a refund on its order as pending).

// IssueCreditNotes issues the credit note of the refund pending on the
// order against its invoice, in one transaction, and returns it. It does
// nothing while the order has no invoice yet (the note follows the
// invoice) or no refund pending; a cancelled order's pending refund is
// covered by its cancellations and dropped.
func (s *Service) IssueCreditNotes(ctx context.Context, projectID, orderID string, issueDate time.Time) (out []Issued, err error) {
	defer apperr.Wrap(&err, "issue credit notes of order %s", orderID)
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := orders.Lock(ctx, tx, projectID, "id", orderID)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.New(apperr.NotFound, "order_not_found", "no order %s", orderID)
		}
		if err != nil || o.RefundPending == 0 {
			return err
		}
		var content event.OrderContent
		if err := json.Unmarshal(o.Content, &content); err != nil {
			return fmt.Errorf("order content: %w", err)
		}
		now := time.Now().UTC()
		var evs []event.Event
		if o.Status == "invoiced" {
			var id string
			var document []byte
			err := tx.QueryRow(ctx, `SELECT id::text, document FROM invoices i
				WHERE order_id = $1 AND type = 'invoice' AND failed_rules = '{}'
				AND NOT EXISTS (SELECT 1 FROM invoices c WHERE c.cancels = i.id)
				ORDER BY created_at DESC, seq DESC LIMIT 1`, o.ID).Scan(&id, &document)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // no invoice to correct yet
			}
			if err != nil {
				return err
			}
			if document == nil {
				return fmt.Errorf("invoice %s: %w", id, errNotCancellable)
			}
			var orig billing.Invoice
			if err := json.Unmarshal(document, &orig); err != nil {
				return fmt.Errorf("invoice %s document: %w", id, err)
			}
			p, err := project.Get(ctx, tx, projectID)
			if err != nil {
				return err
			}
			mode := p.Seller()
			mode.TestMode = orig.Test
			pattern, err := billing.PatternFor(mode)
			if err != nil {
				return err
			}
			rangeKey, seq, numbers, err := takeNumbers(ctx, tx, projectID, pattern, issueDate.Year(), 1)
			if err != nil {
				return err
			}
			// The provider paid the refund back through the original means
			// already (it reported it): the note says so, nothing is due.
			paidBack := billing.RefundSettlement{Refunded: true, Currency: orig.Currency,
				Refund: billing.ReceivedPayment{Provider: providerName, Reference: content.PaymentRef, Cents: money.Cents(o.RefundPending)}}
			if paid, ok, err := appliedPaymentTx(ctx, tx, &o, content.PaymentGateway); err != nil {
				return err
			} else if ok {
				paidBack.Refund.Reference, paidBack.Refund.Method = paid.Reference, paid.Method
			}
			if paidBack.Refund.Date, err = lastRefundTx(ctx, tx, o.ID); err != nil {
				return err
			}
			if paidBack.Refund.Date.IsZero() {
				paidBack.Refund.Date = now
			}
			note, err := billing.Refund(orig, numbers[0], issueDate, money.Cents(o.RefundPending), paidBack)
			if err != nil {
				return err
			}
			doc, ev, err := recordDocumentTx(ctx, tx, projectID, o.ID, o.OrderNo, content.PaymentRef, note, rangeKey, seq, "", now)
			if err != nil {
				return err
			}
			out, evs = append(out, doc), append(evs, ev)
		} else if o.Status != "cancelled" {
			return nil // not invoiced yet: the note follows the invoice
		}
		err = tx.QueryRow(ctx, `UPDATE orders SET refund_pending_cents = 0, version = version + 1, updated_at = $2
			WHERE id = $1 RETURNING version, updated_at`, o.ID, now).Scan(&o.Version, &o.UpdatedAt)
		if err != nil {
			return err
		}
		o.RefundPending = 0
		ev, err := event.New(event.OrderUpdated, projectID, "order", o.ID, o.OrderNo, o.Version, now, o.State(projectID, content))
		if err != nil {
			return err
		}
		return outbox.Enqueue(ctx, tx, append(evs, ev)...)
	})
	return out, err
}
