package billing_test

import (
	"reflect"
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
)

// TestPrepareThenNumberIsCompute: the documents prepared before their
// numbers are taken and numbered after are those Compute makes, however
// often the prepared order is numbered, and Prepared.Documents is the
// count of numbers Documents asks for.
func TestPrepareThenNumberIsCompute(t *testing.T) {
	for _, sc := range append(billing.Scenarios(), billing.Typical()) {
		t.Run(sc.Name, func(t *testing.T) {
			want, wantErr := billing.Compute(sc.Order, sc.Seller, sc.Context)
			pr, err := billing.Prepare(sc.Order, sc.Seller)
			if err != nil {
				if wantErr == nil {
					t.Fatalf("Prepare: %v; Compute succeeded", err)
				}
				return
			}
			if got, want := pr.Documents(), billing.Documents(sc.Order); got != want {
				t.Errorf("Prepared.Documents() = %d, Documents = %d", got, want)
			}
			for round := range 2 {
				got, err := pr.Number(sc.Context)
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("round %d: Number error %v, Compute error %v", round, err, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("round %d: Number differs from Compute:\n got %+v\nwant %+v", round, got, want)
				}
			}
		})
	}
}

// TestNumberNeedsANumberPerDocument: a prepared order numbered with too
// few numbers is refused, as Compute refuses it.
func TestNumberNeedsANumberPerDocument(t *testing.T) {
	sc := billing.Typical()
	pr, err := billing.Prepare(sc.Order, sc.Seller)
	if err != nil {
		t.Fatal(err)
	}
	ctx := sc.Context
	ctx.Numbers = nil
	if _, err := pr.Number(ctx); err == nil {
		t.Fatal("numbered without numbers")
	}
}
