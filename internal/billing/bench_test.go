package billing

import "testing"

// BenchmarkCompute computes the typical invoice: 10 gross-priced lines at
// two rates with shipping.
func BenchmarkCompute(b *testing.B) {
	sc := Typical()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(sc.Order, sc.Seller, sc.Context); err != nil {
			b.Fatal(err)
		}
	}
}
