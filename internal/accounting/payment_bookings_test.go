package accounting_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// TestPaymentBookings: what the invoice says about the money and what the
// books say agree. For each case the expected DATEV rows (date, amount,
// account, contra account, Belegfeld 1, text) are written out by hand
// (SKR03: debtor 10000, revenue 19 % 8400, payments 1360, store credit
// 1700): store credit is booked with the document, a provider payment once
// with the payment on its own date (also when the invoice shows it as
// paid), a cancellation's offset not at all, and a fully paid order's
// debtor nets to zero.
func TestPaymentBookings(t *testing.T) {
	t.Parallel()
	s := accounting.Settings{Chart: accounting.SKR03, Accounts: accounting.Standard(accounting.SKR03)}
	seller := billing.ExampleSeller()
	seller.InvoiceFirstGateways = []string{"invoice"}
	d := func(day int) time.Time { return time.Date(2026, 11, day, 0, 0, 0, 0, time.UTC) }
	gross := int64(11900)
	r19 := money.MustParse("19")
	card := billing.PaymentMethod{Kind: billing.MethodCard, CardBrand: "visa", CardFunding: "credit", CardLast4: "4242"}
	order := func(no, gateway string) billing.Order {
		return billing.Order{OrderNo: no, PaymentRef: "pi_" + no, PaymentGateway: gateway,
			BillingAddress: billing.Address{CountryCode: "DE", Name: "Erika Musterfrau", Street: "Lindenstraße 12", PostalCode: "50667", City: "Köln"},
			Items:          []billing.Item{{Name: "Online-Kurs", Quantity: money.Int(1), UnitGrossCents: &gross, TaxRate: &r19}}}
	}
	paidBy := func(no string, cents money.Cents, day int) []billing.ReceivedPayment {
		return []billing.ReceivedPayment{{Provider: "Stripe", Reference: "pi_" + no, Date: d(day), Cents: cents, Method: card}}
	}
	issue := func(o billing.Order, number string, day int) billing.Invoice {
		t.Helper()
		docs, err := billing.Compute(o, seller, billing.Context{IssueDate: d(day), PaymentDate: d(day), Numbers: []string{number}})
		if err != nil {
			t.Fatal(err)
		}
		return docs[0]
	}
	cancel := func(inv billing.Invoice, number string, day int) billing.Invoice {
		t.Helper()
		c, err := billing.Cancel(inv, number, d(day), billing.TypeCreditNote)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pay := func(o, ref string, cents money.Cents, day int) accounting.Payment {
		return accounting.Payment{OrderNo: o, Reference: ref, Date: d(day), Cents: cents}
	}

	type row struct{ date, amount, debit, credit, doc, text string }
	cases := []struct {
		name     string
		docs     func() []billing.Invoice
		payments []accounting.Payment
		want     []row
		debtor   string // the debtor's balance at the end
	}{
		{"card-paid", func() []billing.Invoice {
			o := order("C1", "stripe")
			o.Payments = paidBy("C1", 11900, 24)
			return []billing.Invoice{issue(o, "RE-2026-000001", 25)}
		}, []accounting.Payment{pay("C1", "RE-2026-000001", 11900, 24)}, []row{
			{"2026-11-24", "119.00", "1360", "10000", "RE-2026-000001", "Zahlung C1"},
			{"2026-11-25", "119.00", "10000", "8400", "RE-2026-000001", "Rechnung C1 19%"},
		}, "0.00"},
		{"credit + card", func() []billing.Invoice {
			o := order("C2", "stripe")
			o.CreditRedemptions = []billing.CreditRedemption{{Type: "referral_credit", AmountCents: 1900, ExternalRef: "cr_2"}}
			total := int64(11900)
			o.GrossTotalCents = &total
			o.Payments = paidBy("C2", 10000, 24)
			return []billing.Invoice{issue(o, "RE-2026-000002", 25)}
		}, []accounting.Payment{pay("C2", "RE-2026-000002", 10000, 24)}, []row{
			{"2026-11-24", "100.00", "1360", "10000", "RE-2026-000002", "Zahlung C2"},
			{"2026-11-25", "119.00", "10000", "8400", "RE-2026-000002", "Rechnung C2 19%"},
			{"2026-11-25", "19.00", "1700", "10000", "RE-2026-000002", "Guthaben eingelöst C2"},
		}, "0.00"},
		{"invoice-first, then paid", func() []billing.Invoice {
			return []billing.Invoice{issue(order("C3", "invoice"), "RE-2026-000003", 10)}
		}, []accounting.Payment{pay("C3", "RE-2026-000003", 11900, 20)}, []row{
			{"2026-11-10", "119.00", "10000", "8400", "RE-2026-000003", "Rechnung C3 19%"},
			{"2026-11-20", "119.00", "1360", "10000", "RE-2026-000003", "Zahlung C3"},
		}, "0.00"},
		{"provider transfer, then the transfer", func() []billing.Invoice {
			o := order("C4", "provider_transfer")
			o.Transfer = &billing.BankTransfer{IBAN: "DE89370400440532013000", Reference: "PTRF-4"}
			return []billing.Invoice{issue(o, "RE-2026-000004", 10)}
		}, []accounting.Payment{pay("C4", "RE-2026-000004", 11900, 12)}, []row{
			{"2026-11-10", "119.00", "10000", "8400", "RE-2026-000004", "Rechnung C4 19%"},
			{"2026-11-12", "119.00", "1360", "10000", "RE-2026-000004", "Zahlung C4"},
		}, "0.00"},
		{"refund through the original means", func() []billing.Invoice {
			o := order("C5", "stripe")
			o.Payments = paidBy("C5", 11900, 2)
			inv := issue(o, "RE-2026-000005", 3)
			note, err := billing.Refund(inv, "RE-2026-000006", d(9), 2000, billing.RefundSettlement{Refunded: true,
				Refund: billing.ReceivedPayment{Provider: "Stripe", Reference: "pi_C5", Date: d(8), Cents: 2000, Method: card}})
			if err != nil {
				t.Fatal(err)
			}
			return []billing.Invoice{inv, note}
		}, []accounting.Payment{pay("C5", "RE-2026-000005", 11900, 2), pay("C5", "RE-2026-000005", -2000, 8)}, []row{
			{"2026-11-02", "119.00", "1360", "10000", "RE-2026-000005", "Zahlung C5"},
			{"2026-11-03", "119.00", "10000", "8400", "RE-2026-000005", "Rechnung C5 19%"},
			{"2026-11-08", "20.00", "10000", "1360", "RE-2026-000005", "Erstattung C5"},
			{"2026-11-09", "20.00", "8400", "10000", "RE-2026-000006", "Rechnungskorrektur C5 19% zu RE-2026-000005"},
		}, "0.00"},
		{"cancellation of an unpaid open item", func() []billing.Invoice {
			inv := issue(order("C6", "invoice"), "RE-2026-000007", 3)
			return []billing.Invoice{inv, cancel(inv, "RE-2026-000008", 6)}
		}, nil, []row{
			{"2026-11-03", "119.00", "10000", "8400", "RE-2026-000007", "Rechnung C6 19%"},
			{"2026-11-06", "119.00", "8400", "10000", "RE-2026-000008", "Storno C6 19% zu RE-2026-000007"},
		}, "0.00"},
		{"correction: cancellation and a new invoice carrying the payment", func() []billing.Invoice {
			o := order("C7", "stripe")
			o.Payments = paidBy("C7", 11900, 2)
			inv := issue(o, "RE-2026-000009", 3)
			o.CarriedFrom = inv.Number
			o.Items[0].Name = "Online-Kurs (Aufbau)"
			return []billing.Invoice{inv, cancel(inv, "RE-2026-000010", 5), issue(o, "RE-2026-000011", 5)}
		}, []accounting.Payment{pay("C7", "RE-2026-000009", 11900, 2)}, []row{
			{"2026-11-02", "119.00", "1360", "10000", "RE-2026-000009", "Zahlung C7"},
			{"2026-11-03", "119.00", "10000", "8400", "RE-2026-000009", "Rechnung C7 19%"},
			{"2026-11-05", "119.00", "8400", "10000", "RE-2026-000010", "Storno C7 19% zu RE-2026-000009"},
			{"2026-11-05", "119.00", "10000", "8400", "RE-2026-000011", "Rechnung C7 19%"},
		}, "0.00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			invs := tc.docs()
			var docs []accounting.Document
			for _, inv := range invs {
				docs = append(docs, accounting.Document{Invoice: inv})
			}
			got, err := accounting.Bookings(s, docs, tc.payments, d(1), d(30))
			if err != nil {
				t.Fatal(err)
			}
			var rows []row
			balance := map[string]money.Cents{}
			perDoc := map[string]money.Cents{}
			for _, b := range got {
				rows = append(rows, row{b.Date.Format(time.DateOnly), b.Cents.String(), b.Debit, b.Credit, b.Document, b.Text})
				balance[b.Debit] += b.Cents
				balance[b.Credit] -= b.Cents
				if b.Debit == "10000" && b.Credit == "8400" || b.Debit == "8400" && b.Credit == "10000" {
					perDoc[b.Document] += b.Cents
				}
			}
			if fmt.Sprint(rows) != fmt.Sprint(tc.want) {
				t.Errorf("bookings\n got %v\nwant %v", rows, tc.want)
			}
			if got := balance["10000"].String(); got != tc.debtor {
				t.Errorf("debtor ends at %s, want %s", got, tc.debtor)
			}
			// Each document's revenue booking is its amount, to the cent.
			for _, inv := range invs {
				if perDoc[inv.Number] != inv.Totals.GrandCents+inv.Totals.RoundingCents {
					t.Errorf("%s booked %s, document says %s", inv.Number, perDoc[inv.Number], inv.Totals.GrandCents)
				}
			}
		})
	}
}
