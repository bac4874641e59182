package lifecycle

import "testing"

// TestDecide has one row per row of the spec's state table that decides
// whether an order is invoiced, and per hold.
func TestDecide(t *testing.T) {
	t.Parallel()
	due := Decision{Due: true, WaitingFor: WaitingNone}
	tests := []struct {
		name string
		f    Facts
		want Decision
	}{
		{"digital order, payment matched: invoiced without fulfillment", Facts{Status: "created", Paid: true}, due},
		{"digital order, no payment yet: stays without invoice", Facts{Status: "created"}, Decision{WaitingFor: WaitingPayment}},
		{"goods, fulfilled and paid: invoiced", Facts{Status: "created", RequiresShipping: true, Fulfilled: true, Paid: true}, due},
		{"goods, paid, partial shipment: no complete invoice yet", Facts{Status: "created", RequiresShipping: true, Paid: true}, Decision{WaitingFor: WaitingFulfillment}},
		{"goods, fulfilled, not paid: waits for the payment", Facts{Status: "created", RequiresShipping: true, Fulfilled: true}, Decision{WaitingFor: WaitingPayment}},
		{"invoice-first gateway, service: an open item at once", Facts{Status: "created", InvoiceFirst: true}, due},
		{"invoice-first gateway, goods: at the complete shipment", Facts{Status: "created", InvoiceFirst: true, RequiresShipping: true}, Decision{WaitingFor: WaitingFulfillment}},
		{"invoice-first gateway, goods shipped", Facts{Status: "created", InvoiceFirst: true, RequiresShipping: true, Fulfilled: true}, due},
		{"store credit covers everything: no payment needed", Facts{Status: "created", CoveredByCredit: true}, due},
		{"accrual, no period, no product default: held", Facts{Status: "created", Paid: true, Accrual: true}, Decision{WaitingFor: WaitingNone, Hold: HoldRevenueRecognition}},
		{"accrual with a service period", Facts{Status: "created", Paid: true, Accrual: true, ServicePeriod: true}, due},
		{"accrual with the product's revenue recognition", Facts{Status: "created", Paid: true, Accrual: true, RevenueRecognised: true}, due},
		{"accrual, goods: revenue at the date of supply", Facts{Status: "created", Paid: true, Accrual: true, RequiresShipping: true, Fulfilled: true}, due},
		{"cash accounting, no period", Facts{Status: "created", Paid: true}, due},
		{"Leitweg-ID without the contact's phone: held", Facts{Status: "created", Paid: true, XRechnung: true}, Decision{WaitingFor: WaitingNone, Hold: HoldContactPhone}},
		{"Leitweg-ID with the contact's phone", Facts{Status: "created", Paid: true, XRechnung: true, ContactPhone: true}, due},
		{"Leitweg-ID without phone, not paid: waits for the payment first", Facts{Status: "created", XRechnung: true}, Decision{WaitingFor: WaitingPayment}},
		{"invoiced already", Facts{Status: "invoiced", Paid: true}, Decision{WaitingFor: WaitingNone}},
		{"cancelled", Facts{Status: "cancelled", Paid: true}, Decision{WaitingFor: WaitingNone}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Decide(tc.f); got != tc.want {
				t.Errorf("Decide(%+v) = %+v, want %+v", tc.f, got, tc.want)
			}
		})
	}
}

func TestPaymentOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f    Facts
		want string
	}{
		{Facts{Status: "created"}, PaymentPending},
		{Facts{Status: "created", InvoiceFirst: true}, PaymentPending},
		{Facts{Status: "invoiced", InvoiceFirst: true}, PaymentOpen},
		{Facts{Status: "invoiced", InvoiceFirst: true, Paid: true}, PaymentPaid},
		{Facts{Status: "invoiced", CoveredByCredit: true}, PaymentCredit},
		{Facts{Status: "created", Paid: true}, PaymentPaid},
	}
	for _, tc := range tests {
		if got := PaymentOf(tc.f); got != tc.want {
			t.Errorf("PaymentOf(%+v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}
