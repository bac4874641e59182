package einvoice

import "errors"

// Document is a CII invoice as ReadCII read it, for those that show it (the
// PDF): the values as written, surrounding space trimmed, "" where an
// element is absent. It is built from the parsed model and shares nothing
// einvoice keeps.
type Document struct {
	Guideline        string // BT-24
	Number, TypeCode string // BT-1, BT-3
	IssueDate        Date   // BT-2
	Notes            []string
	BuyerReference   string // BT-10
	OrderReference   string // BT-14, the seller's order number
	Seller, Buyer    Party
	ShipTo           *Party // BG-15; nil when absent
	DeliveryDate     Date   // BT-72
	// Period is BG-14; nil when absent, present (maybe without dates) when
	// the element is.
	Period           *Period
	Currency         string // BT-5
	PaymentReference string // BT-83
	CreditorRef      string // BT-90
	MandateRef       string // BT-89
	PaymentMeans     []PaymentMeans
	VAT              []VATBreakdown
	PaymentTerms     []string // BT-20, one per terms element with a description
	Totals           Totals
	Preceding        []Reference // BG-3
	Lines            []Line
}

// Date is a date as written: its text and its format attribute (102 is
// YYYYMMDD).
type Date struct{ Value, Format string }

// Period is an invoicing period.
type Period struct{ Start, End Date }

// Party is a trade party (seller, buyer, ship-to).
type Party struct {
	ID, Name, LegalID                string
	ContactName, Phone, Email        string
	LineOne, LineTwo, Postcode, City string
	Country                          string
	// ElectronicScheme is the schemeID of ElectronicAddress (EM, 0204, ...).
	ElectronicAddress, ElectronicScheme string
	VATID, TaxNumber                    string // tax registrations with scheme VA and FC
}

// PaymentMeans is one BG-16.
type PaymentMeans struct {
	TypeCode, Information  string // BT-81, BT-82
	IBAN, AccountName, BIC string // BT-84, BT-85, BT-86
	CardID, CardHolder     string // BT-87, BT-88
	DebitedIBAN            string // BT-91
}

// VATBreakdown is one BG-23.
type VATBreakdown struct {
	Tax, Base, Category, Rate      string // BT-117, BT-116, BT-118, BT-119
	ExemptionReason, ExemptionCode string // BT-120, BT-121
}

// Totals is BG-22.
type Totals struct {
	LineTotal, ChargeTotal, AllowanceTotal string // BT-106, BT-108, BT-107
	TaxBasis, TaxTotal, Rounding           string // BT-109, BT-110, BT-114
	Grand, Prepaid, Due                    string // BT-112, BT-113, BT-115
}

// Reference is a preceding invoice (BG-3).
type Reference struct {
	Number    string // BT-25
	IssueDate Date   // BT-26
}

// Line is an invoice line (BG-25).
type Line struct {
	ID, Name, SellerID  string // BT-126, BT-153, BT-155
	Price               string // BT-146
	Quantity, UnitCode  string // BT-129, BT-130
	PeriodStart         Date   // BT-134, zero when absent
	PeriodEnd           Date   // BT-135
	Category, Rate      string // BT-151, BT-152
	Net                 string // BT-131
	AllowancesOrCharges []AllowanceCharge
}

// AllowanceCharge is a line allowance (BG-27) or charge (BG-28).
type AllowanceCharge struct {
	Indicator string // ChargeIndicator as written: "true" a charge, "false" an allowance
	Amount    string
	Reason    string
}

// ReadCII reads CII XML with the parse CheckXML uses and returns the
// document and the structure findings (rule XSD); the business rules are
// not run. A document that is not well-formed, or whose root is not
// rsm:CrossIndustryInvoice, is not read: no document, its one finding, and
// an error with the finding's message.
func ReadCII(data []byte) (*Document, []Finding, error) {
	d, fs := parseCII(data)
	if d == nil {
		return nil, fs, errors.New(fs[0].Message)
	}
	return d.document(), fs, nil
}

