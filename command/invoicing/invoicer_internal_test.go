package invoicing

import (
	"testing"

	"github.com/o2i-service/o2i/internal/event"
)

func TestDecideEvent(t *testing.T) {
	t.Parallel()
	total := int64(1000)
	covered := event.OrderContent{FinancialStatus: "paid", GrossTotalCents: &total,
		CreditRedemptions: []event.CreditRedemption{{Type: "referral_credit", AmountCents: 600}, {Type: "referral_credit", AmountCents: 400}}}
	partly := covered
	partly.CreditRedemptions = covered.CreditRedemptions[:1]
	pending := covered
	pending.FinancialStatus = "pending"
	gateway := func(g string, shipping bool) event.OrderContent {
		return event.OrderContent{PaymentGateway: g, RequiresShipping: shipping}
	}
	order := func(status, fulfillment string, c event.OrderContent) event.Order {
		return event.Order{Status: status, FulfillmentStatus: fulfillment, OrderContent: c}
	}
	enabled := func() ([]string, error) { return []string{"invoice", "Rechnung"}, nil }
	tests := []struct {
		name string
		o    event.Order
		paid bool
		want bool
	}{
		{"service fully paid with credit", order("created", "unfulfilled", covered), false, true},
		{"credit covers part only", order("created", "unfulfilled", partly), false, false},
		{"credit covers all but not paid", order("created", "unfulfilled", pending), false, false},
		{"already invoiced", order("invoiced", "unfulfilled", covered), false, false},
		{"invoice-first service", order("created", "unfulfilled", gateway("invoice", false)), false, true},
		{"invoice-first goods before shipping", order("created", "partial", gateway("invoice", true)), false, false},
		{"invoice-first goods shipped", order("created", "fulfilled", gateway("invoice", true)), false, true},
		{"gateway spelled differently", order("created", "fulfilled", gateway("Invoice", true)), false, false},
		{"gateway not enabled", order("created", "fulfilled", gateway("stripe", true)), false, false},
		{"no gateway, no credit (waits for the payment)", order("created", "fulfilled", event.OrderContent{RequiresShipping: true}), false, false},
		{"service paid by the provider", order("created", "unfulfilled", gateway("stripe", false)), true, true},
		{"service, payment not matched", order("created", "unfulfilled", gateway("stripe", false)), false, false},
		{"goods paid, not shipped", order("created", "partial", gateway("stripe", true)), true, false},
		{"goods paid and shipped", order("created", "fulfilled", gateway("stripe", true)), true, true},
		{"paid, already invoiced", order("invoiced", "fulfilled", gateway("stripe", true)), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decideEvent(tt.o, enabled, func() (bool, error) { return tt.paid, nil })
			if err != nil || got.Due != tt.want {
				t.Errorf("decideEvent = %+v, %v; want due %v", got, err, tt.want)
			}
		})
	}
}

// TestDecideEventLooksUpThePaymentOnlyWhenItDecides: goods not shipped yet
// are not due whatever the payment, so neither the project's gateways nor
// the provider's payment are read for them.
func TestDecideEventLooksUpThePaymentOnlyWhenItDecides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fulfillment string
		lookups     int
	}{
		{"goods not shipped", "unfulfilled", 0},
		{"goods partly shipped", "partial", 0},
		{"goods shipped", "fulfilled", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := 0
			o := event.Order{Status: "created", FulfillmentStatus: tt.fulfillment,
				OrderContent: event.OrderContent{PaymentGateway: "stripe", RequiresShipping: true}}
			d, err := decideEvent(o, func() ([]string, error) { n++; return nil, nil }, func() (bool, error) { n++; return false, nil })
			if err != nil || d.Due || n != tt.lookups {
				t.Errorf("decideEvent = %+v, %v after %d lookups; want not due after %d", d, err, n, tt.lookups)
			}
		})
	}
}
