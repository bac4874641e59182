package einvoice_test

import (
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/einvoice"
)

// TestReadCIIFields: what CII writes of an invoice reads back from the
// document, field by field, for every scenario.
func TestReadCIIFields(t *testing.T) {
	t.Parallel()
	for name, invs := range documents(t) {
		for i, inv := range invs {
			d, fs, err := einvoice.ReadCII([]byte(mustXML(t, inv)))
			if err != nil || len(fs) > 0 {
				t.Fatalf("%s[%d]: %v, %v", name, i, err, fs)
			}
			check := func(what, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s[%d] %s = %q, want %q", name, i, what, got, want)
				}
			}
			check("number", d.Number, inv.Number)
			check("type code", d.TypeCode, string(inv.TypeCode))
			check("guideline", d.Guideline, inv.Guideline())
			check("issue date", d.IssueDate.Value+"/"+d.IssueDate.Format, inv.IssueDate.Format("20060102")+"/102")
			check("currency", d.Currency, inv.Currency)
			check("order number", d.OrderReference, inv.OrderNo)
			check("buyer reference", d.BuyerReference, inv.BuyerReference)
			check("seller name", d.Seller.Name, inv.Seller.Name)
			check("seller VAT ID", d.Seller.VATID, inv.Seller.VATID)
			check("seller tax number", d.Seller.TaxNumber, inv.Seller.TaxNumber)
			check("buyer address line 2", d.Buyer.LineTwo, inv.Buyer.AdditionalAddressLine)
			check("buyer country", d.Buyer.Country, inv.Buyer.CountryCode)
			check("payment reference", d.PaymentReference, inv.Payment.Reference)
			if pm := inv.Payment; pm.Code != "" {
				if len(d.PaymentMeans) != 1 {
					t.Fatalf("%s[%d]: payment means %+v", name, i, d.PaymentMeans)
				}
				m := d.PaymentMeans[0]
				check("payment means", m.TypeCode, pm.Code)
				check("payment information", m.Information, pm.Information)
				check("IBAN", m.IBAN, pm.IBAN)
				check("account name", m.AccountName, pm.AccountName)
				check("BIC", m.BIC, pm.BIC)
			}
			if (d.Period != nil) != (inv.Period != nil) {
				t.Errorf("%s[%d]: period %+v, want %+v", name, i, d.Period, inv.Period)
			} else if p := inv.Period; p != nil {
				check("period start", d.Period.Start.Value+"/"+d.Period.Start.Format, p.Start.Format("20060102")+"/102")
				check("period end", d.Period.End.Value+"/"+d.Period.End.Format, p.End.Format("20060102")+"/102")
			}
			if len(d.VAT) != len(inv.VAT) {
				t.Fatalf("%s[%d]: %d VAT breakdowns, want %d", name, i, len(d.VAT), len(inv.VAT))
			}
			for k, v := range inv.VAT {
				check("VAT category", d.VAT[k].Category, string(v.Category))
				check("exemption code", d.VAT[k].ExemptionCode, v.ExemptionCode)
			}
			check("due", d.Totals.Due, inv.Totals.DueCents.String())
			if len(d.Lines) != len(inv.Lines) {
				t.Fatalf("%s[%d]: %d lines, want %d", name, i, len(d.Lines), len(inv.Lines))
			}
			for k, l := range inv.Lines {
				check("line SKU", d.Lines[k].SellerID, l.SKU)
				check("line unit", d.Lines[k].UnitCode, l.UnitCode)
				check("line net", d.Lines[k].Net, l.NetCents.String())
				if l.DiscountCents != 0 {
					if ac := d.Lines[k].AllowancesOrCharges; len(ac) != 1 || ac[0].Indicator != "false" {
						t.Errorf("%s[%d] line %d: allowances %+v", name, i, k, ac)
					}
				}
			}
		}
	}
}

// TestReadCIIStructure: a document with structure findings is still read
// (the findings are CheckXML's first ones); one that is not well-formed, or
// has another root, is not.
func TestReadCIIStructure(t *testing.T) {
	t.Parallel()
	valid := mustXML(t, documents(t)["single-rate"][0])
	const total = "<ram:SpecifiedTradeSettlementHeaderMonetarySummation>"
	const terms = "<ram:SpecifiedTradePaymentTerms>"
	emptyPeriod := strings.Replace(valid, terms, "<ram:BillingSpecifiedPeriod></ram:BillingSpecifiedPeriod>"+terms, 1)
	d, fs, err := einvoice.ReadCII([]byte(emptyPeriod))
	if err != nil || len(fs) != 0 || d.Period == nil || *d.Period != (einvoice.Period{}) {
		t.Errorf("an empty period element: %+v, %v, %v", d.Period, fs, err)
	}
	outOfOrder := strings.Replace(valid, total, "<ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>"+total, 1)
	d, fs, err = einvoice.ReadCII([]byte(outOfOrder))
	if err != nil || d == nil || len(fs) == 0 || fs[0].Rule != einvoice.RuleXSD {
		t.Errorf("out of order: document %v, %v, %v", d != nil, fs, err)
	}
	if all := einvoice.CheckXML([]byte(outOfOrder)); len(all) < len(fs) || all[0] != fs[0] {
		t.Errorf("CheckXML %v does not begin with %v", all, fs)
	}
	for _, bad := range []string{"", valid[:len(valid)/2], `<CrossIndustryInvoice/>`} {
		d, fs, err := einvoice.ReadCII([]byte(bad))
		if d != nil || err == nil || len(fs) != 1 || err.Error() != fs[0].Message {
			t.Errorf("%.40q: document %v, %v, %v", bad, d != nil, fs, err)
		}
	}
}
