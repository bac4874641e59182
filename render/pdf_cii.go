package render

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
)

// The PDF is rendered from the CII XML, never from the invoice value: what
// the reader sees is exactly what the legally binding XML says, and an
// archived XML can get its PDF at any time. The XML is read by einvoice, with
// the parse its validation uses; this file turns the elements CII writes
// (and nothing else) into a view whose strings are ready to print.

// view is the invoice as printed: every string formatted, every amount
// taken verbatim from the XML (German decimal notation, never via float).
type view struct {
	Number        string
	Title         string // German document title
	TitleEN       string
	XRechnung     bool
	SmallAmount   bool // § 33 UStDV: no XML is embedded
	Test          bool
	IssueDate     time.Time // midnight UTC; also the PDF's creation date
	Issue         string    // 02.01.2006
	Supply        string    // date of supply (BT-72), or the invoicing period (BG-14)
	SupplyLabel   string
	Preceding     string // "RE-2026-000101 vom 02.03.2026"
	OrderNo       string
	BuyerRef      string // BT-10: the Leitweg-ID for XRechnung
	Seller, Buyer party
	ShipTo        *party
	Lines         []lineView
	VAT           []vat
	Totals        []total
	Payment       []labelled
	Notes         []string
	Currency      string
}

type party struct {
	Name       string
	Address    []string // street lines, "postcode city", country
	VATID      string   // VA
	TaxNumber  string   // FC
	ID         string   // seller identifier (BT-29)
	LegalID    string   // register entry (BT-30)
	Contact    []string // person, phone, e-mail
	Electronic string   // electronic address (BT-34/BT-49) in words
}

type lineView struct {
	ID, Name, SKU       string
	Quantity, Unit      string
	Price, Net, Tax     string
	AllowancesOrCharges []labelled // "Rabatt" -> "-5,00 €"
}

type vat struct {
	Category, Rate, Base, Tax string
	Reason                    string // exemption reason text and code
}

type total struct {
	Label, LabelEN, Amount string
	Strong                 bool
}

type labelled struct{ Label, Value string }

// errNotCII is returned for input that is not a CII invoice as CII writes it.
var errNotCII = errors.New("not a CII invoice written by render.CII")

// readView parses xml and formats every field of the PDF; a small-amount
// invoice (§ 33 UStDV) needs no buyer name or address.
func readView(data []byte, smallAmount bool) (*view, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty input", errNotCII)
	}
	// Structure findings are einvoice's to report; the view needs only the
	// values, checked below.
	d, _, err := einvoice.ReadCII(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotCII, err)
	}
	return viewOf(d, smallAmount)
}

