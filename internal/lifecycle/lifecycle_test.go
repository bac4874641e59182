package lifecycle

import (
	"slices"
	"testing"
)

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

// TestWaits: an order lists everything it still misses in process order,
// the payment before the fulfillment, and waitingFor names the first; one
// row per combination of how it is paid and whether it ships, then the holds
// and the other statuses.
func TestWaits(t *testing.T) {
	t.Parallel()
	p, f := WaitingPayment, WaitingFulfillment
	due := Decision{Due: true, WaitingFor: WaitingNone}
	waits := func(w Waiting) Decision { return Decision{WaitingFor: w} }
	created := func(f Facts) Facts { f.Status = "created"; return f }
	tests := []struct {
		name  string
		f     Facts
		waits []Waiting
		want  Decision
	}{
		{"service, unpaid", created(Facts{}), []Waiting{p}, waits(p)},
		{"service, paid", created(Facts{Paid: true}), nil, due},
		{"service, credit covers it", created(Facts{CoveredByCredit: true}), nil, due},
		{"service, invoice-first", created(Facts{InvoiceFirst: true}), nil, due},
		{"service with a fulfilled report, unpaid", created(Facts{Fulfilled: true}), []Waiting{p}, waits(p)},
		{"goods unshipped, unpaid: both, payment first", created(Facts{RequiresShipping: true}), []Waiting{p, f}, waits(p)},
		{"goods unshipped, paid", created(Facts{RequiresShipping: true, Paid: true}), []Waiting{f}, waits(f)},
		{"goods unshipped, credit covers it", created(Facts{RequiresShipping: true, CoveredByCredit: true}), []Waiting{f}, waits(f)},
		{"goods unshipped, invoice-first", created(Facts{RequiresShipping: true, InvoiceFirst: true}), []Waiting{f}, waits(f)},
		{"goods shipped, unpaid", created(Facts{RequiresShipping: true, Fulfilled: true}), []Waiting{p}, waits(p)},
		{"goods shipped, paid", created(Facts{RequiresShipping: true, Fulfilled: true, Paid: true}), nil, due},
		{"goods shipped, credit covers it", created(Facts{RequiresShipping: true, Fulfilled: true, CoveredByCredit: true}), nil, due},
		{"goods shipped, invoice-first", created(Facts{RequiresShipping: true, Fulfilled: true, InvoiceFirst: true}), nil, due},
		{"goods unshipped, unpaid, XRechnung without phone: waits, no hold yet",
			created(Facts{RequiresShipping: true, XRechnung: true}), []Waiting{p, f}, waits(p)},
		{"service unpaid, accrual without period: waits, no hold yet", created(Facts{Accrual: true}), []Waiting{p}, waits(p)},
		{"goods shipped and paid, XRechnung without phone: held, waits for nothing",
			created(Facts{RequiresShipping: true, Fulfilled: true, Paid: true, XRechnung: true}), nil, Decision{WaitingFor: WaitingNone, Hold: HoldContactPhone}},
		{"service paid, accrual without period: held, waits for nothing",
			created(Facts{Paid: true, Accrual: true}), nil, Decision{WaitingFor: WaitingNone, Hold: HoldRevenueRecognition}},
		{"invoiced goods, unpaid (invoice-first), unshipped", Facts{Status: "invoiced", RequiresShipping: true}, nil, waits(WaitingNone)},
		{"cancelled goods, unpaid, unshipped", Facts{Status: "cancelled", RequiresShipping: true}, nil, waits(WaitingNone)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Waits(tc.f); !slices.Equal(got, tc.waits) {
				t.Errorf("Waits(%+v) = %v, want %v", tc.f, got, tc.waits)
			}
			if got := Decide(tc.f); got != tc.want {
				t.Errorf("Decide(%+v) = %+v, want %+v", tc.f, got, tc.want)
			}
		})
	}
}

// TestWaitsAgreesWithDecide: over every combination of the facts, Waits
// lists payment before fulfillment, each at most once; Decide's WaitingFor
// is its first entry (none when it is empty); and an order is due exactly
// when it is in status created, waits for nothing and is not held.
func TestWaitsAgreesWithDecide(t *testing.T) {
	t.Parallel()
	for _, status := range []string{"created", "invoiced", "cancelled"} {
		for bits := range 1 << 10 {
			b := func(i int) bool { return bits&(1<<i) != 0 }
			f := Facts{Status: status, RequiresShipping: b(0), Fulfilled: b(1), Paid: b(2), CoveredByCredit: b(3), InvoiceFirst: b(4),
				XRechnung: b(5), ContactPhone: b(6), Accrual: b(7), ServicePeriod: b(8), RevenueRecognised: b(9)}
			w, d := Waits(f), Decide(f)
			if !slices.Equal(w, []Waiting{WaitingPayment, WaitingFulfillment}) && len(w) > 1 || slices.Contains(w, WaitingNone) {
				t.Fatalf("Waits(%+v) = %v: not in process order", f, w)
			}
			first := WaitingNone
			if len(w) > 0 {
				first = w[0]
			}
			if d.WaitingFor != first {
				t.Errorf("Decide(%+v).WaitingFor = %s, Waits = %v", f, d.WaitingFor, w)
			}
			if wantDue := status == "created" && len(w) == 0 && HoldOf(f) == ""; d.Due != wantDue {
				t.Errorf("Decide(%+v).Due = %v, want %v (waits %v, hold %q)", f, d.Due, wantDue, w, HoldOf(f))
			}
		}
	}
}
