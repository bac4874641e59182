package render

import (
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
)

// BenchmarkLayout is the layout library's share of BenchmarkPDF: the typical
// invoice's XML read and laid out by maroto (gofpdf's plain PDF with font
// placeholders), without the fonts, compression and PDF/A-3 writing. It is
// the floor of any PDF laid out with maroto.
func BenchmarkLayout(b *testing.B) {
	sc := billing.Typical()
	invs, err := billing.Compute(sc.Order, sc.Seller, sc.Context)
	if err != nil {
		b.Fatal(err)
	}
	x, err := CII(invs[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		v, err := readView(x, false)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := layout(v); err != nil {
			b.Fatal(err)
		}
	}
}