// viewOf formats every field of the PDF from d, a CII document as einvoice
// read it.
func viewOf(d *einvoice.Document, smallAmount bool) (*view, error) {
	r := &reader{}
	v := &view{
		Number: r.required("BT-1 invoice number", d.Number),
	}
	v.XRechnung = d.Guideline == billing.GuidelineXRechnung
	v.SmallAmount = smallAmount
	if d.Guideline != billing.GuidelineEN16931 && !v.XRechnung {
		r.fail("BT-24 guideline %q is neither EN 16931 nor XRechnung 3.0", d.Guideline)
	}
	switch d.TypeCode {
	case string(billing.TypeInvoice):
		v.Title, v.TitleEN = "Rechnung", "Invoice"
		if smallAmount {
			v.Title, v.TitleEN = "Kleinbetragsrechnung", "Small-amount invoice (§ 33 UStDV)"
		}
	case string(billing.TypeCreditNote):
		// billing issues 381 as a cancellation or, for a partial refund, a
		// correction (its note begins "Rechnungskorrektur"); a seller's
		// document is never titled "Gutschrift" (self-billing).
		v.Title, v.TitleEN = "Stornorechnung", "Cancellation invoice"
		for _, n := range d.Notes {
			if strings.HasPrefix(n, "Rechnungskorrektur") {
				v.Title, v.TitleEN = "Rechnungskorrektur", "Credit note (partial refund)"
			}
		}
	case string(billing.TypeCorrected):
		v.Title, v.TitleEN = "Rechnungskorrektur", "Corrected invoice"
	default:
		r.fail("BT-3 type code %q is not 380, 381 or 384", d.TypeCode)
	}
	v.IssueDate = r.date("BT-2 issue date", d.IssueDate, true)
	v.Issue = germanDate(v.IssueDate)
	v.Test = strings.HasPrefix(d.Number, "TEST-")
	for _, n := range d.Notes {
		v.Test = v.Test || n == billing.TestNote
		v.Notes = append(v.Notes, n)
	}
	v.Currency = r.required("BT-5 currency", d.Currency)
	v.OrderNo = d.OrderReference
	v.BuyerRef = d.BuyerReference
	v.Seller = r.party("seller", &d.Seller, true)
	v.Buyer = r.party("buyer", &d.Buyer, !smallAmount)
	if st := d.ShipTo; st != nil {
		p := r.party("ship-to", st, false)
		v.ShipTo = &p
	}
	if t := r.date("BT-72 date of supply", d.DeliveryDate, false); !t.IsZero() {
		v.Supply, v.SupplyLabel = germanDate(t), "Lieferdatum / Delivery date"
	}
	if p := d.Period; p != nil {
		v.Supply = germanDate(r.date("BT-73 period start", p.Start, true)) + " – " +
			germanDate(r.date("BT-74 period end", p.End, true))
		v.SupplyLabel = "Leistungszeitraum / Invoicing period"
	}
	for _, p := range d.Preceding {
		s := p.Number
		if t := r.date("BT-26 preceding invoice date", p.IssueDate, false); !t.IsZero() {
			s += " vom " + germanDate(t)
		}
		v.Preceding = s
	}

	if len(d.Lines) == 0 {
		r.fail("no invoice line (BG-25)")
	}
	for i := range d.Lines {
		v.Lines = append(v.Lines, r.line(&d.Lines[i], v.Currency))
	}
	for _, t := range d.VAT {
		x := vat{
			Category: t.Category + " – " + categoryName(t.Category),
			Rate:     r.decimal("BT-119 VAT rate", t.Rate, 0) + " %",
			Base:     r.money("BT-116 taxable amount", t.Base, v.Currency),
			Tax:      r.money("BT-117 VAT amount", t.Tax, v.Currency),
			Reason:   t.ExemptionReason,
		}
		if t.ExemptionCode != "" {
			x.Reason = strings.TrimSpace(x.Reason + " (" + t.ExemptionCode + ")")
		}
		v.VAT = append(v.VAT, x)
	}
	if len(v.VAT) == 0 {
		r.fail("no VAT breakdown (BG-23)")
	}
	v.Totals = r.totals(&d.Totals, v.Currency)

	for _, m := range d.PaymentMeans {
		v.Payment = append(v.Payment, labelled{"Zahlungsart", paymentMeans(m.TypeCode, m.Information)})
		if m.IBAN != "" {
			v.Payment = append(v.Payment, labelled{"IBAN", m.IBAN})
		}
		if m.AccountName != "" {
			v.Payment = append(v.Payment, labelled{"Kontoinhaber", m.AccountName})
		}
		if m.BIC != "" {
			v.Payment = append(v.Payment, labelled{"BIC", m.BIC})
		}
		if m.CardID != "" {
			v.Payment = append(v.Payment, labelled{"Karte", "**** " + m.CardID})
		}
		if m.CardHolder != "" {
			v.Payment = append(v.Payment, labelled{"Karteninhaber", m.CardHolder})
		}
		if m.DebitedIBAN != "" {
			v.Payment = append(v.Payment, labelled{"Belastetes Konto", m.DebitedIBAN})
		}
	}
	if d.MandateRef != "" {
		v.Payment = append(v.Payment, labelled{"Mandatsreferenz", d.MandateRef})
	}
	if d.CreditorRef != "" {
		v.Payment = append(v.Payment, labelled{"Gläubiger-ID", d.CreditorRef})
	}
	if ref := d.PaymentReference; ref != "" {
		v.Payment = append(v.Payment, labelled{"Verwendungszweck", ref})
	}
	for _, t := range d.PaymentTerms {
		v.Payment = append(v.Payment, labelled{"Zahlungsbedingungen", t})
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

// reader collects the first error while formatting, so readView reads as a
// list of fields.
type reader struct{ err error }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errNotCII}, args...)...)
	}
}

func (r *reader) required(what, s string) string {
	if s == "" {
		r.fail("%s missing", what)
	}
	return s
}

