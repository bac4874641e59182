package billing_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

var (
	paidOn   = time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	issuedOn = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	visa     = billing.PaymentMethod{Kind: billing.MethodCard, Type: "card", CardBrand: "visa", CardFunding: "credit", CardLast4: "4242"}
	transfer = &billing.BankTransfer{IBAN: "DE89 3704 0044 0532 0130 00", BIC: "COBADEFFXXX", AccountHolder: "Stripe", Reference: "PTRF-9"}
)

func paid(cents money.Cents, m billing.PaymentMethod) []billing.ReceivedPayment {
	return []billing.ReceivedPayment{{Provider: "Stripe", Reference: "pi_9", Date: paidOn, Cents: cents, Method: m}}
}

// TestSettleInvoice: every row of the payment block's table (gateway ×
// payment state) for invoices, with BT-113, BT-115, BT-81, the accounts and
// the terms written out by hand.
func TestSettleInvoice(t *testing.T) {
	const sellerIBAN = "DE75512108001245126199"
	base := billing.InvoiceSettlement{PayableCents: 11900, Gateway: "stripe", SellerIBAN: "DE75 5121 0800 1245 1261 99",
		SellerBIC: "SOBKDEBBXXX", Reference: "pi_9", OrderNo: "A-9", Currency: "EUR", IssueDate: issuedOn, TermDays: 10}
	cases := []struct {
		name         string
		edit         func(*billing.InvoiceSettlement)
		prepaid, due money.Cents
		paidPart     money.Cents
		code, iban   string
		card         string // BT-87
		mandate      string // BT-89
		due9         string // BT-9, DD.MM.YYYY
		terms        string
	}{
		{"credit card paid in full", func(f *billing.InvoiceSettlement) { f.Paid = paid(11900, visa) },
			11900, 0, 11900, "54", "", "4242", "", "",
			"Bezahlt am 24.11.2026 per Karte (Visa, endet auf 4242) über Stripe (pi_9). Es ist keine Zahlung mehr zu leisten."},
		{"debit card", func(f *billing.InvoiceSettlement) {
			m := visa
			m.CardFunding = "debit"
			f.Paid = paid(11900, m)
		}, 11900, 0, 11900, "55", "", "4242", "", "", ""},
		{"card of unknown funding", func(f *billing.InvoiceSettlement) {
			m := visa
			m.CardFunding = "unknown"
			f.Paid = paid(11900, m)
		}, 11900, 0, 11900, "48", "", "4242", "", "", ""},
		{"card without its last digits: online service, never 58", func(f *billing.InvoiceSettlement) {
			f.Paid = paid(11900, billing.PaymentMethod{Kind: billing.MethodCard, Type: "card"})
		}, 11900, 0, 11900, "68", "", "", "", "", "Bezahlt am 24.11.2026 per Karte über Stripe (pi_9). Es ist keine Zahlung mehr zu leisten."},
		{"SEPA debit with mandate, creditor and account", func(f *billing.InvoiceSettlement) {
			f.Paid = paid(11900, billing.PaymentMethod{Kind: billing.MethodSEPADebit, MandateRef: "M-1", CreditorID: "DE98ZZZ09999999999", DebitedIBAN: "DE02 1203 0000 0000 2020 51"})
		}, 11900, 0, 11900, "59", "", "", "M-1", "", ""},
		{"SEPA debit, creditor unknown: online service", func(f *billing.InvoiceSettlement) {
			f.Paid = paid(11900, billing.PaymentMethod{Kind: billing.MethodSEPADebit, MandateRef: "mandate_1"})
		}, 11900, 0, 11900, "68", "", "", "", "", "Bezahlt am 24.11.2026 per SEPA-Lastschrift (Mandat mandate_1) über Stripe (pi_9). Es ist keine Zahlung mehr zu leisten."},
		{"PayPal", func(f *billing.InvoiceSettlement) {
			f.Paid = paid(11900, billing.PaymentMethod{Kind: billing.MethodOnline, Type: "paypal"})
		},
			11900, 0, 11900, "68", "", "", "", "", "Bezahlt am 24.11.2026 per PayPal über Stripe (pi_9). Es ist keine Zahlung mehr zu leisten."},
		{"method not reported", func(f *billing.InvoiceSettlement) { f.Paid = paid(11900, billing.PaymentMethod{}) },
			11900, 0, 11900, "68", "", "", "", "", "Bezahlt am 24.11.2026 per Online-Zahlung über Stripe (pi_9). Es ist keine Zahlung mehr zu leisten."},
		{"provider transfer arrived before issue", func(f *billing.InvoiceSettlement) {
			f.Gateway, f.OpenItem, f.Transfer = "provider_transfer", true, transfer
			f.Paid = paid(11900, billing.PaymentMethod{Kind: billing.MethodProviderTransfer})
		}, 11900, 0, 11900, "58", "DE89370400440532013000", "", "", "", ""},
		{"store credit and card", func(f *billing.InvoiceSettlement) {
			f.CreditCents, f.CreditRefs = 1900, []string{"cr_1"}
			f.Paid = paid(10000, visa)
		}, 11900, 0, 10000, "54", "", "4242", "", "",
			"Bezahlt am 24.11.2026 per Karte (Visa, endet auf 4242) über Stripe (pi_9). Mit Guthaben bezahlt: 19.00 EUR (Ref. cr_1). Es ist keine Zahlung mehr zu leisten."},
		{"store credit alone", func(f *billing.InvoiceSettlement) { f.CreditCents = 11900 },
			11900, 0, 0, "97", "", "", "", "", "Mit Guthaben bezahlt: 11900 cents. Es ist keine Zahlung mehr zu leisten."},
		{"card below the total: the rest to the seller's IBAN by the order", func(f *billing.InvoiceSettlement) { f.Paid = paid(5000, visa) },
			5000, 6900, 5000, "58", sellerIBAN, "", "", "05.12.2026",
			"Bezahlt am 24.11.2026 per Karte (Visa, endet auf 4242) über Stripe (pi_9). Restbetrag 69.00 EUR zahlbar innerhalb von 10 Tagen ohne Abzug bis zum 05.12.2026. Bitte überweisen Sie den Betrag unter Angabe des Verwendungszwecks A-9."},
		{"store credit, the rest open", func(f *billing.InvoiceSettlement) { f.CreditCents = 1900 },
			1900, 10000, 0, "58", sellerIBAN, "", "", "05.12.2026", ""},
		{"invoice-first open item", func(f *billing.InvoiceSettlement) { f.OpenItem = true },
			0, 11900, 0, "58", sellerIBAN, "", "", "05.12.2026",
			"Zahlbar innerhalb von 10 Tagen ohne Abzug bis zum 05.12.2026. Bitte überweisen Sie den Betrag unter Angabe des Verwendungszwecks pi_9."},
		{"provider transfer still open", func(f *billing.InvoiceSettlement) { f.OpenItem, f.Transfer = true, transfer },
			0, 11900, 0, "58", "DE89370400440532013000", "", "", "05.12.2026",
			"Zahlbar innerhalb von 10 Tagen ohne Abzug bis zum 05.12.2026. Bitte überweisen Sie den Betrag unter Angabe des Verwendungszwecks PTRF-9."},
		{"nothing known", func(f *billing.InvoiceSettlement) {}, 0, 11900, 0, "58", sellerIBAN, "", "", "", "Zahlbar sofort ohne Abzug."},
		{"nothing known, no seller IBAN", func(f *billing.InvoiceSettlement) { f.SellerIBAN = "" }, 0, 11900, 0, "ZZZ", "", "", "", "", "Zahlbar sofort ohne Abzug."},
		{"correction carries the payment over", func(f *billing.InvoiceSettlement) {
			f.Paid, f.CarriedFrom = paid(11900, visa), "RE-2026-000001"
		}, 11900, 0, 11900, "54", "", "4242", "", "",
			"Bezahlt am 24.11.2026 per Karte (Visa, endet auf 4242) über Stripe (pi_9). Die Zahlung wurde von der stornierten Rechnung RE-2026-000001 übertragen. Es ist keine Zahlung mehr zu leisten."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := base
			tc.edit(&f)
			s, err := billing.SettleInvoice(f)
			if err != nil {
				t.Fatal(err)
			}
			m := s.Means
			if s.PrepaidCents != tc.prepaid || s.DueCents != tc.due || s.PaidCents != tc.paidPart {
				t.Errorf("BT-113 %s (paid %s), BT-115 %s; want %s (paid %s), %s", s.PrepaidCents, s.PaidCents, s.DueCents, tc.prepaid, tc.paidPart, tc.due)
			}
			if m.Code != tc.code || m.IBAN != tc.iban {
				t.Errorf("BT-81 %q BT-84 %q, want %q %q", m.Code, m.IBAN, tc.code, tc.iban)
			}
			if s.DueCents == 0 && m.IBAN == sellerIBAN {
				t.Errorf("nothing is due, yet the seller's IBAN is the pay-to account")
			}
			gotCard := ""
			if m.Card != nil {
				gotCard = m.Card.Last4
			}
			gotMandate := ""
			if m.DirectDebit != nil {
				gotMandate = m.DirectDebit.MandateRef
				if m.DirectDebit.CreditorID == "" || m.DirectDebit.DebitedIBAN != "DE02120300000000202051" {
					t.Errorf("BG-19 %+v", m.DirectDebit)
				}
			}
			if gotCard != tc.card || gotMandate != tc.mandate {
				t.Errorf("BT-87 %q BT-89 %q, want %q %q", gotCard, gotMandate, tc.card, tc.mandate)
			}
			gotDue := ""
			if !m.DueDate.IsZero() {
				gotDue = m.DueDate.Format("02.01.2006")
			}
			if gotDue != tc.due9 {
				t.Errorf("BT-9 %q, want %q", gotDue, tc.due9)
			}
			if s.DueCents > 0 && m.Terms == "" && m.DueDate.IsZero() {
				t.Errorf("an amount is due without terms or due date (BR-CO-25)")
			}
			want := strings.ReplaceAll(tc.terms, "11900 cents", "119.00 EUR")
			if want != "" && m.Terms != want {
				t.Errorf("BT-20\n got %q\nwant %q", m.Terms, want)
			}
		})
	}
}

