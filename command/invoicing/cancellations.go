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
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// errNotCancellable: a document issued before the service stored the
// computed documents has nothing to mirror; it is never cancelled
// automatically (the dead letter's task says so).
var errNotCancellable = errors.New("issued before documents were stored: cancel it by hand")

// CancelSuperseded issues the cancellations of an order whose documents no
// longer match it (correction pending: its invoice-relevant content or date
// of supply changed after invoicing, or it was cancelled), in one
// transaction, and returns them. It does nothing when no correction is
// pending, so calling it again is harmless. New invoices of a corrected
// order come from IssueInvoices, which cancels first itself.
func (s *Service) CancelSuperseded(ctx context.Context, projectID, orderID string, issueDate time.Time) (out []Issued, err error) {
	defer apperr.Wrap(&err, "cancel superseded documents of order %s", orderID)
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := orders.Lock(ctx, tx, projectID, "id", orderID)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.New(apperr.NotFound, "order_not_found", "no order %s", orderID)
		}
		if err != nil || !o.CorrectionPending {
			return err
		}
		var content event.OrderContent
		if err := json.Unmarshal(o.Content, &content); err != nil {
			return fmt.Errorf("order content: %w", err)
		}
		p, err := project.Get(ctx, tx, projectID)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		var evs []event.Event
		if out, evs, err = s.cancelDocumentsTx(ctx, tx, projectID, &o, content.PaymentRef, p.Seller(), issueDate, now); err != nil {
			return err
		}
		return saveOrderTx(ctx, tx, projectID, &o, content, o.Status, now, evs)
	})
	return out, err
}

// cancelDocumentsTx issues a cancellation (billing.DefaultCancellation,
// referencing the original's number and date) for every document of the
// order that is neither a cancellation, cancelled already, nor one that
// broke rules (failed_rules: recorded so by earlier versions; a document
// failed in archiving is issued and is cancelled like any other). Each
// takes the next number of the range of its original's mode (test or live)
// for the year of issueDate. When the order is cancelled (not corrected), an
// invoice that credit notes of partial refunds corrected already is
// cancelled by one more credit note over what they left
// (billing.RemainderOf), or by nothing when they credited it all: a full
// cancellation would credit the refunded part twice. A corrected order keeps
// its refunds credited, so its invoice is cancelled in full.
func (s *Service) cancelDocumentsTx(ctx context.Context, tx pgx.Tx, projectID string, o *orders.Locked, paymentRef string,
	seller billing.Seller, issueDate, now time.Time) ([]Issued, []event.Event, error) {
	rows, err := tx.Query(ctx, `SELECT id::text, number, document FROM invoices i
		WHERE order_id = $1 AND type IN ('invoice', 'voucher_sale') AND failed_rules = '{}'
		AND NOT EXISTS (SELECT 1 FROM invoices c WHERE c.cancels = i.id)
		ORDER BY created_at, seq`, o.ID)
	if err != nil {
		return nil, nil, err
	}
	type active struct {
		id, number string
		document   []byte
	}
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (active, error) {
		var a active
		err := r.Scan(&a.id, &a.number, &a.document)
		return a, err
	})
	if err != nil {
		return nil, nil, err
	}
	credited := map[string][]billing.Invoice{} // credit notes by the number of the invoice they correct
	if o.Status == "cancelled" && len(docs) > 0 {
		if credited, err = creditNotesTx(ctx, tx, o.ID); err != nil {
			return nil, nil, err
		}
	}
	var out []Issued
	var evs []event.Event
	for _, a := range docs {
		if a.document == nil {
			return nil, nil, fmt.Errorf("invoice %s: %w", a.number, errNotCancellable)
		}
		var orig billing.Invoice
		if err := json.Unmarshal(a.document, &orig); err != nil {
			return nil, nil, fmt.Errorf("invoice %s document: %w", a.number, err)
		}
		var rest *billing.Remainder
		if notes := credited[orig.Number]; len(notes) > 0 {
			r, err := billing.RemainderOf(orig, notes)
			if err != nil {
				return nil, nil, err
			}
			if r.Empty() {
				continue // credited in full already: nothing issued, no number taken
			}
			rest = &r
		}
		mode := seller
		mode.TestMode = orig.Test
		pattern, err := billing.PatternFor(mode)
		if err != nil {
			return nil, nil, err
		}
		rangeKey, seq, numbers, err := takeNumbers(ctx, tx, projectID, pattern, issueDate.Year(), 1)
		if err != nil {
			return nil, nil, err
		}
		var c billing.Invoice
		if rest != nil {
			c, err = rest.CreditNote(numbers[0], issueDate)
		} else {
			c, err = billing.Cancel(orig, numbers[0], issueDate, billing.DefaultCancellation)
		}
		if err != nil {
			return nil, nil, err
		}
		doc, ev, err := recordDocumentTx(ctx, tx, projectID, o.ID, o.OrderNo, paymentRef, c, rangeKey, seq, a.id, now)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, doc)
		evs = append(evs, ev)
	}
	return out, evs, nil
}

// creditNotesTx returns the credit notes of partial refunds of the order
// (but one that broke rules), by the number of the invoice each corrects.
func creditNotesTx(ctx context.Context, tx pgx.Tx, orderID string) (map[string][]billing.Invoice, error) {
	rows, err := tx.Query(ctx, `SELECT number, document FROM invoices
		WHERE order_id = $1 AND type = 'credit_note' AND failed_rules = '{}'
		ORDER BY created_at, seq`, orderID)
	if err != nil {
		return nil, err
	}
	type note struct {
		number   string
		document []byte
	}
	notes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (note, error) {
		var n note
		err := r.Scan(&n.number, &n.document)
		return n, err
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]billing.Invoice{}
	for _, n := range notes {
		if n.document == nil {
			return nil, fmt.Errorf("credit note %s: %w", n.number, errNotCancellable)
		}
		var inv billing.Invoice
		if err := json.Unmarshal(n.document, &inv); err != nil {
			return nil, fmt.Errorf("credit note %s document: %w", n.number, err)
		}
		if inv.Preceding != nil {
			out[inv.Preceding.Number] = append(out[inv.Preceding.Number], inv)
		}
	}
	return out, nil
}
