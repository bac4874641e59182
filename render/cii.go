// Package render turns a fully computed billing.Invoice into its documents:
// the UN/CEFACT Cross Industry Invoice (CII D16B) XML of ZUGFeRD 2.x /
// Factur-X profile EN 16931 and of XRechnung 3.0 (CII), and the PDF/A-3 that
// shows it.
//
// The PDF is rendered from the XML, not from the invoice value: PDF reads
// the XML that CII wrote (with internal/einvoice's CII reader, the parse its
// validation uses), lays it out with maroto and embeds the very same bytes,
// so the PDF shows exactly what the legally binding XML says and any
// archived XML can get its PDF later.
//
// render is pure: no network, database or clock. It never recomputes an
// amount: every number in the XML is a field of the invoice value, and every
// number in the PDF is a decimal string of the XML. It imports
// internal/billing and internal/money (and, for Preview and Samples,
// nothing else), and for the PDF internal/einvoice (reading the XML; it
// never imports render), maroto and its PDF library gofpdf (layout); the
// PDF/A-3 file and its font subsets are written here.
//
// The XML is written by a small streaming writer in the element order of the
// CII D16B schema (and of the stricter Factur-X EN 16931 schema, a subset in
// the same order).
package render

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// Namespaces of CII D16B.
const (
	nsRSM = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
	nsRAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
	nsQDT = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
	nsUDT = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
)

