package billing

import (
	"fmt"
	"strings"
	"time"
)

// Cancellations (Stornorechnung)
//
// A cancellation is a document of its own, with its own number from the same
// range, that references the cancelled invoice (BG-3: BT-25 number, BT-26
// date) and reverses it completely. Two forms pass the official rules
// (EN 16931 CEN schematron and XRechnung 3.0, checked in render's tests):
//
//   - TypeCreditNote (381) with the original's positive amounts: the sign is
//     carried by the document type. This is DefaultCancellation: it needs no
//     negative quantities and every receiving system understands it.
//   - TypeCorrected (384) with negated quantities and amounts (unit prices
//     stay positive, BR-27).
//
// In both, the document is titled "Stornorechnung" in its notes, never
// "Gutschrift" (which in German law means self-billing, §14 Abs. 2 S. 2
// UStG; a seller's correction called Gutschrift risks §14c UStG). A
// cancellation settles by offset against the invoice it cancels: BT-113 is
// its grand total and BT-115 is 0 (SettleCancellation); money the buyer
// paid goes back with the provider's refund, booked with the refund.

// DefaultCancellation is the document type used for cancellations.
const DefaultCancellation = TypeCreditNote

// Cancel returns the cancellation of orig with its own number and issue date,
// as type 381 (positive amounts) or 384 (negative amounts).
func Cancel(orig Invoice, number string, issueDate time.Time, code TypeCode) (Invoice, error) {
	if code != TypeCreditNote && code != TypeCorrected {
		return Invoice{}, fmt.Errorf("billing: cancellation type %s: want 381 or 384", code)
	}
	if orig.Kind == KindCancellation {
		return Invoice{}, fmt.Errorf("billing: %s is already a cancellation", orig.Number)
	}
	if strings.HasPrefix(number, "TEST-") != orig.Test {
		return Invoice{}, fmt.Errorf("billing: cancellation number %q is not from the range of %s", number, orig.Number)
	}
	c := orig
	c.Number = number
	c.Kind = KindCancellation
	c.TypeCode = code
	c.IssueDate = dateOf(issueDate)
	c.Preceding = &Reference{Number: orig.Number, IssueDate: orig.IssueDate}
	c.Notes = nil
	if orig.Test {
		c.Notes = append(c.Notes, TestNote)
	}
	c.Notes = append(c.Notes, fmt.Sprintf("Stornorechnung zur Rechnung %s vom %s. Die Rechnung wird vollständig storniert.",
		orig.Number, orig.IssueDate.Format("02.01.2006")))
	for _, n := range orig.Notes {
		if n != TestNote {
			c.Notes = append(c.Notes, n)
		}
	}
	c.Lines = append([]Line(nil), orig.Lines...)
	c.VAT = append([]VATBreakdown(nil), orig.VAT...)
	if orig.ShipTo != nil {
		st := *orig.ShipTo
		c.ShipTo = &st
	}
	if code == TypeCorrected {
		for i := range c.Lines {
			l := &c.Lines[i]
			l.Quantity = l.Quantity.Neg()
			l.NetCents = -l.NetCents
			l.DiscountCents = -l.DiscountCents
		}
		for i := range c.VAT {
			c.VAT[i].BaseCents = -c.VAT[i].BaseCents
			c.VAT[i].TaxCents = -c.VAT[i].TaxCents
		}
		t := &c.Totals
		*t = Totals{
			LineNetCents: -t.LineNetCents, AllowanceCents: -t.AllowanceCents, ChargeCents: -t.ChargeCents,
			TaxBasisCents: -t.TaxBasisCents, TaxCents: -t.TaxCents, GrandCents: -t.GrandCents,
			PrepaidCents: -t.PrepaidCents, RoundingCents: -t.RoundingCents, DueCents: -t.DueCents,
		}
	}
	c.settleByOffset(orig)
	if err := Invariants(&c); err != nil {
		return Invoice{}, fmt.Errorf("billing: cancel %s: %w", orig.Number, err)
	}
	return c, nil
}