// document copies the model into a Document.
func (d *doc) document() *Document {
	out := &Document{
		Guideline: d.guideline.s, Number: d.number.s, TypeCode: d.typeCode.s,
		IssueDate:      Date{d.issueDate.s, d.issueFormat},
		Notes:          d.notes,
		BuyerReference: d.buyerRef.s, OrderReference: d.orderRef.s,
		Seller: d.seller.export(), Buyer: d.buyer.export(),
		DeliveryDate:     Date{d.deliveryDate.s, d.deliveryFormat},
		Currency:         d.currency.s,
		PaymentReference: d.paymentRef.s,
		CreditorRef:      d.creditorRef.s, MandateRef: d.mandateRef.s,
		Totals: Totals{
			LineTotal: d.totals.lineTotal.s, ChargeTotal: d.totals.chargeTotal.s, AllowanceTotal: d.totals.allowanceTotal.s,
			TaxBasis: d.totals.taxBasis.s, TaxTotal: d.totals.taxTotal.s, Rounding: d.totals.rounding.s,
			Grand: d.totals.grand.s, Prepaid: d.totals.prepaid.s, Due: d.totals.due.s,
		},
	}
	if d.shipTo != nil {
		st := d.shipTo.export()
		out.ShipTo = &st
	}
	if d.hasPeriod {
		out.Period = &Period{}
		if p := d.period; p != nil {
			out.Period.Start, out.Period.End = Date{p.start.s, p.startFormat}, Date{p.end.s, p.endFormat}
		}
	}
	for _, m := range d.means {
		out.PaymentMeans = append(out.PaymentMeans, PaymentMeans{
			TypeCode: m.code.s, Information: m.info.s, IBAN: m.iban.s, AccountName: m.accountName.s, BIC: m.bic.s,
			CardID: m.cardID.s, CardHolder: m.holder.s, DebitedIBAN: m.debtorIBAN.s,
		})
	}
	for _, b := range d.vat {
		out.VAT = append(out.VAT, VATBreakdown{
			Tax: b.tax.s, Base: b.base.s, Category: b.category.s, Rate: b.rate.s,
			ExemptionReason: b.reason.s, ExemptionCode: b.reasonCode.s,
		})
	}
	for _, t := range d.terms {
		if t.desc.ok {
			out.PaymentTerms = append(out.PaymentTerms, t.desc.s)
		}
	}
	for _, r := range d.preceding {
		out.Preceding = append(out.Preceding, Reference{Number: r.id.s, IssueDate: Date{r.date.s, r.dateFormat}})
	}
	out.Lines = make([]Line, len(d.lines))
	for i := range d.lines {
		l := &d.lines[i]
		ol := Line{
			ID: l.id.s, Name: l.name.s, SellerID: l.sellerID.s, Price: l.price.s,
			Quantity: l.qty.s, UnitCode: l.unitCode.s, Category: l.category.s, Rate: l.rate.s, Net: l.net.s,
			PeriodStart: Date{Value: l.periodStart.s, Format: "102"}, PeriodEnd: Date{Value: l.periodEnd.s, Format: "102"},
		}
		if !l.periodStart.ok {
			ol.PeriodStart = Date{}
		}
		if !l.periodEnd.ok {
			ol.PeriodEnd = Date{}
		}
		for _, a := range l.ac {
			ol.AllowancesOrCharges = append(ol.AllowancesOrCharges, AllowanceCharge{Indicator: a.indicator, Amount: a.amount.s, Reason: a.reason.s})
		}
		out.Lines[i] = ol
	}
	return out
}

func (p *party) export() Party {
	return Party{
		ID: p.id.s, Name: p.name.s, LegalID: p.legalID.s,
		ContactName: p.contactName.s, Phone: p.phone.s, Email: p.email.s,
		LineOne: p.line1.s, LineTwo: p.line2.s, Postcode: p.postcode.s, City: p.city.s, Country: p.country.s,
		ElectronicAddress: p.eaddr.s, ElectronicScheme: p.eaddrScheme.s,
		VATID: p.vatID.s, TaxNumber: p.taxNo.s,
	}
}
