package einvoice

import (
	"strings"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// val is an optional text value: ok reports presence.
type val struct {
	s  string
	ok bool
}

func some(s string) val { return val{s: s, ok: true} }

// optv is present when s is not empty.
func optv(s string) val { return val{s: s, ok: s != ""} }

// doc is the EN 16931 semantic content the rules look at, filled either from
// a billing.Invoice or from CII XML, so both checks share every rule.
type doc struct {
	process, guideline val      // BT-23, BT-24
	number, typeCode   val      // BT-1, BT-3
	issueDate          val      // BT-2 (YYYYMMDD)
	issueFormat        string   // format attribute of BT-2 (102: YYYYMMDD)
	notes              []string // BT-22
	buyerRef           val      // BT-10
	orderRef           val      // BT-14, the seller's order number
	seller, buyer      party
	shipTo             *party // BG-15
	deliveryDate       val    // BT-72
	deliveryFormat     string // format attribute of BT-72
	period             *period
	hasPeriod          bool   // BillingSpecifiedPeriod is present, with or without dates
	currency           val    // BT-5
	paymentRef         val    // BT-83
	creditorRef        val    // BT-90, the SEPA creditor identifier of a direct debit
	mandateRef         val    // BT-89, in the payment terms
	taxCurrency        val    // currencyID of BT-110
	taxTotalCur        string // parsing: currencyID of the open TaxTotalAmount
	means              []means
	vat                []vatBreakdown
	terms              []terms
	docAC              []allowance // document level allowances and charges
	totals             totals
	preceding          []reference
	lines              []line
}

type party struct {
	id, name, legalID        val
	hasContact               bool
	contactName, contactDept val
	phone, email             val
	hasAddress               bool
	postcode, line1, line2   val
	city                     val
	country                  val
	eaddr, eaddrScheme       val
	vatID, taxNo             val
	pendingTaxScheme         string // parsing: schemeID of the open SpecifiedTaxRegistration/ID
}

type period struct {
	start, end             val
	startFormat, endFormat string // format attributes
}

type means struct {
	code, info        val  // BT-81, BT-82
	iban, accountName val  // BT-84, BT-85
	bic               val  // BT-86
	account           bool // a payee account (BG-17) is present
	card              bool // payment card information (BG-18) is present
	cardID, holder    val  // BT-87, BT-88
	debtorIBAN        val  // BT-91, the debited account of a direct debit
	debtorBank        bool // the payer's financial institution is present
}

type terms struct{ desc, due val }

type reference struct {
	id, date   val
	dateFormat string // format attribute of date
}

type allowance struct {
	charge         bool
	indicator      string // ChargeIndicator as written
	amount         val
	reason, code   val
	category, rate val
}

type vatBreakdown struct {
	tax, base          val
	category, rate     val
	reason, reasonCode val
}

type totals struct {
	lineTotal, chargeTotal, allowanceTotal val
	taxBasis, taxTotal, rounding           val
	grand, prepaid, due                    val
}

type line struct {
	id, name               val
	sellerID               val // BT-155, the seller's item number
	price, basisQty        val
	qty, unitCode          val
	category, rate         val
	ac                     []allowance
	net                    val
	periodStart, periodEnd val
}

// fromInvoice maps a computed invoice onto the semantic model exactly as
// render writes it.
func fromInvoice(inv *billing.Invoice) *doc {
	d := &doc{
		guideline: some(inv.Guideline()), process: optv(inv.BusinessProcess()),
		number: some(inv.Number), typeCode: some(string(inv.TypeCode)),
		notes: inv.Notes, buyerRef: optv(inv.BuyerReference),
		currency: some(inv.Currency), taxCurrency: some(inv.Currency),
	}
	if !inv.IssueDate.IsZero() {
		d.issueDate = some(inv.IssueDate.Format("20060102"))
	}
	d.seller = partyOf(&inv.Seller, true)
	d.buyer = partyOf(&inv.Buyer, false)
	if inv.ShipTo != nil {
		st := partyOf(inv.ShipTo, false)
		d.shipTo = &st
	}
	if !inv.SupplyDate.IsZero() {
		d.deliveryDate = some(inv.SupplyDate.Format("20060102"))
	}
	if p := inv.Period; p != nil {
		d.period = &period{start: some(p.Start.Format("20060102")), end: some(p.End.Format("20060102"))}
	}
	if pm := inv.Payment; pm.Code != "" {
		m := means{code: some(pm.Code), info: optv(pm.Information), iban: optv(pm.IBAN), account: pm.IBAN != "", bic: optv(pm.BIC)}
		if c := pm.Card; c != nil {
			m.card, m.cardID, m.holder = true, some(c.Last4), optv(c.Holder)
		}
		if dd := pm.DirectDebit; dd != nil {
			m.debtorIBAN = some(dd.DebitedIBAN)
			d.creditorRef, d.mandateRef = some(dd.CreditorID), some(dd.MandateRef)
		}
		d.means = []means{m}
	}
	if inv.Payment.Terms != "" {
		d.terms = []terms{{desc: some(inv.Payment.Terms)}}
	}
	for _, v := range inv.VAT {
		d.vat = append(d.vat, vatBreakdown{
			tax: some(v.TaxCents.String()), base: some(v.BaseCents.String()),
			category: some(string(v.Category)), rate: some(v.Rate.String()),
			reason: optv(v.ExemptionReason), reasonCode: optv(v.ExemptionCode),
		})
	}
	t := &inv.Totals
	d.totals = totals{
		lineTotal: some(t.LineNetCents.String()), taxBasis: some(t.TaxBasisCents.String()),
		taxTotal: some(t.TaxCents.String()), grand: some(t.GrandCents.String()), due: some(t.DueCents.String()),
	}
	if t.ChargeCents != 0 {
		d.totals.chargeTotal = some(t.ChargeCents.String())
	}
	if t.AllowanceCents != 0 {
		d.totals.allowanceTotal = some(t.AllowanceCents.String())
	}
	if t.RoundingCents != 0 {
		d.totals.rounding = some(t.RoundingCents.String())
	}
	if t.PrepaidCents != 0 {
		d.totals.prepaid = some(t.PrepaidCents.String())
	}
	if p := inv.Preceding; p != nil {
		r := reference{id: some(p.Number)}
		if !p.IssueDate.IsZero() {
			r.date = some(p.IssueDate.Format("20060102"))
		}
		d.preceding = append(d.preceding, r)
	}
	d.lines = make([]line, len(inv.Lines))
	for i := range inv.Lines {
		l := &inv.Lines[i]
		dl := line{
			id: some(l.ID), name: some(l.Name), price: some(l.UnitNetPrice.String()),
			qty: some(l.Quantity.String()), unitCode: some(l.UnitCode),
			category: some(string(l.Category)), net: some(l.NetCents.String()),
		}
		if l.Category != billing.CategoryNotSubject {
			dl.rate = some(l.Rate.String())
		}
		if l.DiscountCents != 0 {
			dl.ac = []allowance{{amount: some(l.DiscountCents.String()), reason: some("Rabatt")}}
		}
		if p := l.Period; p != nil {
			dl.periodStart, dl.periodEnd = some(p.Start.Format("20060102")), some(p.End.Format("20060102"))
		}
		d.lines[i] = dl
	}
	return d
}

func partyOf(p *billing.Party, seller bool) party {
	out := party{
		id: optv(p.ID), name: optv(p.Name), legalID: optv(p.LegalRegistrationID),
		hasAddress: true, postcode: optv(p.PostalCode), line1: optv(p.Street), city: optv(p.City),
		country: optv(p.CountryCode), vatID: optv(p.VATID),
		eaddr: optv(p.ElectronicAddress), eaddrScheme: optv(p.ElectronicAddressScheme),
	}
	if seller {
		out.taxNo = optv(p.TaxNumber)
	}
	if p.ContactName != "" || p.ContactPhone != "" || p.ContactEmail != "" {
		out.hasContact = true
		out.contactName, out.phone, out.email = optv(p.ContactName), optv(p.ContactPhone), optv(p.ContactEmail)
	}
	return out
}

// dec parses an amount, quantity or rate; ok is false when absent or
// malformed.
func dec(v val) (money.Decimal, bool) {
	if !v.ok {
		return money.Decimal{}, false
	}
	d, err := money.ParseDecimal(strings.TrimSpace(v.s))
	if err != nil || strings.ContainsAny(v.s, "eE") {
		return money.Decimal{}, false
	}
	return d, true
}
