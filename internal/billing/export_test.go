package billing

import "github.com/o2i-service/o2i/internal/money"

// InvoiceWithLineForTest returns a document of one standard-rated line with
// the given quantity, unit net price and line net, whose breakdown and
// totals are consistent with that line, for tests of Invariants.
func InvoiceWithLineForTest(quantity string, price money.Decimal, net money.Cents, source string) Invoice {
	q, err := money.ParseDecimal(quantity)
	if err != nil {
		panic(err)
	}
	rate := money.Int(19)
	tax, err := money.Percent(net, rate)
	if err != nil {
		panic(err)
	}
	return Invoice{
		Lines:  []Line{{ID: "1", Quantity: q, UnitNetPrice: price, NetCents: net, Category: CategoryStandard, Rate: rate, source: source}},
		VAT:    []VATBreakdown{{Category: CategoryStandard, Rate: rate, BaseCents: net, TaxCents: tax}},
		Totals: Totals{LineNetCents: net, TaxBasisCents: net, TaxCents: tax, GrandCents: net + tax, DueCents: net + tax},
	}
}