// date parses a format-102 date (YYYYMMDD) as midnight UTC.
func (r *reader) date(what string, d einvoice.Date, required bool) time.Time {
	if d.Value == "" && !required {
		return time.Time{}
	}
	t, err := time.Parse("20060102", d.Value)
	if err != nil || d.Format != "102" {
		r.fail("%s %q is not a date in format 102", what, d.Value)
		return time.Time{}
	}
	return t
}

func (r *reader) decimal(what, s string, minFrac int) string {
	out, err := germanDecimal(s, minFrac)
	if err != nil {
		r.fail("%s: %v", what, err)
	}
	return out
}

func (r *reader) money(what, s, currency string) string {
	return r.decimal(what, s, 2) + " " + currencySymbol(currency)
}

func (r *reader) party(role string, p *einvoice.Party, named bool) party {
	out := party{Name: p.Name, ID: p.ID, LegalID: p.LegalID, VATID: p.VATID, TaxNumber: p.TaxNumber}
	if named {
		r.required(role+" name", p.Name)
	}
	for _, s := range []string{p.LineOne, p.LineTwo} {
		if s != "" {
			out.Address = append(out.Address, s)
		}
	}
	if city := strings.TrimSpace(p.Postcode + " " + p.City); city != "" {
		out.Address = append(out.Address, city)
	}
	out.Address = append(out.Address, countryName(r.required(role+" country", p.Country)))
	for _, s := range []string{p.ContactName, p.Phone, p.Email} {
		if s != "" {
			out.Contact = append(out.Contact, s)
		}
	}
	switch e := p.ElectronicAddress; p.ElectronicScheme {
	case "":
	case "0204":
		out.Electronic = "Leitweg-ID " + e
	case "EM":
		out.Electronic = "E-Rechnung an " + e
	default:
		out.Electronic = p.ElectronicScheme + " " + e
	}
	return out
}

func (r *reader) line(l *einvoice.Line, currency string) lineView {
	out := lineView{
		ID:       r.required("BT-126 line id", l.ID),
		Name:     r.required("BT-153 item name", l.Name),
		SKU:      l.SellerID,
		Quantity: r.decimal("BT-129 quantity", l.Quantity, 0),
		Unit:     unitName(l.UnitCode),
		Price:    r.money("BT-146 net price", l.Price, currency),
		Net:      r.money("BT-131 line net amount", l.Net, currency),
		Tax:      r.required("BT-151 VAT category", l.Category),
	}
	// The line's own service period (BG-26), after its name.
	start, end := r.date("BT-134 line period start", l.PeriodStart, false), r.date("BT-135 line period end", l.PeriodEnd, false)
	if !start.IsZero() && !end.IsZero() {
		out.Name += " (Leistungszeitraum " + germanDate(start) + " – " + germanDate(end) + ")"
	}
	// The rate, followed by the category code unless it is S: "19 %",
	// "0 % K"; category O has no rate.
	if l.Rate != "" {
		rate := r.decimal("BT-152 VAT rate", l.Rate, 0) + " %"
		if l.Category == string(billing.CategoryStandard) {
			out.Tax = rate
		} else {
			out.Tax = rate + " " + l.Category
		}
	}
	for _, ac := range l.AllowancesOrCharges {
		amount := r.money("line allowance/charge amount", ac.Amount, currency)
		label := "Zuschlag"
		if ac.Indicator == "false" {
			label, amount = "Nachlass", negate(amount)
		}
		if ac.Reason != "" {
			label += " (" + ac.Reason + ")"
		}
		out.AllowancesOrCharges = append(out.AllowancesOrCharges, labelled{label, amount})
	}
	return out
}

func (r *reader) totals(t *einvoice.Totals, currency string) []total {
	rows := []struct {
		label, en, amount string
		required, strong  bool
	}{
		{"Summe der Positionen (netto)", "Sum of line net amounts", t.LineTotal, true, false},
		{"Zuschläge", "Charges", t.ChargeTotal, false, false},
		{"Abzüglich Nachlässe", "Allowances", t.AllowanceTotal, false, false},
		{"Gesamtbetrag netto", "Total without VAT", t.TaxBasis, true, false},
		{"Umsatzsteuer", "VAT", t.TaxTotal, true, false},
		{"Gesamtbetrag brutto", "Total with VAT", t.Grand, true, true},
		{"Abzüglich bereits gezahlt", "Paid amount", t.Prepaid, false, false},
		{"Rundungsbetrag", "Rounding amount", t.Rounding, false, false},
		{"Zahlbetrag", "Amount due for payment", t.Due, true, true},
	}
	var out []total
	for _, row := range rows {
		if row.amount == "" {
			if row.required {
				r.fail("total %q missing", row.en)
			}
			continue
		}
		amount := r.money(row.en, row.amount, currency)
		// Deductions are printed with their sign flipped, so that the
		// column adds up as printed.
		if row.en == "Paid amount" || row.en == "Allowances" {
			amount = negate(amount)
		}
		out = append(out, total{row.label, row.en, amount, row.strong})
	}
	return out
}

