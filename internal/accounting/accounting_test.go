package accounting_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/charmap"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// expected reads a hand-computed .expected file: comment lines dropped.
func expected(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// project decodes a DATEV file and returns its header record and, per
// booking, the columns the .expected files list; it checks the line ends,
// the column line and that every booking has all 125 fields.
func project(t *testing.T, raw []byte) []string {
	t.Helper()
	text, err := charmap.Windows1252.NewDecoder().Bytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	if !strings.HasSuffix(s, "\r\n") || strings.Contains(strings.ReplaceAll(s, "\r\n", ""), "\n") {
		t.Fatal("lines must end with CRLF")
	}
	lines := strings.Split(strings.TrimSuffix(s, "\r\n"), "\r\n")
	if got := strings.Split(lines[1], ";"); len(got) != 125 || got[0] != "Umsatz (ohne Soll/Haben-Kz)" || got[124] != "Abw. Skontokonto" {
		t.Fatalf("column line: %d columns, %q ... %q", len(got), got[0], got[len(got)-1])
	}
	if n := len(strings.Split(lines[0], ";")); n != 31 {
		t.Fatalf("header record has %d fields, want 31", n)
	}
	idx := func(name string) int {
		for i, c := range accounting.Columns {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	cols := []int{idx("Umsatz (ohne Soll/Haben-Kz)"), idx("Soll/Haben-Kennzeichen"), idx("Konto"), idx("Gegenkonto (ohne BU-Schlüssel)"),
		idx("BU-Schlüssel"), idx("Belegdatum"), idx("Belegfeld 1"), idx("Buchungstext"), idx("EU-Land u. UStID"), idx("EU-Steuersatz"), idx("Leistungsdatum")}
	out := []string{lines[0]}
	for _, l := range lines[2:] {
		f := strings.Split(l, ";")
		if len(f) != 125 {
			t.Fatalf("booking has %d fields, want 125: %s", len(f), l)
		}
		if f[idx("WKZ Umsatz")] != `"EUR"` || f[idx("Festschreibung")] != "0" {
			t.Fatalf("booking without currency or Festschreibung: %s", l)
		}
		p := make([]string, len(cols))
		for i, c := range cols {
			p[i] = f[c]
		}
		out = append(out, strings.Join(p, ";"))
	}
	return out
}

func TestDATEVExportMatchesHandComputedFiles(t *testing.T) {
	t.Parallel()
	docs, payments := fixture(t)
	skr04 := accounting.Standard(accounting.SKR04)
	skr04, err := skr04.With(map[string]string{"deferred": "3901"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		settings accounting.Settings
		perDebt  map[string]string // DebtorKey -> account
		header   accounting.Header
		file     string
	}{
		{
			name:     "first quarter 2026, SKR03, collective debtor",
			settings: accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03), Debtors: accounting.DebtorsCollective},
			header: accounting.Header{Consultant: 1001, Client: 12345, FiscalYearStart: d(2026, 1, 1), From: d(2026, 1, 1), To: d(2026, 3, 31),
				Created: time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC), Chart: accounting.SKR03, Label: "o2i 2026-01-01 bis 2026-03-31"},
			file: "datev_2026q1_skr03.expected",
		},
		{
			name:     "December 2025, SKR04 with an override, a debtor per customer",
			settings: accounting.Settings{Chart: accounting.SKR04, Accounts: skr04, Debtors: accounting.DebtorsPerCustomer},
			perDebt:  map[string]string{"email:anna@example.de": "10001"},
			header: accounting.Header{Consultant: 29098, Client: 55003, FiscalYearStart: d(2025, 1, 1), From: d(2025, 12, 1), To: d(2025, 12, 31),
				Created: time.Date(2026, 1, 5, 9, 30, 0, 250e6, time.UTC), Chart: accounting.SKR04, Label: "o2i 2025-12-01 bis 2025-12-31"},
			file: "datev_2025dec_skr04_per_customer.expected",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := append([]accounting.Document(nil), docs...)
			ps := append([]accounting.Payment(nil), payments...)
			if tc.perDebt != nil {
				for i := range ds {
					ds[i].Debtor = tc.perDebt[accounting.DebtorKey(ds[i].Invoice)]
				}
				for i := range ps {
					if ps[i].OrderNo == "Y1" {
						ps[i].Debtor = tc.perDebt["email:anna@example.de"]
					}
				}
			}
			bs, err := accounting.Bookings(tc.settings, ds, ps, tc.header.From, tc.header.To)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := accounting.WriteDATEV(&buf, tc.header, bs); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(buf.Bytes(), []byte("TEST-")) || bytes.Contains(buf.Bytes(), []byte("9,99")) {
				t.Error("a test document or payment is in the export")
			}
			if !bytes.Contains(buf.Bytes(), []byte{0xF6}) && strings.Contains(strings.Join(expected(t, tc.file), ""), "ö") {
				t.Error("ö is not encoded as Windows-1252 0xF6")
			}
			if diff := cmp.Diff(expected(t, tc.file), project(t, buf.Bytes())); diff != "" {
				t.Errorf("export differs from %s (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

func TestOSSAndECSLMatchHandComputedFiles(t *testing.T) {
	t.Parallel()
	docs, _ := fixture(t)
	invs := invoices(docs)
	q, err := accounting.ParseQuarter("2026-Q1")
	if err != nil {
		t.Fatal(err)
	}
	var oss bytes.Buffer
	if err := accounting.WriteOSS(&oss, accounting.OSS(invs, q)); err != nil {
		t.Fatal(err)
	}
	m, err := accounting.ParsePeriod("2026-03")
	if err != nil {
		t.Fatal(err)
	}
	var ecsl bytes.Buffer
	if err := accounting.WriteECSL(&ecsl, accounting.ECSL(invs, m)); err != nil {
		t.Fatal(err)
	}
	for file, got := range map[string][]byte{"oss_2026-Q1.csv": oss.Bytes(), "ecsl_2026-03.csv": ecsl.Bytes()} {
		want, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
	// Another quarter and month have none of these sales.
	q2, _ := accounting.ParseQuarter("2026-Q2")
	if rows := accounting.OSS(invs, q2); len(rows) != 0 {
		t.Errorf("OSS 2026-Q2: %v, want none", rows)
	}
	feb, _ := accounting.ParsePeriod("2026-02")
	if rows := accounting.ECSL(invs, feb); len(rows) != 0 {
		t.Errorf("ECSL 2026-02: %v, want none", rows)
	}
}

func TestMonthShares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cents      money.Cents
		start, end time.Time
		want       []money.Cents
	}{
		{"one day", 1000, d(2026, 3, 5), d(2026, 3, 5), []money.Cents{1000}},
		{"within one month", 999, d(2026, 3, 1), d(2026, 3, 31), []money.Cents{999}},
		{"over a year end by days", 6200, d(2025, 12, 16), d(2026, 2, 15), []money.Cents{1600, 3100, 1500}},
		{"remainder to the last month", 100, d(2026, 1, 1), d(2026, 3, 31), []money.Cents{34, 31, 35}}, // 31/90, 28/90, 31/90 of 1,00
		{"half a cent rounds up", 1, d(2026, 1, 31), d(2026, 2, 1), []money.Cents{1, 0}},
		{"leap February", 2900, d(2028, 2, 1), d(2028, 2, 29), []money.Cents{2900}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := accounting.MonthShares(tc.cents, tc.start, tc.end)
			if err != nil {
				t.Fatal(err)
			}
			var cents []money.Cents
			var sum money.Cents
			for _, s := range got {
				cents = append(cents, s.Cents)
				sum += s.Cents
			}
			if diff := cmp.Diff(tc.want, cents); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
			if sum != tc.cents {
				t.Errorf("shares sum to %d, want %d", sum, tc.cents)
			}
		})
	}
	if _, err := accounting.MonthShares(100, d(2026, 3, 2), d(2026, 3, 1)); err == nil {
		t.Error("a period ending before it starts must fail")
	}
}

func TestAccountOverrides(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		wantErr   string
		check     func(accounting.Accounts) bool
	}{
		{"none", nil, "", func(a accounting.Accounts) bool { return a.Revenue19 == "8400" && a.Debtor == "10000" }},
		{"revenue and debtor", map[string]string{"revenue19": "8401", "debtor": "12000"}, "",
			func(a accounting.Accounts) bool {
				return a.Revenue19 == "8401" && a.Debtor == "12000" && a.Revenue7 == "8300"
			}},
		{"leading zero kept", map[string]string{"deferred": "0991"}, "", func(a accounting.Accounts) bool { return a.Deferred == "0991" }},
		{"unknown name", map[string]string{"revenue20": "8400"}, `account "revenue20": unknown`, nil},
		{"letters", map[string]string{"payments": "13a0"}, "digits only", nil},
		{"five-digit ledger account", map[string]string{"payments": "13600"}, "four digits", nil},
		{"debtor out of range", map[string]string{"debtor": "70000"}, "10000 to 69998", nil},
		{"negative", map[string]string{"oss": "-832"}, "digits only", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := accounting.Standard(accounting.SKR03).With(tc.overrides)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(a) {
				t.Fatalf("accounts %+v, err %v", a, err)
			}
		})
	}
}

func TestStandardAccountsDifferByChart(t *testing.T) {
	t.Parallel()
	a3, a4 := accounting.Standard(accounting.SKR03), accounting.Standard(accounting.SKR04)
	for _, tc := range []struct{ name, skr03, skr04, got03, got04 string }{
		{"revenue 19", "8400", "4400", a3.Revenue19, a4.Revenue19},
		{"revenue 7", "8300", "4300", a3.Revenue7, a4.Revenue7},
		{"intra-EU goods", "8125", "4125", a3.IntraEUGoods, a4.IntraEUGoods},
		{"reverse charge", "8336", "4336", a3.ReverseCharge, a4.ReverseCharge},
		{"export", "8120", "4120", a3.Export, a4.Export},
		{"payments", "1360", "1460", a3.Payments, a4.Payments},
		{"deferred", "0990", "3900", a3.Deferred, a4.Deferred},
	} {
		if tc.got03 != tc.skr03 || tc.got04 != tc.skr04 {
			t.Errorf("%s: SKR03 %s SKR04 %s, want %s and %s", tc.name, tc.got03, tc.got04, tc.skr03, tc.skr04)
		}
	}
}

func TestParsers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		quarter  bool
		from, to time.Time
		ok       bool
	}{
		{"2026-Q1", true, d(2026, 1, 1), d(2026, 3, 31), true},
		{"2026-Q4", true, d(2026, 10, 1), d(2026, 12, 31), true},
		{"2026-Q5", true, time.Time{}, time.Time{}, false},
		{"2026-03", true, time.Time{}, time.Time{}, false},
		{"26-Q1", true, time.Time{}, time.Time{}, false},
		{"2026-02", false, d(2026, 2, 1), d(2026, 2, 28), true},
		{"2026-Q2", false, d(2026, 4, 1), d(2026, 6, 30), true},
		{"2026-13", false, time.Time{}, time.Time{}, false},
		{"march", false, time.Time{}, time.Time{}, false},
	} {
		var p accounting.Period
		var err error
		if tc.quarter {
			p, err = accounting.ParseQuarter(tc.in)
		} else {
			p, err = accounting.ParsePeriod(tc.in)
		}
		if (err == nil) != tc.ok || (tc.ok && (!p.From.Equal(tc.from) || !p.To.Equal(tc.to))) {
			t.Errorf("%q (quarter %v): %+v, %v", tc.in, tc.quarter, p, err)
		}
	}
	for _, tc := range []struct {
		from, to time.Time
		ok       bool
	}{
		{d(2026, 1, 1), d(2026, 12, 31), true},
		{d(2026, 3, 1), d(2026, 3, 1), true},
		{d(2026, 3, 2), d(2026, 3, 1), false},
		{d(2025, 12, 1), d(2026, 1, 31), false},
	} {
		if field, err := accounting.CheckRange(tc.from, tc.to); (err == nil) != tc.ok || (!tc.ok && field != "to") {
			t.Errorf("CheckRange(%s, %s): %q %v", tc.from.Format(time.DateOnly), tc.to.Format(time.DateOnly), field, err)
		}
	}
	for _, tc := range []struct {
		in, chart, debtors string
		ok                 bool
	}{{"skr04", "SKR04", "", true}, {"", "SKR03", "", true}, {"SKR05", "", "", false}} {
		c, err := accounting.ParseChart(tc.in)
		if (err == nil) != tc.ok || string(c) != tc.chart {
			t.Errorf("ParseChart(%q) = %q, %v", tc.in, c, err)
		}
	}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{{"", "collective", true}, {"per-customer", "per_customer", true}, {"each", "", false}} {
		got, err := accounting.ParseDebtors(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDebtors(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestDebtorKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		buyer billing.Party
		want  string
	}{
		{"VAT ID first", billing.Party{VATID: "fr 123", ElectronicAddress: "a@b.c", ElectronicAddressScheme: "EM"}, "vat:FR123"},
		{"VAT ID with dots and hyphens is the same customer", billing.Party{VATID: "de 123.456-789"}, "vat:DE123456789"},
		{"then e-mail", billing.Party{Name: "A", ElectronicAddress: " Anna@Example.de", ElectronicAddressScheme: "EM"}, "email:anna@example.de"},
		{"a Leitweg-ID is no customer key", billing.Party{Name: "Amt", PostalCode: "1", CountryCode: "de", ElectronicAddress: "991-1-1", ElectronicAddressScheme: "0204"}, "name:amt|1|DE"},
	} {
		if got := accounting.DebtorKey(billing.Invoice{Buyer: tc.buyer}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestBookingsRefuseWhatNoAccountFits(t *testing.T) {
	t.Parallel()
	inv := billing.Invoice{Number: "RE-1", Kind: billing.KindInvoice, Treatment: billing.TreatDomestic, IssueDate: d(2026, 3, 1),
		VAT: []billing.VATBreakdown{{Category: billing.CategoryStandard, Rate: money.Int(16), BaseCents: 100, TaxCents: 16}}}
	s := accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03)}
	if _, err := accounting.Bookings(s, []accounting.Document{{Invoice: inv}}, nil, d(2026, 3, 1), d(2026, 3, 31)); err == nil ||
		!strings.Contains(err.Error(), "no account") {
		t.Fatalf("err %v, want no account for 16 %%", err)
	}
}

// TestCancelledDocumentsNetToZero: a document and its cancellation, taken
// over the whole time their bookings span, leave every account at zero
// (the deferral of the year-end service included), and they leave no line
// on the OSS return or the EC sales list of a period holding both.
func TestCancelledDocumentsNetToZero(t *testing.T) {
	t.Parallel()
	docs, _ := fixture(t)
	set := accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03), Debtors: accounting.DebtorsCollective}
	cancelDates := map[string]time.Time{"RE-2025-000010": d(2026, 1, 20), "RE-2026-000004": d(2026, 3, 30), "RE-2026-000007": d(2026, 3, 30)}
	// Y1: revenue, deferral and two releases; its cancellation in January:
	// revenue, the deferral of February and its release. The others: one each.
	bookings := map[string]int{"RE-2025-000010": 7, "RE-2026-000004": 2, "RE-2026-000007": 2}
	for _, doc := range docs {
		when, ok := cancelDates[doc.Invoice.Number]
		if !ok {
			continue
		}
		t.Run(doc.Invoice.Number, func(t *testing.T) {
			cancel, err := billing.Cancel(doc.Invoice, "ST-"+doc.Invoice.Number, when, billing.TypeCreditNote)
			if err != nil {
				t.Fatal(err)
			}
			pair := []accounting.Document{doc, {Invoice: cancel}}
			bs, err := accounting.Bookings(set, pair, nil, d(2020, 1, 1), d(2030, 12, 31))
			if err != nil {
				t.Fatal(err)
			}
			assertBalanced(t, bs)
			if len(bs) != bookings[doc.Invoice.Number] {
				t.Errorf("%d bookings, want %d: %+v", len(bs), bookings[doc.Invoice.Number], bs)
			}
			whole := accounting.Period{From: d(2020, 1, 1), To: d(2030, 12, 31)}
			invs := []billing.Invoice{doc.Invoice, cancel}
			if rows := accounting.OSS(invs, whole); len(rows) != 0 {
				t.Errorf("OSS rows %v, want none", rows)
			}
			if rows := accounting.ECSL(invs, whole); len(rows) != 0 {
				t.Errorf("ECSL rows %v, want none", rows)
			}
		})
	}
}

// TestRefundedThenCancelledDocumentsNetToZero: a document, the credit note of
// a partial refund and the credit note that cancels what it left (an order
// cancelled after a partial refund) are booked like any credit notes, and
// together leave every account at zero and no line on the OSS return or
// the EC sales list of a period holding all three.
func TestRefundedThenCancelledDocumentsNetToZero(t *testing.T) {
	t.Parallel()
	docs, _ := fixture(t)
	set := accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03), Debtors: accounting.DebtorsCollective}
	cancelDates := map[string]time.Time{"RE-2025-000010": d(2026, 1, 20), "RE-2026-000004": d(2026, 3, 30), "RE-2026-000007": d(2026, 3, 30)}
	for _, doc := range docs {
		when, ok := cancelDates[doc.Invoice.Number]
		if !ok {
			continue
		}
		t.Run(doc.Invoice.Number, func(t *testing.T) {
			paid := doc.Invoice.Totals.GrandCents + doc.Invoice.Totals.RoundingCents
			note, err := billing.Refund(doc.Invoice, "RK-"+doc.Invoice.Number, when.AddDate(0, 0, -5), paid/3, refundedByCard)
			if err != nil {
				t.Fatal(err)
			}
			rest, ok, err := billing.CancelRemainder(doc.Invoice, []billing.Invoice{note}, "ST-"+doc.Invoice.Number, when)
			if err != nil || !ok {
				t.Fatalf("remainder: %v %v", ok, err)
			}
			all := []accounting.Document{doc, {Invoice: note}, {Invoice: rest}}
			bs, err := accounting.Bookings(set, all, nil, d(2020, 1, 1), d(2030, 12, 31))
			if err != nil {
				t.Fatal(err)
			}
			assertBalanced(t, bs)
			whole := accounting.Period{From: d(2020, 1, 1), To: d(2030, 12, 31)}
			invs := []billing.Invoice{doc.Invoice, note, rest}
			if rows := accounting.OSS(invs, whole); len(rows) != 0 {
				t.Errorf("OSS rows %v, want none", rows)
			}
			if rows := accounting.ECSL(invs, whole); len(rows) != 0 {
				t.Errorf("ECSL rows %v, want none", rows)
			}
		})
	}
}

// assertBalanced fails unless every account of the bookings ends at zero.
func assertBalanced(t *testing.T, bs []accounting.Booking) {
	t.Helper()
	balance := map[string]money.Cents{}
	for _, b := range bs {
		balance[b.Debit] += b.Cents
		balance[b.Credit] -= b.Cents
	}
	for acct, v := range balance {
		if v != 0 {
			t.Errorf("account %s ends at %s, want 0 (bookings %+v)", acct, v, bs)
		}
	}
}
