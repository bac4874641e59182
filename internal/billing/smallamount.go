package billing

import (
	"strings"

	"github.com/o2i-service/o2i/internal/money"
)

// Small-amount invoices (Kleinbetragsrechnung, § 33 UStDV)

// SmallAmountLimitCents is the most a small-amount invoice may total, gross
// (§ 33 UStDV: 250 euros).
const SmallAmountLimitCents = 25000

// SmallAmountRefused says why an order whose buyer lacks name or address
// cannot have a small-amount invoice (§ 33 UStDV), or "" when it can: a
// supply taxed at German VAT in Germany (§ 33 S. 3 UStDV excludes distance
// sales under § 3c UStG, intra-community supplies and reverse charge) to a
// buyer without company name or VAT id, at most 250.00 EUR gross in all,
// one taxed document (no gift-card sale beside it), no XRechnung.
func SmallAmountRefused(o *Order, t Treatment, payableCents money.Cents, documents int) string {
	b := &o.BillingAddress
	switch {
	case t != TreatDomestic:
		return "a small-amount invoice (§ 33 UStDV) is only for domestic supplies, a cross-border sale needs the full invoice; this buyer is in " + b.CountryCode
	case strings.TrimSpace(b.CompanyName) != "" || strings.TrimSpace(b.VATID) != "":
		return "a business buyer needs a full invoice"
	case strings.TrimSpace(b.LeitwegID) != "":
		return "an XRechnung needs the buyer's address"
	case o.Currency != "" && o.Currency != "EUR":
		return "a small-amount invoice is limited to 250 EUR; this order is in " + o.Currency
	case payableCents > SmallAmountLimitCents:
		return "a small-amount invoice (§ 33 UStDV) is limited to 250.00 EUR gross; this order totals " + payableCents.String() + " EUR"
	case documents != 1:
		return "an order with a gift-card sale needs full invoices"
	}
	return ""
}
