package billing_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/render"
)

// TestEveryAcceptedQuantityIsBillable: an order that Validate accepts is
// one Compute can bill and whose XML has neither errors nor warnings by
// the EN 16931 rules, for fractional quantities whose product ends in half
// a cent (2.5 x 1.01 = 2.525) and every pricing kind. Orders the engine
// cannot bill are refused by Validate with the field, never accepted.
func TestEveryAcceptedQuantityIsBillable(t *testing.T) {
	t.Parallel()
	quantities := []string{"2.5", "0.5", "1.005", "12.345", "0.125", "7.75", "3.333", "1000.5", "0.001"}
	prices := []int64{101, 1, 3333, 19999, 5}
	seller := billing.ExampleSeller()
	accepted := 0
	for _, q := range quantities {
		for _, p := range prices {
			for _, gross := range []bool{false, true} {
				for _, r := range []string{"19", "7"} {
					name := fmt.Sprintf("q=%s price=%d gross=%v rate=%s", q, p, gross, r)
					qty, err := money.ParseDecimal(q)
					if err != nil {
						t.Fatal(err)
					}
					rate, _ := money.ParseDecimal(r)
					it := billing.Item{Name: "Meterware", Quantity: qty, TaxRate: &rate}
					if gross {
						it.UnitGrossCents = &p
					} else {
						it.UnitNetCents = &p
					}
					o := billing.Order{OrderNo: "F-1", RequiresShipping: true, Items: []billing.Item{it, it},
						BillingAddress: billing.Address{CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}}
					if err := billing.Validate(o, seller); err != nil {
						// Refused at the door is allowed, but only with the field of the item.
						fe := asFieldErrors(t, err)
						if fe[0].Field != "items[0].quantity" && fe[0].Field != "items[0].unitNetCents" {
							t.Errorf("%s: refused with field %s: %v", name, fe[0].Field, err)
						}
						continue
					}
					accepted++
					day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
					invs, err := billing.Compute(o, seller, billing.Context{IssueDate: day, SupplyDate: day, Numbers: []string{"RE-2026-000001"}})
					if err != nil {
						t.Errorf("%s: accepted by Validate, refused by Compute: %v", name, err)
						continue
					}
					xml, err := render.CII(invs[0])
					if err != nil {
						t.Errorf("%s: render: %v", name, err)
						continue
					}
					if fs := einvoice.CheckXML(xml); len(fs) > 0 {
						t.Errorf("%s: findings %v", name, fs)
					}
				}
			}
		}
	}
	if accepted < len(quantities)*len(prices)*2*2-4 {
		t.Errorf("only %d orders accepted: the door refuses billable orders", accepted)
	}
}

// TestHalfCentProductIsRoundedHalfUp pins the case that used to stop the
// invoicer: 2.5 x 1.01 EUR = 2.525 EUR, billed as 2.53.
func TestHalfCentProductIsRoundedHalfUp(t *testing.T) {
	t.Parallel()
	q, _ := money.ParseDecimal("2.5")
	r, _ := money.ParseDecimal("19")
	p := int64(101)
	o := billing.Order{OrderNo: "F-2", RequiresShipping: true,
		Items:          []billing.Item{{Name: "Kabel je Meter", Quantity: q, UnitNetCents: &p, TaxRate: &r}},
		BillingAddress: billing.Address{CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}}
	if err := billing.Validate(o, billing.ExampleSeller()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	invs, err := billing.Compute(o, billing.ExampleSeller(), billing.Context{IssueDate: day, SupplyDate: day, Numbers: []string{"RE-2026-000001"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := invs[0].Lines[0].NetCents; got != 253 {
		t.Errorf("line net = %d cents, want 253", got)
	}
	// 2.53 x 19 % = 0.4807 -> 0.48
	if got := invs[0].Totals.GrandCents; got != 301 {
		t.Errorf("grand total = %d cents, want 301", got)
	}
}

// TestInvariantViolationNamesTheInput: a line that breaks an invariant is
// reported with the order input it comes from.
func TestInvariantViolationNamesTheInput(t *testing.T) {
	t.Parallel()
	price, _ := money.ParseDecimal("1.01")
	tests := []struct {
		name  string
		net   money.Cents
		field string
	}{
		{"half a cent is the rounding", 253, ""},
		{"half a cent the other way", 252, ""},
		{"more than half a cent", 254, "items[0].quantity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inv := billing.InvoiceWithLineForTest("2.5", price, tc.net, "items[0]")
			err := billing.Invariants(&inv)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Invariants: %v", err)
				}
				return
			}
			ie, ok := err.(*billing.InvariantError)
			if !ok || ie.Field != tc.field {
				t.Fatalf("Invariants = %v, want an InvariantError on %s", err, tc.field)
			}
		})
	}
}

func asFieldErrors(t *testing.T, err error) billing.FieldErrors {
	t.Helper()
	fe, ok := err.(billing.FieldErrors)
	if !ok || len(fe) == 0 {
		t.Fatalf("error %T %v, want FieldErrors", err, err)
	}
	return fe
}