// TestSettleInvoiceRefusesOverpayment: the engine never applies more than
// payable; the caller takes only what fits (an overpayment is a task).
func TestSettleInvoiceRefusesOverpayment(t *testing.T) {
	f := billing.InvoiceSettlement{PayableCents: 1000, CreditCents: 500, Paid: paid(600, visa), IssueDate: issuedOn}
	if _, err := billing.SettleInvoice(f); err == nil {
		t.Fatal("credit 5.00 + payment 6.00 on 10.00 payable was accepted")
	}
}

// TestComputeAppliesPaymentsOnce: an order paid by card, with a gift card in
// it, spreads the payment over its two documents; an overpayment is capped
// (BT-115 never negative) and a caller-sent financialStatus makes nothing paid.
func TestComputeAppliesPaymentsOnce(t *testing.T) {
	sc := scenario(t, "gift-card-split")
	o := sc.Order
	total := money.Cents(2990 + 390 + 2500) // tea pot, shipping, gift card
	for _, tc := range []struct {
		name   string
		paid   money.Cents
		status string
		due    money.Cents
	}{
		{"paid exactly", total, "", 0},
		{"overpaid: capped", total + 500, "", 0},
		{"underpaid", total - 1000, "", 1000},
		{"caller says paid, provider did not", 0, "paid", total},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := o
			o.FinancialStatus = tc.status
			o.Payments = nil
			if tc.paid > 0 {
				o.Payments = paid(tc.paid, visa)
			}
			docs, err := billing.Compute(o, sc.Seller, sc.Context)
			if err != nil {
				t.Fatal(err)
			}
			var due, prepaid money.Cents
			for _, d := range docs {
				if d.Totals.DueCents < 0 {
					t.Errorf("%s: BT-115 %s", d.Number, d.Totals.DueCents)
				}
				due += d.Totals.DueCents
				prepaid += d.Totals.PaidCents
			}
			if due != tc.due || prepaid != min(tc.paid, total) {
				t.Errorf("due %s paid %s, want %s %s", due, prepaid, tc.due, min(tc.paid, total))
			}
		})
	}
}

