package render_test

import (
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/render"
)

func typical(b *testing.B) billing.Invoice {
	b.Helper()
	sc := billing.Typical()
	invs, err := billing.Compute(sc.Order, sc.Seller, sc.Context)
	if err != nil {
		b.Fatal(err)
	}
	return invs[0]
}

// BenchmarkCII serialises the typical invoice (10 lines, two rates, shipping).
func BenchmarkCII(b *testing.B) {
	inv := typical(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.CII(inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck validates the typical invoice value with the Go rules.
func BenchmarkCheck(b *testing.B) {
	inv := typical(b)
	b.ReportAllocs()
	for b.Loop() {
		if fs := einvoice.Check(inv); len(fs) > 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkCheckXML validates the typical invoice's XML (structure and rules).
func BenchmarkCheckXML(b *testing.B) {
	x, err := render.CII(typical(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(x)))
	for b.Loop() {
		if fs := einvoice.CheckXML(x); len(fs) > 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkPipeline is one invoice as the pipeline handles it: compute,
// serialise, validate the XML (structure and every rule; the same rules
// Check applies to the value).
func BenchmarkPipeline(b *testing.B) {
	sc := billing.Typical()
	b.ReportAllocs()
	for b.Loop() {
		invs, err := billing.Compute(sc.Order, sc.Seller, sc.Context)
		if err != nil {
			b.Fatal(err)
		}
		x, err := render.CII(invs[0])
		if err != nil {
			b.Fatal(err)
		}
		if fs := einvoice.CheckXML(x); len(fs) > 0 {
			b.Fatal(fs)
		}
	}
}
