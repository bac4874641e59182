package billing

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// Partial refunds (Rechnungskorrektur)
//
// A refund of part of what the buyer paid reduces the taxable amount of the
// original invoice (§17 UStG). The seller documents it with a credit note of
// its own (type code 381, positive amounts, its own number from the same
// range) that references the original (BG-3: BT-25 number, BT-26 date). It
// is titled "Rechnungskorrektur", never "Gutschrift" (self-billing in
// German law).
//
// The refunded gross is split over the original's VAT breakdown by the
// breakdown's gross (base + VAT) with the largest remainder method, so each
// cent is accounted for exactly once; each part becomes one line whose net
// is the amount with net + round(net x rate) = part. When no net reaches a
// part exactly (a rate step skips that cent), the nearest is taken and the
// difference goes to the rounding amount BT-114, so the amount refunded is
// exactly what the provider paid back. A full refund is no credit note but a
// cancellation (Cancel).

// Refund returns the credit note of a partial refund of gross (what the
// buyer gets back, in cents) of orig, with its own number and issue date;
// paidBack says whether and how the provider paid it back already (see
// SettleCreditNote).
func Refund(orig Invoice, number string, issueDate time.Time, gross money.Cents, paidBack RefundSettlement) (Invoice, error) {
	if orig.Kind != KindInvoice && orig.Kind != KindVoucherSale {
		return Invoice{}, fmt.Errorf("billing: %s is a %s, not an invoice", orig.Number, orig.Kind)
	}
	paid := orig.Totals.GrandCents + orig.Totals.RoundingCents
	if gross <= 0 || gross >= paid {
		return Invoice{}, fmt.Errorf("billing: a partial refund of %s is more than 0 and less than %s, got %s", orig.Number, paid, gross)
	}
	if strings.HasPrefix(number, "TEST-") != orig.Test {
		return Invoice{}, fmt.Errorf("billing: credit note number %q is not from the range of %s", number, orig.Number)
	}
	parts, err := money.Allocate(gross, grossByRate(orig))
	if err != nil {
		return Invoice{}, fmt.Errorf("billing: split refund of %s: %w", orig.Number, err)
	}
	c, err := creditNote(orig, number, issueDate, parts, "Erstattung zur Rechnung %s (USt %s %%)")
	if err != nil {
		return Invoice{}, err
	}
	if paidBack.Currency == "" {
		paidBack.Currency = orig.Currency
	}
	c.settle(SettleCreditNote(c.Totals.GrandCents+c.Totals.RoundingCents, paidBack, issueDate))
	if orig.Test {
		c.Notes = append(c.Notes, TestNote)
	}
	c.Notes = append(c.Notes, fmt.Sprintf("Rechnungskorrektur zur Rechnung %s vom %s: Teilerstattung von %s %s brutto, "+
		"aufgeteilt nach den Steuersätzen der Rechnung.", orig.Number, orig.IssueDate.Format("02.01.2006"), gross, orig.Currency))
	if err := Invariants(&c); err != nil {
		return Invoice{}, fmt.Errorf("billing: refund of %s: %w", orig.Number, err)
	}
	return c, nil
}

// Cancellation of what earlier credit notes left (order cancelled after a
// partial refund)
//
// When an order whose invoice already has credit notes is cancelled, a full
// cancellation would credit the refunded part twice. Instead the invoice is
// cancelled by one more credit note over exactly what is left: for each
// entry of the original's VAT breakdown its gross (base + VAT) less the
// gross the credit notes took back at the same category and rate, plus the
// original's rounding amount less theirs, so the invoice and all its credit
// notes sum to zero. Store credit that paid the original stays paid amount
// (BT-113), as in a cancellation.

// CancelRemainder returns the credit note that cancels what of orig its
// earlier credit notes (credited) have not taken back yet, with its own
// number and issue date, and false when nothing is left to credit.
func CancelRemainder(orig Invoice, credited []Invoice, number string, issueDate time.Time) (Invoice, bool, error) {
	r, err := RemainderOf(orig, credited)
	if err != nil || r.Empty() {
		return Invoice{}, false, err
	}
	c, err := r.CreditNote(number, issueDate)
	return c, err == nil, err
}

// Remainder is what of an invoice its credit notes have not taken back yet.
type Remainder struct {
	orig     Invoice
	parts    []money.Cents // gross left per entry of orig's VAT breakdown
	rounding money.Cents   // rounding amount left
	notes    []string      // the credit notes' numbers
}

