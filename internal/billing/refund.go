package billing

import (
	"fmt"
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
// buyer gets back, in cents) of orig, with its own number and issue date.
func Refund(orig Invoice, number string, issueDate time.Time, gross money.Cents) (Invoice, error) {
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
	weights := make([]money.Cents, len(orig.VAT))
	for i, v := range orig.VAT {
		weights[i] = v.BaseCents + v.TaxCents
	}
	parts, err := money.Allocate(gross, weights)
	if err != nil {
		return Invoice{}, fmt.Errorf("billing: split refund of %s: %w", orig.Number, err)
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
			Name:         fmt.Sprintf("Erstattung zur Rechnung %s (USt %s %%)", orig.Number, v.Rate),
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
	c.Payment = orig.Payment
	c.Payment.DueDate = time.Time{}
	c.Payment.Terms = "Der Betrag wird über den ursprünglichen Zahlungsweg erstattet."
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
