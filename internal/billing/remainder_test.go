package billing_test

import (
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/render"
)

// TestCancelRemainder: an invoice with credit notes is cancelled by one
// more credit note over what they left, per VAT rate: the invoice, its
// credit notes and the remainder sum to zero (gross plus rounding amount),
// each rate within the rounding cent; a fully credited invoice gets
// nothing.
func TestCancelRemainder(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	invoice := func(t *testing.T, nets map[string]int64) billing.Invoice {
		t.Helper()
		o := billing.Order{OrderNo: "R-1", RequiresShipping: true,
			BillingAddress: billing.Address{CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}}
		for _, r := range []string{"19", "7"} {
			if net, ok := nets[r]; ok {
				rate, _ := money.ParseDecimal(r)
				o.Items = append(o.Items, billing.Item{Name: "Ware " + r, Quantity: money.Int(1), UnitNetCents: &net, TaxRate: &rate})
			}
		}
		invs, err := billing.Compute(o, billing.ExampleSeller(), billing.Context{IssueDate: day, SupplyDate: day, Numbers: []string{"RE-2026-000001"}})
		if err != nil {
			t.Fatal(err)
		}
		return invs[0]
	}
	tests := []struct {
		name    string
		nets    map[string]int64 // net per rate
		refunds []money.Cents
		parts   []money.Cents // remainder gross per rate (19 %, 7 %), nil: no document
		due     money.Cents
	}{
		// 59.50 + 40.50 = 100.00; 30.00 back is 17.85 + 12.16 (12.15 at 7 % is no
		// rate step: one cent rounding), so 41.65 + 28.34 are left, 70.00 due.
		{"one refund", map[string]int64{"19": 5000, "7": 3785}, []money.Cents{3000}, []money.Cents{4165, 2834}, 7000},
		{"two refunds", map[string]int64{"19": 5000, "7": 3785}, []money.Cents{1000, 2500}, []money.Cents{3868, 2632}, 6500},
		// 23.79 + 3.56 = 27.35, 10.07 back: 17.28 are left, 15.03 + 2.26 with a cent of rounding.
		{"rounding residuals", map[string]int64{"19": 1999, "7": 333}, []money.Cents{1, 7, 999}, []money.Cents{1503, 226}, 1728},
		// 100.00, 49.99 back: 50.01 left, which no net at 19 % reaches (50.00, 50.02).
		{"one rate", map[string]int64{"19": 8403}, []money.Cents{4999}, []money.Cents{5002}, 5001},
		{"fully credited", map[string]int64{"19": 5000, "7": 3785}, []money.Cents{3000, 7000}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := invoice(t, tc.nets)
			var notes []billing.Invoice
			var refunded money.Cents
			for i, r := range tc.refunds {
				refunded += r
				n, err := billing.Refund(orig, "RE-2026-00010"+string(rune('0'+i)), day.AddDate(0, 0, 1), r, refundedByCard)
				if err != nil {
					t.Fatal(err)
				}
				notes = append(notes, n)
			}
			c, ok, err := billing.CancelRemainder(orig, notes, "RE-2026-000200", day.AddDate(0, 0, 9))
			if err != nil {
				t.Fatal(err)
			}
			if tc.parts == nil {
				if ok {
					t.Fatalf("fully credited, still a remainder: %+v", c.Totals)
				}
				return
			}
			if !ok {
				t.Fatal("no remainder")
			}
			if c.TypeCode != billing.TypeCreditNote || c.Kind != billing.KindCreditNote || c.Preceding == nil ||
				c.Preceding.Number != orig.Number || !c.Preceding.IssueDate.Equal(orig.IssueDate) {
				t.Errorf("type %s kind %s preceding %+v", c.TypeCode, c.Kind, c.Preceding)
			}
			// Settled by offset against the invoice: BT-113 the remainder, nothing due.
			if rest := c.Totals.GrandCents + c.Totals.RoundingCents; rest != tc.due || rest != orig.Totals.DueCents-refunded ||
				c.Totals.PrepaidCents != rest || c.Totals.OffsetCents != rest || c.Totals.DueCents != 0 {
				t.Errorf("remainder %s prepaid %s offset %s due %s, want remainder %s", rest, c.Totals.PrepaidCents,
					c.Totals.OffsetCents, c.Totals.DueCents, tc.due)
			}
			// Everything sums to zero: gross plus rounding, and per rate within the rounding cent.
			sum := orig.Totals.GrandCents + orig.Totals.RoundingCents - c.Totals.GrandCents - c.Totals.RoundingCents
			perRate := map[string]money.Cents{}
			for _, v := range orig.VAT {
				perRate[v.Rate.String()] += v.BaseCents + v.TaxCents
			}
			for _, n := range notes {
				sum -= n.Totals.GrandCents + n.Totals.RoundingCents
				for _, v := range n.VAT {
					perRate[v.Rate.String()] -= v.BaseCents + v.TaxCents
				}
			}
			if sum != 0 {
				t.Errorf("documents sum to %s, want 0", sum)
			}
			var got []money.Cents
			for _, v := range c.VAT {
				g := v.BaseCents + v.TaxCents
				got = append(got, g)
				if d := perRate[v.Rate.String()] - g; d < -1 || d > 1 {
					t.Errorf("%s %%: %s left, remainder %s", v.Rate, perRate[v.Rate.String()], g)
				}
			}
			if len(got) != len(tc.parts) {
				t.Fatalf("parts %v, want %v", got, tc.parts)
			}
			for i := range got {
				if got[i] != tc.parts[i] {
					t.Errorf("parts %v, want %v", got, tc.parts)
				}
			}
			if err := billing.Invariants(&c); err != nil {
				t.Error(err)
			}
			if note := strings.Join(c.Notes, " "); !strings.Contains(note, "Stornierung der Rechnung "+orig.Number) ||
				!strings.Contains(note, notes[0].Number) || strings.Contains(note, "Gutschrift") {
				t.Errorf("notes %q", c.Notes)
			}
			xml, err := render.CII(c)
			if err != nil {
				t.Fatal(err)
			}
			if fs := einvoice.CheckXML(xml); len(fs) > 0 {
				t.Errorf("%v", fs)
			}
		})
	}

	orig := invoice(t, map[string]int64{"19": 5000})
	other := orig
	other.Number = "RE-2026-000050"
	n, err := billing.Refund(other, "RE-2026-000051", day, 100, refundedByCard)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := billing.CancelRemainder(orig, []billing.Invoice{n}, "RE-2026-000052", day); err == nil {
		t.Error("a credit note of another invoice accepted")
	}
	if _, _, err := billing.CancelRemainder(orig, nil, "TEST-RE-2026-000052", day); err == nil {
		t.Error("a number of the other range accepted")
	}
}

// refundedByCard: the provider paid a refund back to the card it came from.
var refundedByCard = billing.RefundSettlement{Refunded: true, Refund: billing.ReceivedPayment{
	Provider: "Stripe", Reference: "pi_test", Date: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
	Method: billing.PaymentMethod{Kind: billing.MethodCard, CardBrand: "visa", CardFunding: "credit", CardLast4: "4242"},
}}