// RemainderOf sums what orig's credit notes (credited) took back per VAT
// rate and returns what is left.
func RemainderOf(orig Invoice, credited []Invoice) (Remainder, error) {
	if orig.Kind != KindInvoice && orig.Kind != KindVoucherSale {
		return Remainder{}, fmt.Errorf("billing: %s is a %s, not an invoice", orig.Number, orig.Kind)
	}
	index := make(map[groupKey]int, len(orig.VAT))
	for i, v := range orig.VAT {
		index[groupKey{v.Category, v.Rate.String()}] = i
	}
	r := Remainder{orig: orig, parts: grossByRate(orig), rounding: orig.Totals.RoundingCents}
	for _, n := range credited {
		if n.Kind != KindCreditNote || n.Preceding == nil || n.Preceding.Number != orig.Number {
			return Remainder{}, fmt.Errorf("billing: %s is no credit note of %s", n.Number, orig.Number)
		}
		for _, v := range n.VAT {
			i, ok := index[groupKey{v.Category, v.Rate.String()}]
			if !ok {
				return Remainder{}, fmt.Errorf("billing: credit note %s credits VAT %s %s %%, which %s does not have",
					n.Number, v.Category, v.Rate, orig.Number)
			}
			r.parts[i] -= v.BaseCents + v.TaxCents
		}
		r.rounding -= n.Totals.RoundingCents
		r.notes = append(r.notes, n.Number)
	}
	return r, nil
}

func (r Remainder) total() money.Cents {
	var t money.Cents
	for _, p := range r.parts {
		t += p
	}
	return t
}

// Empty reports whether the credit notes took everything back (a cent of
// rounding at most): nothing is left to cancel.
func (r Remainder) Empty() bool { return r.total() <= 0 || r.total()+r.rounding <= 0 }

// CreditNote returns the credit note over the remainder, with its own
// number and issue date. The remainder must not be Empty.
func (r Remainder) CreditNote(number string, issueDate time.Time) (Invoice, error) {
	orig := r.orig
	if r.Empty() {
		return Invoice{}, fmt.Errorf("billing: nothing of %s is left to cancel", orig.Number)
	}
	if strings.HasPrefix(number, "TEST-") != orig.Test {
		return Invoice{}, fmt.Errorf("billing: credit note number %q is not from the range of %s", number, orig.Number)
	}
	left, total := r.parts, r.total()
	if slices.ContainsFunc(left, func(l money.Cents) bool { return l < 0 }) {
		// A rate the credit notes took a cent more of than it had (each
		// note splits its own amount): what is left is split over the
		// rates with something left, in proportion.
		weights := make([]money.Cents, len(left))
		for i, l := range left {
			weights[i] = max(l, 0)
		}
		var err error
		if left, err = money.Allocate(total, weights); err != nil {
			return Invoice{}, fmt.Errorf("billing: split the remainder of %s: %w", orig.Number, err)
		}
	}
	c, err := creditNote(orig, number, issueDate, left, "Stornierung des verbleibenden Betrags der Rechnung %s (USt %s %%)")
	if err != nil {
		return Invoice{}, err
	}
	t := &c.Totals
	t.RoundingCents += r.rounding
	t.DueCents = t.GrandCents + t.RoundingCents
	c.settleByOffset(orig)
	if orig.Test {
		c.Notes = append(c.Notes, TestNote)
	}
	after := "der Rechnungskorrektur"
	if len(r.notes) > 1 {
		after = "den Rechnungskorrekturen"
	}
	c.Notes = append(c.Notes, fmt.Sprintf("Stornierung der Rechnung %s vom %s: der nach %s %s verbleibende "+
		"Betrag von %s %s brutto wird gutgeschrieben.", orig.Number, orig.IssueDate.Format("02.01.2006"),
		after, strings.Join(r.notes, ", "), t.PrepaidCents, orig.Currency))
	if err := Invariants(&c); err != nil {
		return Invoice{}, fmt.Errorf("billing: cancel the remainder of %s: %w", orig.Number, err)
	}
	return c, nil
}

// grossByRate is the gross (base + VAT) of each entry of orig's VAT
// breakdown, in its order.
func grossByRate(orig Invoice) []money.Cents {
	out := make([]money.Cents, len(orig.VAT))
	for i, v := range orig.VAT {
		out[i] = v.BaseCents + v.TaxCents
	}
	return out
}

