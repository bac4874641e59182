package render_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/render"
)

// TestSmallAmountPDF: a small-amount invoice (§ 33 UStDV) is a PDF/A-3
// without an embedded XML, titled as such, with the seller's full name and
// address, the goods, the gross amount and the rate; qpdf finds the file
// sound. A regular invoice keeps its embedded XML.
func TestSmallAmountPDF(t *testing.T) {
	gross, r7 := int64(1499), money.MustParse("7")
	d := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	o := billing.Order{OrderNo: "K-1", Email: "kunde@example.org", BillingAddress: billing.Address{CountryCode: "DE"},
		Items: []billing.Item{{Name: "E-Book Gartenbau", Quantity: money.Int(1), UnitGrossCents: &gross, TaxRate: &r7}}}
	docs, err := billing.Compute(o, billing.ExampleSeller(), billing.Context{IssueDate: d, PaymentDate: d, Numbers: []string{"RE-2026-000001"}})
	if err != nil {
		t.Fatal(err)
	}
	if docs[0].Format != billing.FormatSmallAmount {
		t.Fatalf("format %s", docs[0].Format)
	}
	xml, err := render.CII(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := render.SmallAmountPDF(xml)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"/EmbeddedFile", "factur-x.xml", "fx:ConformanceLevel"} {
		if bytes.Contains(pdf, []byte(absent)) {
			t.Errorf("the small-amount PDF contains %s", absent)
		}
	}
	if !bytes.Contains(pdf, []byte("<pdfaid:part>3</pdfaid:part>")) || !bytes.Contains(pdf, []byte("Kleinbetragsrechnung RE-2026-000001")) {
		t.Error("no PDF/A-3 identification or title in the XMP")
	}
	if _, err := render.PDF(xml); err == nil {
		t.Error("render.PDF accepted a document without the buyer's name")
	}
	f := filepath.Join(t.TempDir(), "small.pdf")
	if err := os.WriteFile(f, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("qpdf", "--check", f).CombinedOutput(); err != nil {
		t.Errorf("qpdf --check: %v\n%s", err, out)
	}
	text, err := exec.Command("pdftotext", "-layout", f, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(text, []byte("eingebetteten")) {
		t.Errorf("the small-amount PDF speaks of an embedded e-invoice:\n%s", text)
	}
	for _, want := range []string{"Kleinbetragsrechnung", "Beispiel Versand GmbH", "Musterstraße 12", "10115 Berlin", "E-Book Gartenbau", "14,99", "7%", "§ 33 UStDV"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("the PDF does not show %q:\n%s", want, text)
		}
	}
}
