package einvoice_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/einvoice/referee"
	"github.com/o2i-service/o2i/render"
)

// documents returns every scenario's computed documents by scenario name.
func documents(t *testing.T) map[string][]billing.Invoice {
	t.Helper()
	out := map[string][]billing.Invoice{}
	for _, sc := range billing.Scenarios() {
		invs, err := sc.Documents()
		if err != nil {
			t.Fatalf("scenario %s: %v", sc.Name, err)
		}
		out[sc.Name] = invs
	}
	return out
}

func mustXML(t *testing.T, inv billing.Invoice) string {
	t.Helper()
	x, err := render.CII(inv)
	if err != nil {
		t.Fatal(err)
	}
	return string(x)
}

// TestCorpusClean: every generated document passes the Go rules, as a value
// and as XML, without a single finding.
func TestCorpusClean(t *testing.T) {
	t.Parallel()
	for name, invs := range documents(t) {
		for i, inv := range invs {
			if fs := einvoice.Check(inv); len(fs) > 0 {
				t.Errorf("%s[%d] Check: %v", name, i, fs)
			}
			if fs := einvoice.CheckXML([]byte(mustXML(t, inv))); len(fs) > 0 {
				t.Errorf("%s[%d] CheckXML: %v", name, i, fs)
			}
		}
	}
}

// TestStructure: the schema checks of CheckXML.
func TestStructure(t *testing.T) {
	t.Parallel()
	base := mustXML(t, documents(t)["single-rate"][0])
	tests := []struct {
		name   string
		mutate func(string) string
		want   []string
	}{
		{"not well-formed", func(s string) string { return s[:len(s)/2] }, []string{"XSD"}},
		{"wrong root", func(s string) string {
			return strings.Replace(strings.Replace(s, "<rsm:CrossIndustryInvoice ", "<rsm:Invoice ", 1), "</rsm:CrossIndustryInvoice>", "</rsm:Invoice>", 1)
		}, []string{"XSD"}},
		{"unknown element", func(s string) string {
			return strings.Replace(s, "<ram:InvoiceCurrencyCode>", "<ram:Bogus>x</ram:Bogus><ram:InvoiceCurrencyCode>", 1)
		}, []string{"XSD"}},
		{"out of order", func(s string) string {
			// currency before payment reference
			i := strings.Index(s, "      <ram:PaymentReference>")
			j := strings.Index(s, "      <ram:InvoiceCurrencyCode>")
			k := strings.Index(s[j:], "\n") + j + 1
			return s[:i] + s[j:k] + s[i:j] + s[k:]
		}, []string{"XSD"}},
		{"missing required element", func(s string) string {
			return strings.Replace(s, "<ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>", "", 1)
		}, []string{"BR-05", "XSD"}},
		{"decimal comma", func(s string) string {
			return strings.Replace(s, "<ram:GrandTotalAmount>402.10<", "<ram:GrandTotalAmount>402,10<", 1)
		}, []string{"XSD"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := einvoice.RuleIDs(einvoice.CheckXML([]byte(tc.mutate(base))))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rule ids (-want +got):\n%s", diff)
			}
		})
	}
}

// mutation is a deliberately broken invoice.
type mutation struct {
	name     string
	scenario string
	doc      int
	value    func(*billing.Invoice) // breaks the invoice value
	xml      func(string) string    // breaks the rendered XML
	want     []string               // rule ids both validators must report
	// ours marks a rule of this service only: the official validator must
	// find the file clean while the Go validator reports want.
	ours bool
}

