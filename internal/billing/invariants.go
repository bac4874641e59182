package billing

import (
	"fmt"
	"strings"

	"github.com/o2i-service/o2i/internal/money"
)

// InvariantError is a violation found by Invariants. Field is the order
// input the offending amount comes from ("items[2].quantity",
// "shippingGrossCents"), or "items" for a document-level sum.
type InvariantError struct {
	Field string
	msg   string
}

func (e *InvariantError) Error() string { return e.msg }

func violation(field, format string, args ...any) *InvariantError {
	return &InvariantError{Field: field, msg: fmt.Sprintf(format, args...)}
}

// Invariants checks the arithmetic a computed document must satisfy exactly
// (not within the schematron's tolerance): every line net equals quantity x
// unit net price - discount within half a cent, the rounding of that
// product (PEPPOL-EN16931-R120 allows two cents), the
// breakdown bases are the sums of their line nets (BR-S-08 and siblings),
// each tax amount is its base x rate rounded half up (BR-CO-17), and the
// document sums BR-CO-10, -13, -14, -15 and -16 hold. It returns the first
// violation as an *InvariantError.
func Invariants(inv *Invoice) error {
	if len(inv.Lines) == 0 {
		return violation("items", "no lines")
	}
	bases := map[groupKey]money.Cents{}
	var lineSum money.Cents
	for _, l := range inv.Lines {
		field := l.inputField()
		if l.UnitNetPrice.Sign() < 0 {
			return violation(field, "line %s: negative net price (BR-27)", l.ID)
		}
		// q x price x 10^k vs (net + discount) x 10^k, as exact integers
		qc, qs := l.Quantity.Coef()
		pc, ps := l.UnitNetPrice.Coef()
		prod, err := money.MulDivRound(qc, pc, 1) // scale qs+ps, currency units
		if err != nil {
			return violation(field, "line %s: %v", l.ID, err)
		}
		amount := int64(l.NetCents + l.DiscountCents) // cents
		// compare prod / 10^(qs+ps) with amount / 100 : scale both to qs+ps+2
		want, err := money.MulDivRound(amount, money.Pow10(qs+ps), 1)
		if err != nil {
			return violation(field, "line %s: %v", l.ID, err)
		}
		got, err := money.MulDivRound(prod, 100, 1)
		if err != nil {
			return violation(field, "line %s: %v", l.ID, err)
		}
		// A product ending in exactly half a cent (2.5 x 1.01) is rounded
		// half up: that half cent is the rounding itself, not an error.
		if d := got - want; 2*money.Abs(d) > money.Pow10(qs+ps) {
			return violation(field, "line %s: quantity x price %s x %s differs from net %s + discount %s by more than half a cent (PEPPOL-EN16931-R120)",
				l.ID, l.Quantity, l.UnitNetPrice, l.NetCents, l.DiscountCents)
		}
		bases[keyOf(&l)] += l.NetCents
		lineSum += l.NetCents
	}
	var taxSum money.Cents
	for _, v := range inv.VAT {
		k := groupKey{v.Category, v.Rate.String()}
		if bases[k] != v.BaseCents {
			return violation("items", "VAT %s %s%%: base %s, lines sum to %s (BR-%s-08)", v.Category, v.Rate, v.BaseCents, bases[k], v.Category)
		}
		delete(bases, k)
		tax, err := money.Percent(v.BaseCents, v.Rate)
		if err != nil {
			return violation("items", "VAT %s %s%%: %v", v.Category, v.Rate, err)
		}
		if tax != v.TaxCents {
			return violation("items", "VAT %s %s%%: tax %s, want %s (BR-CO-17)", v.Category, v.Rate, v.TaxCents, tax)
		}
		taxSum += v.TaxCents
	}
	if len(bases) > 0 {
		return violation("items", "a line's VAT category and rate has no breakdown (BR-CO-18)")
	}
	t := inv.Totals
	switch {
	case t.LineNetCents != lineSum:
		return violation("items", "BT-106 %s != sum of lines %s (BR-CO-10)", t.LineNetCents, lineSum)
	case t.TaxBasisCents != t.LineNetCents-t.AllowanceCents+t.ChargeCents:
		return violation("items", "BT-109 != BT-106 - BT-107 + BT-108 (BR-CO-13)")
	case t.TaxCents != taxSum:
		return violation("items", "BT-110 %s != sum of VAT %s (BR-CO-14)", t.TaxCents, taxSum)
	case t.GrandCents != t.TaxBasisCents+t.TaxCents:
		return violation("items", "BT-112 != BT-109 + BT-110 (BR-CO-15)")
	case t.DueCents != t.GrandCents-t.PrepaidCents+t.RoundingCents:
		return violation("items", "BT-115 != BT-112 - BT-113 + BT-114 (BR-CO-16)")
	}
	return nil
}

// inputField names the order input a line's quantity and price come from.
func (l *Line) inputField() string {
	switch {
	case l.source == "":
		return "items"
	case strings.HasPrefix(l.source, "items["):
		return l.source + ".quantity"
	}
	return l.source
}
