package accounting_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

type history = []accounting.MethodChange

func TestMethodIn(t *testing.T) {
	t.Parallel()
	switched := history{{From: 2024, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}}
	for _, tc := range []struct {
		name    string
		history history
		year    int
		want    string
	}{
		{"no history: accrual", nil, 2026, accounting.Accrual},
		{"one entry, its year", history{{From: 2026, Method: accounting.Cash}}, 2026, accounting.Cash},
		{"one entry, a later year", history{{From: 2026, Method: accounting.Cash}}, 2030, accounting.Cash},
		{"before the first entry: the method the project began with", history{{From: 2026, Method: accounting.Cash}}, 2020, accounting.Cash},
		{"the year before a change", switched, 2026, accounting.Accrual},
		{"the year of a change", switched, 2027, accounting.Cash},
		{"after a change", switched, 2031, accounting.Cash},
		{"any order", history{{From: 2027, Method: accounting.Cash}, {From: 2024, Method: accounting.Accrual}}, 2026, accounting.Accrual},
		{"back again", history{{From: 2024, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}, {From: 2029, Method: accounting.Accrual}}, 2029, accounting.Accrual},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := accounting.MethodIn(tc.history, tc.year); got != tc.want {
				t.Errorf("MethodIn(%v, %d) = %s, want %s", tc.history, tc.year, got, tc.want)
			}
		})
	}
}

func TestWithChange(t *testing.T) {
	t.Parallel()
	accrual24 := history{{From: 2024, Method: accounting.Accrual}}
	for _, tc := range []struct {
		name    string
		history history
		from    int
		method  string
		want    history
	}{
		{"a change from a later year", accrual24, 2027, accounting.Cash,
			history{{From: 2024, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}}},
		{"the same method: nothing recorded", accrual24, 2027, accounting.Accrual, accrual24},
		{"a new project's first entry", nil, 2026, accounting.Cash, history{{From: 2026, Method: accounting.Cash}}},
		{"the first entry's year: the years before keep theirs", accrual24, 2024, accounting.Cash,
			history{{From: 2023, Method: accounting.Accrual}, {From: 2024, Method: accounting.Cash}}},
		{"before the first entry: the years before keep theirs", accrual24, 2020, accounting.Cash,
			history{{From: 2019, Method: accounting.Accrual}, {From: 2020, Method: accounting.Cash}}},
		{"before the first entry, the same method", accrual24, 2020, accounting.Accrual, history{{From: 2020, Method: accounting.Accrual}}},
		{"later planned changes give way", history{{From: 2024, Method: accounting.Accrual}, {From: 2028, Method: accounting.Cash}}, 2027, accounting.Cash,
			history{{From: 2024, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}}},
		{"a planned change taken back", history{{From: 2024, Method: accounting.Accrual}, {From: 2028, Method: accounting.Cash}}, 2027, accounting.Accrual,
			accrual24},
		{"unsorted history comes back sorted", history{{From: 2027, Method: accounting.Cash}, {From: 2024, Method: accounting.Accrual}}, 2029, accounting.Accrual,
			history{{From: 2024, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}, {From: 2029, Method: accounting.Accrual}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append(history(nil), tc.history...)
			got := accounting.WithChange(tc.history, tc.from, tc.method)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WithChange (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.history); diff != "" {
				t.Errorf("the history given was modified:\n%s", diff)
			}
			for y := 2015; y <= 2035; y++ {
				want := tc.method
				if y < tc.from && len(tc.history) > 0 { // an empty history is a project's start: nothing to keep
					want = accounting.MethodIn(tc.history, y)
				}
				if m := accounting.MethodIn(got, y); m != want {
					t.Errorf("%d: %s, want %s", y, m, want)
				}
			}
		})
	}
}