// creditNote returns the credit note (381, positive amounts) against orig
// with one line per entry of orig's VAT breakdown whose part of parts (in
// cents gross, in the breakdown's order) is not zero: its net is the amount
// with net + round(net x rate) = part, the nearest when no net reaches the
// part exactly, and the difference goes to the rounding amount BT-114, so
// the amount due is the sum of parts. lineName formats the line's name from
// orig's number and the rate. Notes and payment terms are the caller's.
func creditNote(orig Invoice, number string, issueDate time.Time, parts []money.Cents, lineName string) (Invoice, error) {
	if len(parts) != len(orig.VAT) {
		return Invoice{}, fmt.Errorf("billing: %d parts for the %d VAT rates of %s", len(parts), len(orig.VAT), orig.Number)
	}
	c := Invoice{
		Number: number, Kind: KindCreditNote, TypeCode: TypeCreditNote, Format: orig.Format, Test: orig.Test,
		IssueDate: dateOf(issueDate), Currency: orig.Currency, OrderNo: orig.OrderNo, BuyerReference: orig.BuyerReference,
		Seller: orig.Seller, Buyer: orig.Buyer, Treatment: orig.Treatment, Goods: orig.Goods,
		SupplyDate: orig.SupplyDate, Period: orig.Period, Preceding: &Reference{Number: orig.Number, IssueDate: orig.IssueDate},
		OSSReport: orig.OSSReport, ECSalesList: orig.ECSalesList, Destination: orig.Destination,
	}
	if orig.ShipTo != nil {
		st := *orig.ShipTo
		c.ShipTo = &st
	}
	kind := LineService
	if orig.Goods {
		kind = LineGoods
	}
	var t Totals
	for i, v := range orig.VAT {
		if parts[i] == 0 {
			continue
		}
		if parts[i] < 0 {
			return Invoice{}, fmt.Errorf("billing: credit note of %s: negative part %s at %s %%", orig.Number, parts[i], v.Rate)
		}
		net, residual, err := netForGross(parts[i], 0, v.Rate)
		if err != nil {
			return Invoice{}, err
		}
		tax, err := money.Percent(net, v.Rate)
		if err != nil {
			return Invoice{}, err
		}
		c.Lines = append(c.Lines, Line{
			ID: fmt.Sprint(len(c.Lines) + 1), Kind: kind, Quantity: money.Int(1), UnitCode: unitPiece,
			Name:         fmt.Sprintf(lineName, orig.Number, v.Rate),
			UnitNetPrice: money.CentsDecimal(net), NetCents: net, Category: v.Category, Rate: v.Rate,
		})
		c.VAT = append(c.VAT, VATBreakdown{Category: v.Category, Rate: v.Rate, BaseCents: net, TaxCents: tax,
			ExemptionReason: v.ExemptionReason, ExemptionCode: v.ExemptionCode})
		t.LineNetCents += net
		t.TaxCents += tax
		t.RoundingCents += residual
	}
	t.TaxBasisCents = t.LineNetCents
	t.GrandCents = t.TaxBasisCents + t.TaxCents
	t.DueCents = t.GrandCents + t.RoundingCents
	c.Totals = t
	return c, nil
}

// settle puts s's payment block on inv.
func (inv *Invoice) settle(s Settled) {
	t := &inv.Totals
	t.PrepaidCents, t.PaidCents, t.OffsetCents, t.DueCents = s.PrepaidCents, s.PaidCents, 0, s.DueCents
	inv.Payment = s.Means
}

// settleByOffset settles the cancelling document inv (a cancellation, or
// the credit note over a remainder) by offset against orig: BT-113 is its
// whole amount, of which the store credit that paid orig (as far as inv
// takes it back) is credit given back and the rest an offset.
func (inv *Invoice) settleByOffset(orig Invoice) {
	t := &inv.Totals
	payable := t.GrandCents + t.RoundingCents
	credit := orig.Totals.StoreCreditCents()
	if payable < 0 { // a 384 cancellation: amounts negative
		credit = -min(max(credit, 0), -payable)
	} else {
		credit = min(max(credit, 0), payable)
	}
	inv.settle(SettleCancellation(payable, *inv.Preceding))
	t.OffsetCents = payable - credit
}