// CII returns the CII XML of inv (UTF-8, indented). The format (ZUGFeRD or
// XRechnung) and everything else come from inv. It fails only on an invoice
// without number or lines, which Compute never returns.
func CII(inv billing.Invoice) ([]byte, error) {
	if inv.Number == "" || len(inv.Lines) == 0 {
		return nil, fmt.Errorf("render: invoice %q has no number or no lines", inv.Number)
	}
	w := &writer{}
	w.buf.Grow(6000 + 1500*len(inv.Lines))
	w.raw(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.raw(`<rsm:CrossIndustryInvoice xmlns:rsm="` + nsRSM + `" xmlns:ram="` + nsRAM +
		`" xmlns:qdt="` + nsQDT + `" xmlns:udt="` + nsUDT + `">` + "\n")
	w.depth = 1

	w.open("rsm:ExchangedDocumentContext")
	if bp := inv.BusinessProcess(); bp != "" {
		w.open("ram:BusinessProcessSpecifiedDocumentContextParameter")
		w.text("ram:ID", bp)
		w.close("ram:BusinessProcessSpecifiedDocumentContextParameter")
	}
	w.open("ram:GuidelineSpecifiedDocumentContextParameter")
	w.text("ram:ID", inv.Guideline())
	w.close("ram:GuidelineSpecifiedDocumentContextParameter")
	w.close("rsm:ExchangedDocumentContext")

	w.open("rsm:ExchangedDocument")
	w.text("ram:ID", inv.Number)
	w.text("ram:TypeCode", string(inv.TypeCode))
	w.date("ram:IssueDateTime", "udt", inv.IssueDate)
	for _, n := range inv.Notes {
		w.open("ram:IncludedNote")
		w.text("ram:Content", n)
		w.close("ram:IncludedNote")
	}
	w.close("rsm:ExchangedDocument")

	w.open("rsm:SupplyChainTradeTransaction")
	for i := range inv.Lines {
		writeLine(w, &inv.Lines[i])
	}
	writeAgreement(w, &inv)
	writeDelivery(w, &inv)
	writeSettlement(w, &inv)
	w.close("rsm:SupplyChainTradeTransaction")

	w.depth = 0
	w.raw("</rsm:CrossIndustryInvoice>\n")
	return w.buf.Bytes(), nil
}

func writeLine(w *writer, l *billing.Line) {
	w.open("ram:IncludedSupplyChainTradeLineItem")
	w.open("ram:AssociatedDocumentLineDocument")
	w.text("ram:LineID", l.ID)
	w.close("ram:AssociatedDocumentLineDocument")

	w.open("ram:SpecifiedTradeProduct")
	w.opt("ram:SellerAssignedID", l.SKU)
	w.text("ram:Name", l.Name)
	w.close("ram:SpecifiedTradeProduct")

	w.open("ram:SpecifiedLineTradeAgreement")
	w.open("ram:NetPriceProductTradePrice")
	w.decimal("ram:ChargeAmount", l.UnitNetPrice)
	w.close("ram:NetPriceProductTradePrice")
	w.close("ram:SpecifiedLineTradeAgreement")

	w.open("ram:SpecifiedLineTradeDelivery")
	w.indent()
	w.raw(`<ram:BilledQuantity unitCode="`)
	w.escape(l.UnitCode)
	w.raw(`">`)
	w.buf.Write(l.Quantity.AppendText(w.scratch[:0]))
	w.raw("</ram:BilledQuantity>\n")
	w.close("ram:SpecifiedLineTradeDelivery")

	w.open("ram:SpecifiedLineTradeSettlement")
	w.open("ram:ApplicableTradeTax")
	w.text("ram:TypeCode", "VAT")
	w.text("ram:CategoryCode", string(l.Category))
	if l.Category != billing.CategoryNotSubject { // BR-O-05: no rate on O lines
		w.decimal("ram:RateApplicablePercent", l.Rate)
	}
	w.close("ram:ApplicableTradeTax")
	if p := l.Period; p != nil {
		w.open("ram:BillingSpecifiedPeriod") // BG-26
		w.date("ram:StartDateTime", "udt", p.Start)
		w.date("ram:EndDateTime", "udt", p.End)
		w.close("ram:BillingSpecifiedPeriod")
	}
	if l.DiscountCents != 0 {
		w.open("ram:SpecifiedTradeAllowanceCharge")
		w.open("ram:ChargeIndicator")
		w.text("udt:Indicator", "false")
		w.close("ram:ChargeIndicator")
		w.amount("ram:ActualAmount", l.DiscountCents)
		w.text("ram:Reason", "Rabatt")
		w.close("ram:SpecifiedTradeAllowanceCharge")
	}
	w.open("ram:SpecifiedTradeSettlementLineMonetarySummation")
	w.amount("ram:LineTotalAmount", l.NetCents)
	w.close("ram:SpecifiedTradeSettlementLineMonetarySummation")
	w.close("ram:SpecifiedLineTradeSettlement")
	w.close("ram:IncludedSupplyChainTradeLineItem")
}

func writeAgreement(w *writer, inv *billing.Invoice) {
	w.open("ram:ApplicableHeaderTradeAgreement")
	w.opt("ram:BuyerReference", inv.BuyerReference)

	s := &inv.Seller
	w.open("ram:SellerTradeParty")
	w.opt("ram:ID", s.ID)
	w.text("ram:Name", s.Name)
	if s.LegalRegistrationID != "" {
		w.open("ram:SpecifiedLegalOrganization")
		w.text("ram:ID", s.LegalRegistrationID)
		w.close("ram:SpecifiedLegalOrganization")
	}
	writeContact(w, s)
	writeAddress(w, s)
	writeElectronic(w, s)
	if s.VATID != "" {
		w.taxReg("VA", s.VATID)
	}
	if s.TaxNumber != "" {
		w.taxReg("FC", s.TaxNumber)
	}
	w.close("ram:SellerTradeParty")

	b := &inv.Buyer
	w.open("ram:BuyerTradeParty")
	w.text("ram:Name", b.Name)
	writeContact(w, b)
	writeAddress(w, b)
	writeElectronic(w, b)
	if b.VATID != "" {
		w.taxReg("VA", b.VATID)
	}
	w.close("ram:BuyerTradeParty")

	if inv.OrderNo != "" {
		w.open("ram:SellerOrderReferencedDocument")
		w.text("ram:IssuerAssignedID", inv.OrderNo)
		w.close("ram:SellerOrderReferencedDocument")
	}
	w.close("ram:ApplicableHeaderTradeAgreement")
}

func writeContact(w *writer, p *billing.Party) {
	if p.ContactName == "" && p.ContactPhone == "" && p.ContactEmail == "" {
		return
	}
	w.open("ram:DefinedTradeContact")
	w.opt("ram:PersonName", p.ContactName)
	if p.ContactPhone != "" {
		w.open("ram:TelephoneUniversalCommunication")
		w.text("ram:CompleteNumber", p.ContactPhone)
		w.close("ram:TelephoneUniversalCommunication")
	}
	if p.ContactEmail != "" {
		w.open("ram:EmailURIUniversalCommunication")
		w.text("ram:URIID", p.ContactEmail)
		w.close("ram:EmailURIUniversalCommunication")
	}
	w.close("ram:DefinedTradeContact")
}

func writeAddress(w *writer, p *billing.Party) {
	w.open("ram:PostalTradeAddress")
	w.opt("ram:PostcodeCode", p.PostalCode)
	w.opt("ram:LineOne", p.Street)
	w.opt("ram:LineTwo", p.AdditionalAddressLine)
	w.opt("ram:CityName", p.City)
	w.text("ram:CountryID", p.CountryCode)
	w.close("ram:PostalTradeAddress")
}

func writeElectronic(w *writer, p *billing.Party) {
	if p.ElectronicAddress == "" {
		return
	}
	w.open("ram:URIUniversalCommunication")
	w.indent()
	w.raw(`<ram:URIID schemeID="`)
	w.escape(p.ElectronicAddressScheme)
	w.raw(`">`)
	w.escape(p.ElectronicAddress)
	w.raw("</ram:URIID>\n")
	w.close("ram:URIUniversalCommunication")
}

func writeDelivery(w *writer, inv *billing.Invoice) {
	if inv.ShipTo == nil && inv.SupplyDate.IsZero() {
		w.empty("ram:ApplicableHeaderTradeDelivery")
		return
	}
	w.open("ram:ApplicableHeaderTradeDelivery")
	if st := inv.ShipTo; st != nil {
		w.open("ram:ShipToTradeParty")
		w.opt("ram:Name", st.Name)
		writeAddress(w, st)
		w.close("ram:ShipToTradeParty")
	}
	if !inv.SupplyDate.IsZero() {
		w.open("ram:ActualDeliverySupplyChainEvent")
		w.date("ram:OccurrenceDateTime", "udt", inv.SupplyDate)
		w.close("ram:ActualDeliverySupplyChainEvent")
	}
	w.close("ram:ApplicableHeaderTradeDelivery")
}

func writeSettlement(w *writer, inv *billing.Invoice) {
	w.open("ram:ApplicableHeaderTradeSettlement")
	pm := &inv.Payment
	dd := pm.DirectDebit
	if dd != nil {
		w.text("ram:CreditorReferenceID", dd.CreditorID) // BT-90
	}
	w.opt("ram:PaymentReference", pm.Reference)
	w.text("ram:InvoiceCurrencyCode", inv.Currency)
	if pm.Code != "" {
		w.open("ram:SpecifiedTradeSettlementPaymentMeans")
		w.text("ram:TypeCode", pm.Code)
		w.opt("ram:Information", pm.Information)
		if c := pm.Card; c != nil {
			w.open("ram:ApplicableTradeSettlementFinancialCard") // BG-18
			w.text("ram:ID", c.Last4)
			w.opt("ram:CardholderName", c.Holder)
			w.close("ram:ApplicableTradeSettlementFinancialCard")
		}
		if dd != nil {
			w.open("ram:PayerPartyDebtorFinancialAccount") // BT-91
			w.text("ram:IBANID", dd.DebitedIBAN)
			w.close("ram:PayerPartyDebtorFinancialAccount")
		}
		if pm.IBAN != "" {
			w.open("ram:PayeePartyCreditorFinancialAccount")
			w.text("ram:IBANID", pm.IBAN)
			w.opt("ram:AccountName", pm.AccountName)
			w.close("ram:PayeePartyCreditorFinancialAccount")
		}
		if pm.BIC != "" {
			w.open("ram:PayeeSpecifiedCreditorFinancialInstitution")
			w.text("ram:BICID", pm.BIC)
			w.close("ram:PayeeSpecifiedCreditorFinancialInstitution")
		}
		w.close("ram:SpecifiedTradeSettlementPaymentMeans")
	}
	for i := range inv.VAT {
		v := &inv.VAT[i]
		w.open("ram:ApplicableTradeTax")
		w.amount("ram:CalculatedAmount", v.TaxCents)
		w.text("ram:TypeCode", "VAT")
		w.opt("ram:ExemptionReason", v.ExemptionReason)
		w.amount("ram:BasisAmount", v.BaseCents)
		w.text("ram:CategoryCode", string(v.Category))
		w.opt("ram:ExemptionReasonCode", v.ExemptionCode)
		w.decimal("ram:RateApplicablePercent", v.Rate)
		w.close("ram:ApplicableTradeTax")
	}
	if p := inv.Period; p != nil {
		w.open("ram:BillingSpecifiedPeriod")
		w.date("ram:StartDateTime", "udt", p.Start)
		w.date("ram:EndDateTime", "udt", p.End)
		w.close("ram:BillingSpecifiedPeriod")
	}
	if pm.Terms != "" || !pm.DueDate.IsZero() || dd != nil {
		w.open("ram:SpecifiedTradePaymentTerms")
		if pm.Terms != "" {
			w.text("ram:Description", pm.Terms)
		}
		if !pm.DueDate.IsZero() {
			w.date("ram:DueDateDateTime", "udt", pm.DueDate) // BT-9
		}
		if dd != nil {
			w.text("ram:DirectDebitMandateID", dd.MandateRef) // BT-89
		}
		w.close("ram:SpecifiedTradePaymentTerms")
	}
	t := &inv.Totals
	w.open("ram:SpecifiedTradeSettlementHeaderMonetarySummation")
	w.amount("ram:LineTotalAmount", t.LineNetCents)
	if t.ChargeCents != 0 {
		w.amount("ram:ChargeTotalAmount", t.ChargeCents)
	}
	if t.AllowanceCents != 0 {
		w.amount("ram:AllowanceTotalAmount", t.AllowanceCents)
	}
	w.amount("ram:TaxBasisTotalAmount", t.TaxBasisCents)
	w.indent()
	w.raw(`<ram:TaxTotalAmount currencyID="`)
	w.escape(inv.Currency)
	w.raw(`">`)
	w.buf.Write(t.TaxCents.AppendText(w.scratch[:0]))
	w.raw("</ram:TaxTotalAmount>\n")
	if t.RoundingCents != 0 {
		w.amount("ram:RoundingAmount", t.RoundingCents)
	}
	w.amount("ram:GrandTotalAmount", t.GrandCents)
	if t.PrepaidCents != 0 {
		w.amount("ram:TotalPrepaidAmount", t.PrepaidCents)
	}
	w.amount("ram:DuePayableAmount", t.DueCents)
	w.close("ram:SpecifiedTradeSettlementHeaderMonetarySummation")
	if ref := inv.Preceding; ref != nil {
		w.open("ram:InvoiceReferencedDocument")
		w.text("ram:IssuerAssignedID", ref.Number)
		if !ref.IssueDate.IsZero() {
			w.date("ram:FormattedIssueDateTime", "qdt", ref.IssueDate)
		}
		w.close("ram:InvoiceReferencedDocument")
	}
	w.close("ram:ApplicableHeaderTradeSettlement")
}

// writer is a minimal indenting XML writer for trusted element names.
type writer struct {
	buf     bytes.Buffer
	depth   int
	scratch [40]byte
}

func (w *writer) raw(s string) { w.buf.WriteString(s) }

func (w *writer) indent() {
	for range w.depth {
		w.buf.WriteString("  ")
	}
}

func (w *writer) open(name string) {
	w.indent()
	w.buf.WriteByte('<')
	w.buf.WriteString(name)
	w.buf.WriteString(">\n")
	w.depth++
}

func (w *writer) close(name string) {
	w.depth--
	w.indent()
	w.buf.WriteString("</")
	w.buf.WriteString(name)
	w.buf.WriteString(">\n")
}

func (w *writer) empty(name string) {
	w.indent()
	w.buf.WriteByte('<')
	w.buf.WriteString(name)
	w.buf.WriteString("/>\n")
}

// text writes <name>value</name>, always.
func (w *writer) text(name, value string) {
	w.indent()
	w.buf.WriteByte('<')
	w.buf.WriteString(name)
	w.buf.WriteByte('>')
	w.escape(value)
	w.buf.WriteString("</")
	w.buf.WriteString(name)
	w.buf.WriteString(">\n")
}

// opt writes <name>value</name> when value is not empty.
func (w *writer) opt(name, value string) {
	if value != "" {
		w.text(name, value)
	}
}

func (w *writer) amount(name string, c money.Cents) {
	w.text(name, string(c.AppendText(w.scratch[:0])))
}

func (w *writer) decimal(name string, d money.Decimal) {
	w.text(name, string(d.AppendText(w.scratch[:0])))
}

// date writes a date in format 102 (YYYYMMDD) with the given data type
// prefix: udt for DateTimeType, qdt for FormattedDateTimeType.
func (w *writer) date(name, prefix string, t time.Time) {
	w.open(name)
	w.indent()
	w.raw("<" + prefix + `:DateTimeString format="102">`)
	y, m, d := t.Date()
	b := strconv.AppendInt(w.scratch[:0], int64(y*10000+int(m)*100+d), 10)
	for i := len(b); i < 8; i++ {
		w.buf.WriteByte('0')
	}
	w.buf.Write(b)
	w.raw("</" + prefix + ":DateTimeString>\n")
	w.close(name)
}

func (w *writer) taxReg(scheme, id string) {
	w.open("ram:SpecifiedTaxRegistration")
	w.indent()
	w.raw(`<ram:ID schemeID="` + scheme + `">`)
	w.escape(id)
	w.raw("</ram:ID>\n")
	w.close("ram:SpecifiedTaxRegistration")
}

// escape writes s as XML character data, dropping characters XML 1.0 does
// not allow.
func (w *writer) escape(s string) {
	last := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var rep string
		switch {
		case r == '&':
			rep = "&amp;"
		case r == '<':
			rep = "&lt;"
		case r == '>':
			rep = "&gt;"
		case r == '"':
			rep = "&quot;"
		case r == utf8.RuneError && size == 1, r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r == 0xFFFE, r == 0xFFFF:
			rep = ""
		default:
			i += size
			continue
		}
		w.buf.WriteString(s[last:i])
		w.buf.WriteString(rep)
		i += size
		last = i
	}
	w.buf.WriteString(s[last:])
}