func replaceOnce(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("mutation target not found: " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

var mutations = []mutation{
	{name: "wrong-grand-total", scenario: "single-rate",
		xml: replaceOnce("<ram:GrandTotalAmount>402.10<", "<ram:GrandTotalAmount>412.10<"), want: []string{"BR-CO-15", "BR-CO-16"}},
	{name: "wrong-line-total", scenario: "mixed-rates-shipping",
		value: func(inv *billing.Invoice) { inv.Totals.LineNetCents += 100 }, want: []string{"BR-CO-10", "BR-CO-13"}},
	{name: "wrong-tax-amount", scenario: "discounts",
		value: func(inv *billing.Invoice) { inv.VAT[0].TaxCents += 500 }, want: []string{"BR-CO-14", "BR-CO-17", "BR-S-09"}},
	{name: "wrong-due-amount", scenario: "credit-partial",
		value: func(inv *billing.Invoice) { inv.Totals.DueCents = inv.Totals.GrandCents }, want: []string{"BR-CO-16"}},
	{name: "missing-seller-vat-id", scenario: "single-rate",
		value: func(inv *billing.Invoice) { inv.Seller.VATID, inv.Seller.TaxNumber = "", "" }, want: []string{"BR-S-02"}},
	{name: "xr-missing-seller-vat-id", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Seller.VATID, inv.Seller.TaxNumber = "", "" }, want: []string{"BR-DE-16", "BR-S-02"}},
	{name: "xr-missing-buyer-reference", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.BuyerReference = "" }, want: []string{"BR-DE-15"}},
	{name: "xr-missing-seller-phone", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Seller.ContactPhone = "" }, want: []string{"BR-DE-6"}},
	{name: "xr-missing-seller-email", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Seller.ContactEmail = "" }, want: []string{"BR-DE-7"}},
	{name: "xr-missing-seller-contact", scenario: "xrechnung",
		value: func(inv *billing.Invoice) {
			inv.Seller.ContactName, inv.Seller.ContactPhone, inv.Seller.ContactEmail = "", "", ""
		}, want: []string{"BR-DE-2"}},
	{name: "xr-missing-payment-means", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Payment.Code = "" }, want: []string{"BR-DE-1"}},
	{name: "xr-credit-transfer-without-iban", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Payment.IBAN = "" }, want: []string{"BR-DE-23-a"}},
	{name: "xr-missing-business-process", scenario: "xrechnung",
		xml: func(s string) string {
			i := strings.Index(s, "    <ram:BusinessProcessSpecifiedDocumentContextParameter>")
			j := strings.Index(s, "</ram:BusinessProcessSpecifiedDocumentContextParameter>\n") + len("</ram:BusinessProcessSpecifiedDocumentContextParameter>\n")
			return s[:i] + s[j:]
		}, want: []string{"PEPPOL-EN16931-R001"}},
	{name: "xr-missing-buyer-electronic-address", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Buyer.ElectronicAddress = "" }, want: []string{"PEPPOL-EN16931-R010"}},
	{name: "xr-line-price-mismatch", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Lines[1].UnitNetPrice = inv.Lines[0].UnitNetPrice }, want: []string{"PEPPOL-EN16931-R120"}},
	{name: "intra-eu-without-buyer-vat-id", scenario: "eu-b2b-goods",
		value: func(inv *billing.Invoice) { inv.Buyer.VATID = "" }, want: []string{"BR-IC-02"}},
	{name: "intra-eu-without-deliver-to", scenario: "eu-b2b-goods",
		value: func(inv *billing.Invoice) { inv.ShipTo = nil }, want: []string{"BR-IC-12"}},
	{name: "reverse-charge-without-reason", scenario: "eu-b2b-services",
		value: func(inv *billing.Invoice) { inv.VAT[0].ExemptionReason, inv.VAT[0].ExemptionCode = "", "" }, want: []string{"BR-AE-10"}},
	{name: "export-with-tax", scenario: "export-goods",
		value: func(inv *billing.Invoice) {
			inv.VAT[0].TaxCents += 100
			inv.Totals.TaxCents += 100
			inv.Totals.GrandCents += 100
			inv.Totals.DueCents += 100
		}, want: []string{"BR-G-09"}},
	{name: "not-subject-with-seller-vat-id", scenario: "services-abroad",
		value: func(inv *billing.Invoice) { inv.Seller.VATID = "DE123456789" }, want: []string{"BR-O-02"}},
	{name: "not-subject-mixed-with-standard", scenario: "gift-card-split", doc: 1,
		value: func(inv *billing.Invoice) {
			l := inv.Lines[0]
			l.ID, l.Category, l.Rate = "2", billing.CategoryStandard, billing.EURates().Rates["DE"].Standard
			inv.Lines = append(inv.Lines, l)
			inv.VAT = append(inv.VAT, billing.VATBreakdown{Category: billing.CategoryStandard, Rate: l.Rate, BaseCents: l.NetCents, TaxCents: 475})
			inv.Totals.LineNetCents += l.NetCents
			inv.Totals.TaxBasisCents += l.NetCents
			inv.Totals.TaxCents += 475
			inv.Totals.GrandCents += l.NetCents + 475
			inv.Totals.DueCents += l.NetCents + 475
		}, want: []string{"BR-O-11", "BR-O-12"}},
	{name: "standard-with-exemption-reason", scenario: "single-rate",
		value: func(inv *billing.Invoice) { inv.VAT[0].ExemptionReason = "steuerfrei" }, want: []string{"BR-S-10"}},
	{name: "line-amount-three-decimals", scenario: "single-rate",
		xml: replaceOnce("<ram:LineTotalAmount>298.00<", "<ram:LineTotalAmount>298.001<"), want: []string{"BR-DEC-23"}},
	{name: "negative-price", scenario: "single-rate",
		value: func(inv *billing.Invoice) { inv.Lines[0].UnitNetPrice = inv.Lines[0].UnitNetPrice.Neg() }, want: []string{"BR-27"}},
	// BR-CO-25 is in CEN 1.3.15 (XRechnung) but was removed in 1.3.16.
	{name: "amount-due-without-terms", scenario: "xrechnung",
		value: func(inv *billing.Invoice) { inv.Payment.Terms = "" }, want: []string{"BR-CO-25"}},
	{name: "missing-buyer-name", scenario: "single-rate",
		value: func(inv *billing.Invoice) { inv.Buyer.Name = "" }, want: []string{"BR-07"}},
	{name: "elements-out-of-order", scenario: "single-rate",
		xml: func(s string) string {
			i := strings.Index(s, "    <ram:ApplicableHeaderTradeDelivery>")
			j := strings.Index(s, "    <ram:ApplicableHeaderTradeSettlement>")
			k := strings.Index(s, "    </ram:ApplicableHeaderTradeSettlement>\n") + len("    </ram:ApplicableHeaderTradeSettlement>\n")
			return s[:i] + s[j:k] + s[i:j] + s[k:]
		}, want: []string{"XSD"}},
	{name: "leitweg-check-digits", scenario: "xrechnung", ours: true,
		value: func(inv *billing.Invoice) { inv.BuyerReference = "04011000-1234512345-07" }, want: []string{einvoice.RuleLeitweg}},
	{name: "test-number-without-note", scenario: "test-mode", ours: true,
		value: func(inv *billing.Invoice) { inv.Notes = nil }, want: []string{einvoice.RuleTest}},
}