// germanDecimal formats a CII decimal string ("-1234.5") in German notation
// ("-1.234,50" with minFrac 2): thousands grouped with '.', ',' before the
// fraction, the fraction padded to minFrac digits and never cut. It works on
// the digits, never through float64.
func germanDecimal(s string, minFrac int) (string, error) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(digits, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) || hasFrac && frac == "" {
		return "", fmt.Errorf("%q is not a decimal", s)
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/3 + minFrac + 1)
	if neg {
		b.WriteByte('-')
	}
	for i := range len(intPart) {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteByte(intPart[i])
	}
	if frac != "" || minFrac > 0 {
		b.WriteByte(',')
		b.WriteString(frac)
		for i := len(frac); i < minFrac; i++ {
			b.WriteByte('0')
		}
	}
	return b.String(), nil
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// negate flips the sign of a formatted amount, for allowances and paid
// amounts shown as deductions.
func negate(s string) string {
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		return rest
	}
	return "-" + s
}

func germanDate(t time.Time) string { return t.Format("02.01.2006") }

func currencySymbol(code string) string {
	if code == "EUR" {
		return "€"
	}
	return code
}

// categoryName is the VAT category (BT-118/BT-151) in words.
func categoryName(code string) string {
	switch billing.Category(code) {
	case billing.CategoryStandard:
		return "Umsatzsteuer"
	case billing.CategoryZero:
		return "Nullsatz"
	case billing.CategoryExempt:
		return "Steuerbefreit"
	case billing.CategoryReverse:
		return "Steuerschuldnerschaft des Leistungsempfängers"
	case billing.CategoryIntraEU:
		return "Innergemeinschaftliche Lieferung"
	case billing.CategoryExport:
		return "Ausfuhrlieferung"
	case billing.CategoryNotSubject:
		return "Nicht steuerbar"
	}
	return "Kategorie " + code
}

// unitName is the UN/ECE Rec 20 unit (BT-130) as printed.
func unitName(code string) string {
	switch code {
	case "C62", "H87", "XPP":
		return "Stk."
	case "HUR":
		return "Std."
	case "DAY":
		return "Tag"
	case "MON":
		return "Monat"
	case "KGM":
		return "kg"
	case "MTR":
		return "m"
	case "LTR":
		return "l"
	case "LS":
		return "pauschal"
	}
	return code
}

func paymentMeans(code, info string) string {
	var s string
	switch code {
	case "58":
		s = "SEPA-Überweisung"
	case "59":
		s = "SEPA-Lastschrift"
	case "30":
		s = "Überweisung"
	case "48":
		s = "Kartenzahlung"
	case "54":
		s = "Kreditkarte"
	case "55":
		s = "Debitkarte"
	case "68":
		s = "Online-Zahlungsdienst"
	case "97":
		s = "Verrechnung"
	case "1":
		s = "Nicht festgelegt"
	case "ZZZ":
		s = "Sonstige"
	default:
		s = "Code " + code
	}
	if info != "" {
		s += " (" + info + ")"
	}
	return s
}

// countryName prints a country code (ISO 3166-1) with the German name of
// the usual countries.
func countryName(code string) string {
	var name string
	switch code {
	case "DE":
		name = "Deutschland"
	case "AT":
		name = "Österreich"
	case "CH":
		name = "Schweiz"
	case "FR":
		name = "Frankreich"
	case "NL":
		name = "Niederlande"
	case "BE":
		name = "Belgien"
	case "IT":
		name = "Italien"
	case "ES":
		name = "Spanien"
	case "PL":
		name = "Polen"
	case "US":
		name = "Vereinigte Staaten"
	case "GB":
		name = "Vereinigtes Königreich"
	default:
		return code
	}
	return name + " (" + code + ")"
}
