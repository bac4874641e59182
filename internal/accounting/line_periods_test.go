package accounting_test

import (
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// TestLinePeriodsAreDeferred: an invoice whose lines carry their products'
// default periods (BG-26) defers each line's net over its own period under
// accrual accounting, and nothing under cash-basis accounting. The scenario
// is issued 02.03.2026, paid 26.02.2026: a one-month licence (26.02.-25.03.,
// nothing after the issue month), a twelve-month maintenance contract of
// 120.00 net (26.02.2026-25.02.2027: of its 365 days, 3 fall in February
// and 31 in March, so 120.00 - 0.99 - 10.19 = 108.82 is deferred) and a
// set-up fee without period.
func TestLinePeriodsAreDeferred(t *testing.T) {
	var sc billing.Scenario
	for _, s := range billing.Scenarios() {
		if s.Name == "product-default-periods" {
			sc = s
		}
	}
	docs, err := billing.Compute(sc.Order, sc.Seller, sc.Context)
	if err != nil {
		t.Fatal(err)
	}
	inv := docs[0]
	if inv.Period != nil || inv.Lines[1].Period == nil {
		t.Fatalf("want line periods only: %+v", inv.Period)
	}
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		method   string
		deferred string // the RAP booking at issue, "" none
		releases int
	}{
		{accounting.Accrual, "108.82", 11},
		{accounting.Cash, "", 0},
	} {
		s := accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03),
			Methods: []accounting.MethodChange{{From: 2026, Method: tc.method}}}
		got, err := accounting.Bookings(s, []accounting.Document{{Invoice: inv}}, nil, from, to)
		if err != nil {
			t.Fatal(err)
		}
		var deferred, released money.Cents
		rap, n := "", 0
		for _, b := range got {
			switch {
			case b.Credit == "0990":
				rap = b.Cents.String()
				deferred += b.Cents
				if b.Text != "RAP 02/2026 bis 02/2027 1027" || b.Debit != "8400" || b.BU != "40" {
					t.Errorf("%s: deferral %+v", tc.method, b)
				}
			case b.Debit == "0990":
				n++
				released += b.Cents
			}
		}
		if rap != tc.deferred || n != tc.releases || released != deferred {
			t.Errorf("%s: deferred %q with %d releases of %s, want %q with %d", tc.method, rap, n, released, tc.deferred, tc.releases)
		}
	}
}