// TestSettleCreditNote: a refund the provider paid back already is BT-113
// with nothing due and the original means; one still to be paid is due from
// the seller, never with the seller's IBAN as pay-to.
func TestSettleCreditNote(t *testing.T) {
	back := billing.RefundSettlement{Refunded: true, Currency: "EUR",
		Refund: billing.ReceivedPayment{Provider: "Stripe", Reference: "pi_9", Date: paidOn, Cents: 3000, Method: visa}}
	s := billing.SettleCreditNote(3000, back, issuedOn)
	if s.PrepaidCents != 3000 || s.PaidCents != 3000 || s.DueCents != 0 || s.Means.Code != "54" || s.Means.Card == nil ||
		s.Means.Terms != "Erstattet am 24.11.2026 per Karte (Visa, endet auf 4242) über Stripe (pi_9). Es ist keine Zahlung mehr zu leisten." {
		t.Errorf("refunded: %+v", s)
	}
	debit := back
	debit.Refund.Method = billing.PaymentMethod{Kind: billing.MethodSEPADebit, MandateRef: "M", CreditorID: "C", DebitedIBAN: "DE02120300000000202051"}
	if s := billing.SettleCreditNote(3000, debit, issuedOn); s.Means.Code != "68" || s.Means.DirectDebit != nil || s.Means.IBAN != "" {
		t.Errorf("refunded debit: %+v", s.Means)
	}
	open := back
	open.Refunded = false
	s = billing.SettleCreditNote(3000, open, issuedOn)
	if s.PrepaidCents != 0 || s.DueCents != 3000 || s.Means.Code != "1" || s.Means.IBAN != "" || s.Means.DueDate.IsZero() {
		t.Errorf("to be refunded: %+v", s)
	}
}

