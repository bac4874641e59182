package accounting_test

import (
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

// The fixed set of documents the expected files under testdata were
// computed from by hand (see the comments there): a live, OSS-registered
// seller in Germany, the first quarter of 2026 and December 2025.
//
//	Y1  RE-2025-000010  2025-12-15  DE consumer, service 2025-12-16..2026-02-15, 62,00 net at 19 %
//	A1  RE-2026-000001  2026-03-02  DE consumer, goods 10,00 at 7 % and 20,00 at 19 % net, 4,90 shipping gross
//	A2  RE-2026-000002  2026-03-05  DE consumer, e-book 10,00 net at 19 %, 5,00 store credit redeemed
//	    RE-2026-000003              and a 50,00 gift card (voucher sale, a separate document)
//	A3  RE-2026-000004  2026-03-10  FR business FR12345678901, goods 100,00 (intra-community supply)
//	A4  RE-2026-000005  2026-03-12  AT business ATU12345678, service in March 250,50 (reverse charge)
//	A5  RE-2026-000006  2026-03-03  FR consumer, goods 50,00 net (OSS, French 20 %)
//	A7  RE-2026-000007  2026-03-04  AT consumer, service 20,00 net (OSS, Austrian 20 %)
//	A6  RE-2026-000008  2026-03-15  US consumer, goods 80,00 (export)
//	    RE-2026-000009  2026-03-20  cancellation of RE-2026-000001
//	    RE-2026-000010  2026-03-25  credit note on RE-2026-000006, 12,00 refunded
//	T1  TEST-2026-000001 2026-03-06 a test document: never in any export
//
// Payments: A1 39,40 on 03-01, A2 56,90 on 03-05, A5 60,00 on 03-03, A3
// 100,00 on 03-28, the A5 refund 12,00 on 03-25, Y1 73,78 on 2025-12-15, and
// a test payment of 9,99 on 03-06 (never exported).

func d(y int, m time.Month, dd int) time.Time { return time.Date(y, m, dd, 0, 0, 0, 0, time.UTC) }
func c(v int64) *int64                        { return &v }
func r(s string) *money.Decimal               { x := money.MustParse(s); return &x }

func compute(t *testing.T, s billing.Seller, o billing.Order, ctx billing.Context) []billing.Invoice {
	t.Helper()
	invs, err := billing.Compute(o, s, ctx)
	if err != nil {
		t.Fatalf("compute %s: %v", o.OrderNo, err)
	}
	return invs
}

func item(name string, netCents int64, rate string) billing.Item {
	it := billing.Item{Name: name, Quantity: money.Int(1), UnitNetCents: c(netCents)}
	if rate != "" {
		it.TaxRate = r(rate)
	}
	return it
}

// fixture returns the documents and payments of the fixed set.
func fixture(t *testing.T) ([]accounting.Document, []accounting.Payment) {
	t.Helper()
	seller := billing.ExampleSeller()
	de := billing.Address{CountryCode: "DE", Name: "Anna Schmidt", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}
	var docs []billing.Invoice
	add := func(invs ...billing.Invoice) { docs = append(docs, invs...) }

	add(compute(t, seller, billing.Order{OrderNo: "Y1", BillingAddress: de, Email: "anna@example.de",
		Items:         []billing.Item{item("Jahres-Abo", 6200, "19")},
		ServicePeriod: &billing.Period{Start: d(2025, 12, 16), End: d(2026, 2, 15)}},
		billing.Context{IssueDate: d(2025, 12, 15), PaymentDate: d(2025, 12, 15), Numbers: []string{"RE-2025-000010"}})...)

	a1 := compute(t, seller, billing.Order{OrderNo: "A1", BillingAddress: de, Email: "anna@example.de", RequiresShipping: true,
		Items: []billing.Item{item("Buch", 1000, "7"), item("Lampe", 2000, "19")}, ShippingGrossCents: c(490)},
		billing.Context{IssueDate: d(2026, 3, 2), SupplyDate: d(2026, 2, 27), PaymentDate: d(2026, 3, 1), Numbers: []string{"RE-2026-000001"}})
	add(a1...)

	gift := billing.Item{Name: "Geschenkgutschein", Quantity: money.Int(1), UnitGrossCents: c(5000), GiftCard: true}
	add(compute(t, seller, billing.Order{OrderNo: "A2", BillingAddress: de, Email: "bernd@example.de", FinancialStatus: "paid",
		Items:             []billing.Item{item("E-Book", 1000, "19"), gift},
		CreditRedemptions: []billing.CreditRedemption{{Type: "referral_credit", AmountCents: 500, ExternalRef: "CR-1"}},
		GrossTotalCents:   c(6190)},
		billing.Context{IssueDate: d(2026, 3, 5), PaymentDate: d(2026, 3, 5), Numbers: []string{"RE-2026-000002", "RE-2026-000003"}})...)

	fr := billing.Address{CountryCode: "FR", CompanyName: "Client SARL", Name: "Jean Dupont", VATID: "FR12345678901",
		Street: "1 rue de la Paix", PostalCode: "75002", City: "Paris"}
	add(compute(t, seller, billing.Order{OrderNo: "A3", BillingAddress: fr, RequiresShipping: true,
		Items: []billing.Item{item("Maschine", 10000, "")}},
		billing.Context{IssueDate: d(2026, 3, 10), SupplyDate: d(2026, 3, 9), PaymentDate: d(2026, 3, 10), Numbers: []string{"RE-2026-000004"}})...)

	at := billing.Address{CountryCode: "AT", CompanyName: "Kunde GmbH", Name: "Eva Huber", VATID: "ATU12345678",
		Street: "Ring 1", PostalCode: "1010", City: "Wien"}
	add(compute(t, seller, billing.Order{OrderNo: "A4", BillingAddress: at,
		Items:         []billing.Item{item("Beratung", 25050, "")},
		ServicePeriod: &billing.Period{Start: d(2026, 3, 1), End: d(2026, 3, 31)}},
		billing.Context{IssueDate: d(2026, 3, 12), PaymentDate: d(2026, 3, 12), Numbers: []string{"RE-2026-000005"}})...)

	frB2C := billing.Address{CountryCode: "FR", Name: "Marie Curie", Street: "2 rue Cuvier", PostalCode: "75005", City: "Paris"}
	a5 := compute(t, seller, billing.Order{OrderNo: "A5", BillingAddress: frB2C, Email: "marie@example.fr", RequiresShipping: true,
		Items: []billing.Item{item("Lampe", 5000, "19")}},
		billing.Context{IssueDate: d(2026, 3, 3), SupplyDate: d(2026, 3, 2), PaymentDate: d(2026, 3, 3), Numbers: []string{"RE-2026-000006"}})
	add(a5...)

	atB2C := billing.Address{CountryCode: "AT", Name: "Max Bauer", Street: "Gasse 2", PostalCode: "8010", City: "Graz"}
	add(compute(t, seller, billing.Order{OrderNo: "A7", BillingAddress: atB2C, Email: "max@example.at",
		Items: []billing.Item{item("Online-Kurs", 2000, "")}},
		billing.Context{IssueDate: d(2026, 3, 4), PaymentDate: d(2026, 3, 4), Numbers: []string{"RE-2026-000007"}})...)

	us := billing.Address{CountryCode: "US", Name: "John Doe", Street: "1 Main St", PostalCode: "10001", City: "New York"}
	add(compute(t, seller, billing.Order{OrderNo: "A6", BillingAddress: us, RequiresShipping: true,
		Items: []billing.Item{item("Uhr", 8000, "")}},
		billing.Context{IssueDate: d(2026, 3, 15), SupplyDate: d(2026, 3, 14), PaymentDate: d(2026, 3, 15), Numbers: []string{"RE-2026-000008"}})...)

	cancel, err := billing.Cancel(a1[0], "RE-2026-000009", d(2026, 3, 20), billing.TypeCreditNote)
	if err != nil {
		t.Fatal(err)
	}
	add(cancel)
	note, err := billing.Refund(a5[0], "RE-2026-000010", d(2026, 3, 25), 1200, refundedByCard)
	if err != nil {
		t.Fatal(err)
	}
	add(note)

	test := seller
	test.TestMode = true
	add(compute(t, test, billing.Order{OrderNo: "T1", BillingAddress: de, Email: "anna@example.de",
		Items: []billing.Item{item("Test", 99900, "19")}},
		billing.Context{IssueDate: d(2026, 3, 6), PaymentDate: d(2026, 3, 6), Numbers: []string{"TEST-2026-000001"}})...)

	out := make([]accounting.Document, len(docs))
	for i, inv := range docs {
		out[i] = accounting.Document{Invoice: inv}
	}
	payments := []accounting.Payment{
		{OrderNo: "Y1", Reference: "RE-2025-000010", Date: d(2025, 12, 15), Cents: 7378},
		{OrderNo: "A1", Reference: "RE-2026-000001", Date: d(2026, 3, 1), Cents: 3940},
		{OrderNo: "A5", Reference: "RE-2026-000006", Date: d(2026, 3, 3), Cents: 6000},
		{OrderNo: "A2", Reference: "RE-2026-000002", Date: d(2026, 3, 5), Cents: 5690},
		{OrderNo: "T1", Reference: "TEST-2026-000001", Date: d(2026, 3, 6), Cents: 999, Test: true},
		{OrderNo: "A5", Reference: "RE-2026-000006", Date: d(2026, 3, 25), Cents: -1200},
		{OrderNo: "A3", Reference: "RE-2026-000004", Date: d(2026, 3, 28), Cents: 10000},
	}
	return out, payments
}

// invoices are the billing values of docs.
func invoices(docs []accounting.Document) []billing.Invoice {
	out := make([]billing.Invoice, len(docs))
	for i, d := range docs {
		out[i] = d.Invoice
	}
	return out
}

// refundedByCard: the provider paid a refund back to the card it came from.
var refundedByCard = billing.RefundSettlement{Refunded: true, Refund: billing.ReceivedPayment{
	Provider: "Stripe", Reference: "pi_test", Date: time.Date(2026, 3, 25, 0, 0, 0, 0, time.UTC),
	Method: billing.PaymentMethod{Kind: billing.MethodCard, CardBrand: "visa", CardFunding: "credit", CardLast4: "4242"},
}}
