package billing_test

import (
	"fmt"
	"strings"
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

// TestOpenItemPaymentTerms: an invoice-first order's invoice is an open item
// with a due date (BT-9) after the project's payment term and terms text
// (BT-20) naming it; other invoices have no due date.
func TestOpenItemPaymentTerms(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	price := int64(1000)
	rate, _ := money.ParseDecimal("19")
	tests := []struct {
		name    string
		gateway string
		days    int
		want    time.Time
		terms   string
		paid    bool // the provider's payment matched before issue
	}{
		{"invoice-first, default term", "invoice", 0, day.AddDate(0, 0, 14), "Zahlbar innerhalb von 14 Tagen ohne Abzug bis zum 16.03.2026.", false},
		{"invoice-first, 30 days", "invoice", 30, day.AddDate(0, 0, 30), "Zahlbar innerhalb von 30 Tagen ohne Abzug bis zum 01.04.2026.", false},
		{"gateway spelled differently", "Invoice", 30, time.Time{}, "Zahlbar sofort ohne Abzug.", false},
		{"provider payment matched: paid, nothing asked", "stripe", 30, time.Time{},
			"Bezahlt am 01.03.2026 per Online-Zahlung über Stripe (pi_T1). Es ist keine Zahlung mehr zu leisten.", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := billing.ExampleSeller()
			s.InvoiceFirstGateways, s.PaymentTermDays = []string{"invoice"}, tc.days
			o := billing.Order{OrderNo: "T-1", RequiresShipping: true, PaymentGateway: tc.gateway,
				Items:          []billing.Item{{Name: "Tee", Quantity: money.Int(1), UnitNetCents: &price, TaxRate: &rate}},
				BillingAddress: billing.Address{CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}}
			if tc.paid {
				o.Payments = []billing.ReceivedPayment{{Provider: "Stripe", Reference: "pi_T1", Date: day.AddDate(0, 0, -1), Cents: 1190}}
			}
			invs, err := billing.Compute(o, s, billing.Context{IssueDate: day, SupplyDate: day, Numbers: []string{"RE-2026-000001"}})
			if err != nil {
				t.Fatal(err)
			}
			pm := invs[0].Payment
			if !pm.DueDate.Equal(tc.want) || !strings.HasPrefix(pm.Terms, tc.terms) {
				t.Errorf("due %v terms %q, want %v %q", pm.DueDate, pm.Terms, tc.want, tc.terms)
			}
		})
	}
}

// TestRefundSplitsByGrossRatio: a partial refund becomes a credit note (381)
// referencing the invoice, split over its VAT rates by their gross with the
// largest remainder; every cent of the refund is on the document (a cent no
// rate step reaches is the rounding amount), and the XML passes the rules.
func TestRefundSplitsByGrossRatio(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	r19, _ := money.ParseDecimal("19")
	r7, _ := money.ParseDecimal("7")
	p1, p2 := int64(10000), int64(5000)
	o := billing.Order{OrderNo: "R-1", RequiresShipping: true,
		Items: []billing.Item{{Name: "Jacke", Quantity: money.Int(1), UnitNetCents: &p1, TaxRate: &r19},
			{Name: "Buch", Quantity: money.Int(1), UnitNetCents: &p2, TaxRate: &r7}},
		BillingAddress: billing.Address{CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}}
	invs, err := billing.Compute(o, billing.ExampleSeller(), billing.Context{IssueDate: day, SupplyDate: day, Numbers: []string{"RE-2026-000001"}})
	if err != nil {
		t.Fatal(err)
	}
	orig := invs[0] // 100.00 + 19.00 and 50.00 + 3.50: 172.50
	tests := []struct {
		refund money.Cents
		parts  []money.Cents // gross per rate: 19 %, 7 %
	}{
		// 50.00 x 119/172.5 = 34.4927, x 53.5/172.5 = 15.5072: 3449 + 1550 = 4999, the cent to the larger remainder (7 %)
		{5000, []money.Cents{3449, 1551}},
		{1, []money.Cents{1, 0}},
		{17249, []money.Cents{11899, 5350}},
	}
	for _, tc := range tests {
		c, err := billing.Refund(orig, "RE-2026-000002", day.AddDate(0, 0, 5), tc.refund, refundedByCard)
		if err != nil {
			t.Fatalf("refund %s: %v", tc.refund, err)
		}
		if c.TypeCode != billing.TypeCreditNote || c.Kind != billing.KindCreditNote || c.Preceding == nil || c.Preceding.Number != orig.Number {
			t.Errorf("refund %s: type %s kind %s preceding %+v", tc.refund, c.TypeCode, c.Kind, c.Preceding)
		}
		// Paid back through the card already: BT-113 is the refund, nothing due.
		if c.Totals.GrandCents+c.Totals.RoundingCents != tc.refund || c.Totals.PrepaidCents != tc.refund ||
			c.Totals.PaidCents != tc.refund || c.Totals.DueCents != 0 {
			t.Errorf("refund %s: totals %+v", tc.refund, c.Totals)
		}
		var got []money.Cents
		for _, v := range c.VAT {
			got = append(got, v.BaseCents+v.TaxCents)
		}
		var sum money.Cents
		for i, g := range got {
			sum += g
			if d := g - tc.parts[i]; d < -1 || d > 1 {
				t.Errorf("refund %s: part %d is %s, want %s (± the rounding cent)", tc.refund, i, g, tc.parts[i])
			}
		}
		if sum+c.Totals.RoundingCents != tc.refund {
			t.Errorf("refund %s: parts %v + rounding %s", tc.refund, got, c.Totals.RoundingCents)
		}
		xml, err := render.CII(c)
		if err != nil {
			t.Fatal(err)
		}
		if fs := einvoice.CheckXML(xml); len(fs) > 0 {
			t.Errorf("refund %s: %v", tc.refund, fs)
		}
	}
	for _, bad := range []money.Cents{0, -5, 17250, 20000} {
		if _, err := billing.Refund(orig, "RE-2026-000002", day, bad, refundedByCard); err == nil {
			t.Errorf("refund %s accepted; a partial refund is more than 0 and less than 172.50", bad)
		}
	}
}