// TestAgreement: the Go validator and the official validator both flag each
// deliberately broken invoice with the expected rule ids (one official call
// for all). Rules of this service only are checked the other way round:
// the official validator passes the file, the Go validator flags it.
func TestAgreement(t *testing.T) {
	t.Parallel()
	validator, err := referee.Path()
	if err != nil {
		t.Fatalf("official validator missing: %v", err)
	}
	docs := documents(t)
	dir := t.TempDir()
	files := make([]string, len(mutations))
	ours := make([][]string, len(mutations))
	for i, m := range mutations {
		inv := docs[m.scenario][m.doc]
		inv.Lines = slices.Clone(inv.Lines)
		inv.VAT = slices.Clone(inv.VAT)
		if m.value != nil {
			m.value(&inv)
			ids := einvoice.RuleIDs(einvoice.Check(inv))
			for _, w := range m.want {
				if !slices.Contains(ids, w) {
					t.Errorf("%s: Check misses %s (got %v)", m.name, w, ids)
				}
			}
		}
		x := mustXML(t, inv)
		if m.xml != nil {
			x = m.xml(x)
		}
		ours[i] = einvoice.RuleIDs(einvoice.CheckXML([]byte(x)))
		files[i] = filepath.Join(dir, m.name+".xml")
		if err := os.WriteFile(files[i], []byte(x), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := referee.Run(validator, nil, "auto", files...)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range mutations {
		res := rep.Results[files[i]]
		var official []string
		for _, f := range res.Findings {
			if f.Level == "error" || f.Level == "warning" {
				official = append(official, f.ID)
			}
		}
		slices.Sort(official)
		official = slices.Compact(official)
		for _, w := range m.want {
			if !slices.Contains(ours[i], w) {
				t.Errorf("%s: Go validator misses %s (got %v)", m.name, w, ours[i])
			}
			if !m.ours && !slices.Contains(official, w) {
				t.Errorf("%s: official validator misses %s (got %v)", m.name, w, official)
			}
		}
		if m.ours && !res.Clean() {
			t.Errorf("%s: official validator should pass the file: %s %v", m.name, res.Counts, official)
		}
		if !m.ours && res.Valid && !slices.ContainsFunc(res.Findings, func(f referee.Finding) bool { return f.Level == "warning" }) {
			t.Errorf("%s: official validator finds nothing", m.name)
		}
		t.Logf("%-40s official %v | go %v", m.name, official, ours[i])
	}
}