// TestSettleCancellation: settled by offset, whatever the sign.
func TestSettleCancellation(t *testing.T) {
	ref := billing.Reference{Number: "RE-2026-000007", IssueDate: paidOn}
	for _, payable := range []money.Cents{11900, -11900} {
		s := billing.SettleCancellation(payable, ref)
		if s.PrepaidCents != payable || s.DueCents != 0 || s.PaidCents != 0 || s.Means.Code != "97" ||
			s.Means.Terms != "Verrechnet mit Rechnung RE-2026-000007 vom 24.11.2026. Es ist keine Zahlung zu leisten." {
			t.Errorf("%s: %+v", payable, s)
		}
	}
}

func scenario(t *testing.T, name string) billing.Scenario {
	t.Helper()
	for _, sc := range billing.Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return billing.Scenario{}
}

// TestProductDefaultPeriods: without service_period, a product's default
// period runs from the date of supply (for services the payment date) for
// its months, ending the day before the same date; the document's period
// (BG-14) when every line shares it, else one per line (BG-26).
func TestProductDefaultPeriods(t *testing.T) {
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	one, twelve := 1, 12
	cases := []struct {
		name   string
		months []int // per item, 0: no default
		sent   *billing.Period
		header string   // BG-14, "" none
		lines  []string // BG-26 per line, "" none
	}{
		{"one product, one month", []int{one}, nil, "2026-11-15..2026-12-14", []string{""}},
		{"two products, same months", []int{one, one}, nil, "2026-11-15..2026-12-14", []string{"", ""}},
		{"different months: line periods", []int{one, twelve}, nil, "", []string{"2026-11-15..2026-12-14", "2026-11-15..2027-11-14"}},
		{"a line without default", []int{twelve, 0}, nil, "", []string{"2026-11-15..2027-11-14", ""}},
		{"no defaults", []int{0}, nil, "", []string{""}},
		{"the order's period wins", []int{twelve}, &billing.Period{Start: d(2026, 11, 1), End: d(2026, 11, 30)}, "2026-11-01..2026-11-30", []string{""}},
	}
	span := func(p *billing.Period) string {
		if p == nil {
			return ""
		}
		return p.Start.Format(time.DateOnly) + ".." + p.End.Format(time.DateOnly)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := scenario(t, "card-paid").Order
			o.Payments, o.ServicePeriod = nil, tc.sent
			o.Items = nil
			for i, m := range tc.months {
				price := int64(1190 * (i + 1))
				o.Items = append(o.Items, billing.Item{Name: fmt.Sprint("Abo ", i), Quantity: money.Int(1), UnitGrossCents: &price,
					TaxRate: ptr(money.MustParse("19")), DefaultPeriodMonths: m})
			}
			docs, err := billing.Compute(o, billing.ExampleSeller(), billing.Context{IssueDate: d(2026, 11, 16), PaymentDate: d(2026, 11, 15), Numbers: []string{"RE-2026-000001"}})
			if err != nil {
				t.Fatal(err)
			}
			inv := docs[0]
			if got := span(inv.Period); got != tc.header {
				t.Errorf("BG-14 %q, want %q", got, tc.header)
			}
			for i, want := range tc.lines {
				if got := span(inv.Lines[i].Period); got != want {
					t.Errorf("line %d BG-26 %q, want %q", i+1, got, want)
				}
			}
		})
	}
	for _, tc := range []struct {
		start  time.Time
		months int
		want   string
	}{
		{d(2026, 1, 31), 1, "2026-01-31..2026-02-28"}, // February has no 31st: its last day
		{d(2028, 1, 30), 1, "2028-01-30..2028-02-29"},
		{d(2026, 1, 1), 1, "2026-01-01..2026-01-31"},
		{d(2026, 3, 31), 1, "2026-03-31..2026-04-30"},
		{d(2026, 12, 15), 3, "2026-12-15..2027-03-14"},
	} {
		if p := billing.DefaultPeriod(tc.start, tc.months); span(&p) != tc.want {
			t.Errorf("%s + %d months: %s, want %s", tc.start.Format(time.DateOnly), tc.months, span(&p), tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestSmallAmount: a consumer order up to 250 EUR gross, taxed in Germany,
// whose buyer is only a country and an e-mail, gets a small-amount invoice
// (§ 33 UStDV); anything else without name and address stays refused, with
// the fields that are missing and why.
func TestSmallAmount(t *testing.T) {
	d := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	r7 := money.MustParse("7")
	order := func(country string, gross int64) billing.Order {
		return billing.Order{OrderNo: "K-1", Email: "kunde@example.org", BillingAddress: billing.Address{CountryCode: country},
			Items: []billing.Item{{Name: "E-Book", Quantity: money.Int(1), UnitGrossCents: &gross, TaxRate: &r7}}}
	}
	cases := []struct {
		name   string
		order  func() billing.Order
		small  bool
		reason string // part of the refusal
	}{
		{"German consumer, 20.00", func() billing.Order { return order("DE", 2000) }, true, ""},
		{"exactly 250.00", func() billing.Order { return order("DE", 25000) }, true, ""},
		{"250.01", func() billing.Order { return order("DE", 25001) }, false, "limited to 250.00 EUR gross"},
		{"a name but no address", func() billing.Order { o := order("DE", 2000); o.BillingAddress.Name = "Erika"; return o }, true, ""},
		{"a company", func() billing.Order { o := order("DE", 2000); o.BillingAddress.CompanyName = "Kunde AG"; return o }, false, "business buyer"},
		{"a VAT id", func() billing.Order { o := order("DE", 2000); o.BillingAddress.VATID = "DE123456789"; return o }, false, "business buyer"},
		{"consumer in Austria, OSS", func() billing.Order { o := order("AT", 2000); o.Items[0].TaxRate = nil; return o }, false, "only for domestic supplies"},
		{"consumer in Switzerland (export)", func() billing.Order { o := order("CH", 2000); o.RequiresShipping = true; return o }, false, "only for domestic supplies"},
		{"a gift card beside", func() billing.Order {
			o := order("DE", 2000)
			g := int64(1000)
			o.Items = append(o.Items, billing.Item{Name: "Gutschein", Quantity: money.Int(1), UnitGrossCents: &g, GiftCard: true})
			return o
		}, false, "gift-card sale"},
		{"full address: a regular invoice", func() billing.Order {
			o := order("DE", 2000)
			o.BillingAddress = billing.Address{CountryCode: "DE", Name: "Erika", Street: "Weg 1", PostalCode: "10115", City: "Berlin"}
			return o
		}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.order()
			docs, err := billing.Compute(o, billing.ExampleSeller(), billing.Context{IssueDate: d, PaymentDate: d, Numbers: []string{"RE-2026-000001", "RE-2026-000002"}})
			if tc.reason != "" {
				if err == nil || !strings.Contains(err.Error(), tc.reason) || !strings.Contains(err.Error(), "billingAddress.street") {
					t.Fatalf("error %v, want the missing fields and %q", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := docs[0].Format == billing.FormatSmallAmount; got != tc.small {
				t.Errorf("format %s, small amount %v", docs[0].Format, tc.small)
			}
		})
	}
}