func TestChangeYear(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                      string
		from, current, lastIssued int
		want                      int
		wantErr                   string
	}{
		{"default, no documents at all: this year", 0, 2026, 0, 2026, ""},
		{"default, documents of earlier years only: this year", 0, 2026, 2025, 2026, ""},
		{"default, documents of this year: the next year", 0, 2026, 2026, 2027, ""},
		{"default, documents dated ahead: the year after them", 0, 2026, 2027, 2028, ""},
		{"the next year given", 2027, 2026, 2026, 2027, ""},
		{"this year given, no documents of it", 2026, 2026, 2025, 2026, ""},
		{"an earlier year without documents", 2025, 2026, 2024, 2025, ""},
		{"a year with documents", 2026, 2026, 2026, 0, "takes effect from 2027 at the earliest"},
		{"a year before documents", 2024, 2026, 2025, 0, "fiscal year 2024 already has documents"},
		{"not a year", 26, 2026, 0, 0, "not from 2000 to 9999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := accounting.ChangeYear(tc.from, tc.current, tc.lastIssued)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ChangeYear = %d, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ChangeYear = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestDefers(t *testing.T) {
	t.Parallel()
	seller := billing.ExampleSeller()
	de := billing.Address{CountryCode: "DE", Name: "Anna Schmidt", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}
	service := compute(t, seller, billing.Order{OrderNo: "S", BillingAddress: de, Items: []billing.Item{item("Abo", 12100, "19")},
		ServicePeriod: &billing.Period{Start: d(2026, 12, 1), End: d(2027, 3, 31)}},
		billing.Context{IssueDate: d(2026, 12, 1), PaymentDate: d(2026, 12, 1), Numbers: []string{"RE-2026-1"}})[0]
	goods := compute(t, seller, billing.Order{OrderNo: "G", BillingAddress: de, RequiresShipping: true, Items: []billing.Item{item("Buch", 1000, "7")}},
		billing.Context{IssueDate: d(2026, 12, 1), SupplyDate: d(2026, 12, 1), PaymentDate: d(2026, 12, 1), Numbers: []string{"RE-2026-2"}})[0]
	gift := billing.Item{Name: "Geschenkgutschein", Quantity: money.Int(1), UnitGrossCents: c(5000), GiftCard: true}
	voucher := compute(t, seller, billing.Order{OrderNo: "V", BillingAddress: de, Items: []billing.Item{gift},
		ServicePeriod: &billing.Period{Start: d(2026, 12, 1), End: d(2027, 3, 31)}},
		billing.Context{IssueDate: d(2026, 12, 1), PaymentDate: d(2026, 12, 1), Numbers: []string{"RE-2026-3"}})[0]
	if voucher.Kind != billing.KindVoucherSale {
		t.Fatalf("voucher document of kind %s", voucher.Kind)
	}
	toCash27 := history{{From: 2024, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}}
	for _, tc := range []struct {
		name    string
		inv     billing.Invoice
		history history
		method  string
		want    bool
	}{
		{"service period, no history", service, nil, accounting.Accrual, true},
		{"service period, accrual", service, history{{From: 2026, Method: accounting.Accrual}}, accounting.Accrual, true},
		{"service period, cash", service, history{{From: 2026, Method: accounting.Cash}}, accounting.Cash, false},
		{"service period, issued the year before a change to cash", service, toCash27, accounting.Accrual, true},
		{"goods: nothing to defer", goods, nil, accounting.Accrual, false},
		{"a voucher sale is never deferred", voucher, nil, accounting.Accrual, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := accounting.Settings{Methods: tc.history}
			if got := s.MethodOf(tc.inv); got != tc.method {
				t.Errorf("MethodOf = %s, want %s", got, tc.method)
			}
			if got := s.Defers(tc.inv); got != tc.want {
				t.Errorf("Defers = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeferralsFollowTheMethodOfEachFiscalYear: a service invoiced in
// December 2026 for December to March and one invoiced in February 2027 for
// February to May, booked by calendar year under each history. A document
// is deferred, with its releases in the next year, when accrual accounting
// is in force in its fiscal year; a cash-basis year has no deferral of its
// own documents. Over the whole time every account ends at zero with the
// cancellations of both, issued in 2027.
func TestDeferralsFollowTheMethodOfEachFiscalYear(t *testing.T) {
	t.Parallel()
	seller := billing.ExampleSeller()
	de := billing.Address{CountryCode: "DE", Name: "Anna Schmidt", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}
	// 121,00 net over 121 days: 1,00 a day (December 31,00, January 31,00, February 28,00, March 31,00).
	dec := compute(t, seller, billing.Order{OrderNo: "DEC", BillingAddress: de, Items: []billing.Item{item("Abo", 12100, "19")},
		ServicePeriod: &billing.Period{Start: d(2026, 12, 1), End: d(2027, 3, 31)}},
		billing.Context{IssueDate: d(2026, 12, 1), PaymentDate: d(2026, 12, 1), Numbers: []string{"RE-2026-000001"}})[0]
	// 120,00 net over 120 days (February 28,00, March 31,00, April 30,00, May 31,00).
	feb := compute(t, seller, billing.Order{OrderNo: "FEB", BillingAddress: de, Items: []billing.Item{item("Abo", 12000, "19")},
		ServicePeriod: &billing.Period{Start: d(2027, 2, 1), End: d(2027, 5, 31)}},
		billing.Context{IssueDate: d(2027, 2, 1), PaymentDate: d(2027, 2, 1), Numbers: []string{"RE-2027-000001"}})[0]
	docs := []accounting.Document{{Invoice: dec}, {Invoice: feb}}

	// deferrals lists a year's bookings on the deferred revenue account as
	// "document debit>credit amount".
	deferrals := func(t *testing.T, s accounting.Settings, year int) []string {
		t.Helper()
		bs, err := accounting.Bookings(s, docs, nil, d(year, 1, 1), d(year, 12, 31))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range bs {
			if b.Debit == s.Accounts.Deferred || b.Credit == s.Accounts.Deferred {
				if b.BU != "40" {
					t.Errorf("deferral booking without BU 40: %+v", b)
				}
				out = append(out, fmt.Sprintf("%s %s %s>%s %d", b.Date.Format("2006-01-02"), b.Document, b.Debit, b.Credit, b.Cents))
			}
		}
		return out
	}
	decDeferred := []string{"2026-12-01 RE-2026-000001 8400>0990 9000"}
	decReleased := []string{"2027-01-01 RE-2026-000001 0990>8400 3100", "2027-02-01 RE-2026-000001 0990>8400 2800", "2027-03-01 RE-2026-000001 0990>8400 3100"}
	febDeferred := []string{"2027-02-01 RE-2027-000001 8400>0990 9200"}
	febReleased := []string{"2027-03-01 RE-2027-000001 0990>8400 3100", "2027-04-01 RE-2027-000001 0990>8400 3000", "2027-05-01 RE-2027-000001 0990>8400 3100"}
	for _, tc := range []struct {
		name     string
		history  history
		want2026 []string
		want2027 []string
	}{
		{"accrual throughout", history{{From: 2025, Method: accounting.Accrual}}, decDeferred,
			[]string{decReleased[0], decReleased[1], febDeferred[0], decReleased[2], febReleased[0], febReleased[1], febReleased[2]}},
		{"cash throughout: no deferred revenue", history{{From: 2025, Method: accounting.Cash}}, nil, nil},
		{"accrual, cash from 2027: the 2026 document stays deferred", history{{From: 2025, Method: accounting.Accrual}, {From: 2027, Method: accounting.Cash}},
			decDeferred, decReleased},
		{"cash, accrual from 2027: only the 2027 document is deferred", history{{From: 2025, Method: accounting.Cash}, {From: 2027, Method: accounting.Accrual}},
			nil, []string{febDeferred[0], febReleased[0], febReleased[1], febReleased[2]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03), Debtors: accounting.DebtorsCollective,
				Methods: tc.history}
			if diff := cmp.Diff(tc.want2026, deferrals(t, s, 2026)); diff != "" {
				t.Errorf("2026 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want2027, deferrals(t, s, 2027)); diff != "" {
				t.Errorf("2027 (-want +got):\n%s", diff)
			}
			all := append([]accounting.Document(nil), docs...)
			for _, doc := range docs {
				cancel, err := billing.Cancel(doc.Invoice, "ST-"+doc.Invoice.Number, d(2027, 2, 15), billing.TypeCreditNote)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, accounting.Document{Invoice: cancel})
			}
			bs, err := accounting.Bookings(s, all, nil, d(2026, 1, 1), d(2027, 12, 31))
			if err != nil {
				t.Fatal(err)
			}
			assertBalanced(t, bs)
		})
	}
}
