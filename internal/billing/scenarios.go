package billing

import (
	"fmt"
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// Scenario is a named example order with its seller and context: the corpus
// that the official validator judges in tests, the samples of
// "o2i invoice samples" and the input of the benchmarks.
type Scenario struct {
	Name        string
	Description string
	Order       Order
	Seller      Seller
	Context     Context
	// Cancel, when set, cancels every computed document with this type
	// (381 or 384), numbered from CancelNumbers.
	Cancel        TypeCode
	CancelNumbers []string
	CancelDate    time.Time
}

// Documents computes the scenario's documents (and their cancellations).
func (sc Scenario) Documents() ([]Invoice, error) {
	invs, err := Compute(sc.Order, sc.Seller, sc.Context)
	if err != nil || sc.Cancel == "" {
		return invs, err
	}
	out := make([]Invoice, 0, len(invs))
	for i, inv := range invs {
		if i >= len(sc.CancelNumbers) {
			return nil, fmt.Errorf("billing: scenario %s: no cancellation number %d", sc.Name, i)
		}
		c, err := Cancel(inv, sc.CancelNumbers[i], sc.CancelDate, sc.Cancel)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ExampleSeller is the seller of the scenarios: established in Germany,
// OSS-registered, live mode.
func ExampleSeller() Seller {
	return Seller{
		Name: "Beispiel Versand GmbH", Street: "Musterstraße 12", PostalCode: "10115", City: "Berlin", Country: "DE",
		VATID: "DE123456789", TaxNumber: "30/123/45678", RegistrationID: "HRB 123456 B, Amtsgericht Charlottenburg",
		IBAN: "DE75512108001245126199", BIC: "SOBKDEBBXXX",
		ContactName: "Erika Mustermann", ContactPhone: "+49 30 1234567", ContactEmail: "rechnung@beispiel-versand.de",
		OSSRegistered: true,
	}
}

func cents(v int64) *int64                     { return &v }
func rate(s string) *money.Decimal             { d := money.MustParse(s); return &d }
func qty(s string) money.Decimal               { return money.MustParse(s) }
func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// Scenarios returns the named corpus, one per case the engine distinguishes.
// The result is freshly built on every call; callers may modify it.
func Scenarios() []Scenario {
	seller := ExampleSeller()
	ctx := func(nums ...string) Context {
		return Context{
			IssueDate: day(2026, 3, 2), SupplyDate: day(2026, 2, 27), PaymentDate: day(2026, 2, 26),
			Numbers: nums,
		}
	}
	de := Address{CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}
	deCompany := Address{CountryCode: "DE", CompanyName: "Kunde AG", Name: "Petra Einkauf", VATID: "DE987654321",
		Street: "Industrieweg 7", PostalCode: "50667", City: "Köln"}

	var out []Scenario
	add := func(sc Scenario) { out = append(out, sc) }
	byName := func(name string) Scenario {
		for _, sc := range out {
			if sc.Name == name {
				return sc
			}
		}
		panic("billing: no scenario " + name)
	}

	add(Scenario{
		Name: "single-rate", Description: "domestic goods, net prices, one rate (19 %)",
		Order: Order{OrderNo: "1001", BillingAddress: deCompany, Email: "einkauf@kunde.example", RequiresShipping: true,
			PaymentRef: "pi_1001", PaymentGateway: "stripe",
			Items: []Item{
				{Name: "Bürostuhl Ergo", SKU: "CH-100", Quantity: qty("2"), UnitNetCents: cents(14900), TaxRate: rate("19")},
				{Name: "Schreibtischlampe", SKU: "LA-7", Quantity: qty("1"), UnitNetCents: cents(3990), TaxRate: rate("19")},
			}},
		Seller: seller, Context: ctx("RE-2026-000101"),
	})
	add(Scenario{
		Name: "mixed-rates-shipping", Description: "gross prices at 7 % and 19 % with 4.90 shipping split 1.52 / 3.38",
		Order: Order{OrderNo: "1002", BillingAddress: de, Email: "max@example.org", RequiresShipping: true,
			PaymentRef: "pi_1002", PaymentGateway: "stripe", FinancialStatus: "paid", ShippingGrossCents: cents(490),
			Items: []Item{
				{Name: "Kochbuch", SKU: "BK-1", Quantity: qty("1"), UnitGrossCents: cents(1070), TaxRate: rate("7")},
				{Name: "Schürze", SKU: "AP-2", Quantity: qty("1"), UnitGrossCents: cents(2380), TaxRate: rate("19")},
			}, GrossTotalCents: cents(3940)},
		Seller: seller, Context: ctx("RE-2026-000102"),
	})
	add(Scenario{
		Name: "discounts", Description: "net prices with line discounts (BG-27) at two rates, net shipping",
		Order: Order{OrderNo: "1003", BillingAddress: deCompany, RequiresShipping: true,
			ShippingNetCents: cents(590), ShippingTaxRate: rate("19"),
			Items: []Item{
				{Name: "Kaffeebohnen 1 kg", SKU: "KF-1", Quantity: qty("3"), UnitNetCents: cents(1869), TaxRate: rate("7"), DiscountNetCents: cents(500)},
				{Name: "Espressomaschine", SKU: "EM-9", Quantity: qty("1"), UnitNetCents: cents(42017), TaxRate: rate("19"), DiscountNetCents: cents(4202)},
				{Name: "Milchkännchen", SKU: "MK-3", Quantity: qty("2"), UnitNetCents: cents(1250), TaxRate: rate("19")},
			}},
		Seller: seller, Context: ctx("RE-2026-000103"),
	})
	add(Scenario{
		Name: "credit-partial", Description: "store credit pays part: VAT on the full amount, BT-113 = credit",
		Order: Order{OrderNo: "1004", BillingAddress: de, Email: "max@example.org", RequiresShipping: true,
			PaymentRef: "pi_1004", PaymentGateway: "stripe", ShippingGrossCents: cents(490),
			Items:             []Item{{Name: "Wanderschuhe", SKU: "WS-42", Quantity: qty("1"), UnitGrossCents: cents(8990), TaxRate: rate("19")}},
			CreditRedemptions: []CreditRedemption{{Type: "referral_credit", AmountCents: 1500, ExternalRef: "cr_77"}},
			GrossTotalCents:   cents(9480)},
		Seller: seller, Context: ctx("RE-2026-000104"),
	})
	at := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 14, 3, 0, 0, time.UTC) }
	card := PaymentMethod{Kind: MethodCard, Type: "card", CardBrand: "visa", CardFunding: "credit", CardLast4: "4242"}
	add(Scenario{
		Name: "card-paid", Description: "paid by credit card before issue: BT-113 = total, BT-115 = 0, means 54 with the last 4 digits",
		Order: Order{OrderNo: "1020", BillingAddress: de, Email: "max@example.org", PaymentRef: "pi_1020", PaymentGateway: "stripe",
			Items:    []Item{{Name: "Online-Kurs Fotografie", SKU: "KURS-F", Quantity: qty("1"), UnitGrossCents: cents(11900), TaxRate: rate("19")}},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1020", Date: at(2026, 2, 26), Cents: 11900, Method: card}}},
		Seller: seller, Context: ctx("RE-2026-000120"),
	})
	add(Scenario{
		Name: "credit-and-card", Description: "store credit and a debit card pay together: BT-113 = credit + card, BT-115 = 0, means 55",
		Order: Order{OrderNo: "1021", BillingAddress: de, Email: "max@example.org", RequiresShipping: true,
			PaymentRef: "pi_1021", PaymentGateway: "stripe", ShippingGrossCents: cents(490),
			Items:             []Item{{Name: "Wanderschuhe", SKU: "WS-42", Quantity: qty("1"), UnitGrossCents: cents(8990), TaxRate: rate("19")}},
			CreditRedemptions: []CreditRedemption{{Type: "referral_credit", AmountCents: 1500, ExternalRef: "cr_78"}},
			GrossTotalCents:   cents(9480),
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1021", Date: at(2026, 2, 26), Cents: 7980,
				Method: PaymentMethod{Kind: MethodCard, Type: "card", CardBrand: "mastercard", CardFunding: "debit", CardLast4: "5100"}}}},
		Seller: seller, Context: ctx("RE-2026-000121"),
	})
	add(Scenario{
		Name: "paypal-paid", Description: "paid through PayPal at the provider: online payment service (68), named in words",
		Order: Order{OrderNo: "1022", BillingAddress: de, Email: "max@example.org", PaymentRef: "pi_1022", PaymentGateway: "stripe",
			Items:    []Item{{Name: "E-Book Gartenbau", SKU: "EB-G", Quantity: qty("1"), UnitGrossCents: cents(1499), TaxRate: rate("7")}},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1022", Date: at(2026, 2, 26), Cents: 1499, Method: PaymentMethod{Kind: MethodOnline, Type: "paypal"}}}},
		Seller: seller, Context: ctx("RE-2026-000122"),
	})
	add(Scenario{
		Name: "partly-paid", Description: "the provider received less than the total: BT-113 = received, the rest due within the term to the seller's IBAN",
		Order: Order{OrderNo: "1023", BillingAddress: deCompany, Email: "einkauf@kunde.example", PaymentRef: "pi_1023", PaymentGateway: "stripe",
			Items:    []Item{{Name: "Beratung (Stunden)", SKU: "BER-H", Quantity: qty("4"), UnitNetCents: cents(9000), TaxRate: rate("19")}},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1023", Date: at(2026, 2, 26), Cents: 20000, Method: card}}},
		Seller: seller, Context: ctx("RE-2026-000123"),
	})
	add(Scenario{
		Name: "provider-transfer-paid", Description: "bank transfer to the provider's virtual account arrived before issue: 58 with the provider's IBAN, nothing due",
		Order: Order{OrderNo: "1024", BillingAddress: deCompany, Email: "einkauf@kunde.example", PaymentRef: "pi_1024", PaymentGateway: "provider_transfer",
			RequiresShipping: true,
			Items:            []Item{{Name: "Industriefilter", SKU: "IF-5", Quantity: qty("2"), UnitNetCents: cents(2450), TaxRate: rate("19")}},
			Transfer:         &BankTransfer{IBAN: "DE89 3704 0044 0532 0130 00", BIC: "COBADEFFXXX", AccountHolder: "Stripe Payments Europe", Reference: "PTRF-1024"},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1024", Date: at(2026, 2, 25), Cents: 5831,
				Method: PaymentMethod{Kind: MethodProviderTransfer, Type: "customer_balance"}}}},
		Seller: seller, Context: ctx("RE-2026-000124"),
	})
	xrPublic := Address{CountryCode: "DE", CompanyName: "Gemeinde Beispielstadt", Name: "Kämmerei",
		Street: "Rathausplatz 1", PostalCode: "01067", City: "Dresden", LeitwegID: "04011000-1234512345-06"}
	add(Scenario{
		Name: "xrechnung-card-paid", Description: "XRechnung paid by card: BG-18 with only the last 4 digits (BR-DE-24-a)",
		Order: Order{OrderNo: "1025", BillingAddress: xrPublic, Email: "rechnung@beispielstadt.example", PaymentRef: "pi_1025", PaymentGateway: "stripe",
			ServicePeriod: &Period{Start: day(2026, 3, 1), End: day(2026, 3, 31)},
			Items:         []Item{{Name: "Fachportal Lizenz", SKU: "FP-L", Quantity: qty("1"), UnitNetCents: cents(9900), TaxRate: rate("19")}},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1025", Date: at(2026, 2, 26), Cents: 11781,
				Method: PaymentMethod{Kind: MethodCard, Type: "card", CardBrand: "visa", CardFunding: "unknown", CardLast4: "1881", CardHolder: "Gemeinde Beispielstadt"}}}},
		Seller: seller, Context: ctx("RE-2026-000125"),
	})
	add(Scenario{
		Name: "xrechnung-sepa-debit-paid", Description: "XRechnung paid by SEPA direct debit: 59 with mandate, creditor id and debited account (BG-19, BR-DE-25-a)",
		Order: Order{OrderNo: "1026", BillingAddress: xrPublic, Email: "rechnung@beispielstadt.example", PaymentRef: "pi_1026", PaymentGateway: "stripe",
			ServicePeriod: &Period{Start: day(2026, 3, 1), End: day(2026, 3, 31)},
			Items:         []Item{{Name: "Fachportal Lizenz", SKU: "FP-L", Quantity: qty("1"), UnitNetCents: cents(9900), TaxRate: rate("19")}},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1026", Date: at(2026, 2, 26), Cents: 11781,
				Method: PaymentMethod{Kind: MethodSEPADebit, Type: "sepa_debit", MandateRef: "STRIPE-MANDATE-1026",
					CreditorID: "DE98ZZZ09999999999", DebitedIBAN: "DE02120300000000202051"}}}},
		Seller: seller, Context: ctx("RE-2026-000126"),
	})
	add(Scenario{
		Name: "product-default-periods", Description: "no service_period: each product's default period from the payment date, as line periods (BG-26) where they differ",
		Order: Order{OrderNo: "1027", BillingAddress: deCompany, Email: "einkauf@kunde.example", PaymentRef: "pi_1027", PaymentGateway: "stripe",
			Items: []Item{
				{Name: "SaaS Team-Lizenz (Monat)", SKU: "SAAS-M", Quantity: qty("5"), UnitNetCents: cents(1900), TaxRate: rate("19"), DefaultPeriodMonths: 1},
				{Name: "Wartungsvertrag (Jahr)", SKU: "WART-J", Quantity: qty("1"), UnitNetCents: cents(12000), TaxRate: rate("19"), DefaultPeriodMonths: 12},
				{Name: "Einrichtung", SKU: "SETUP", Quantity: qty("1"), UnitNetCents: cents(5000), TaxRate: rate("19")},
			},
			Payments: []ReceivedPayment{{Provider: "Stripe", Reference: "pi_1027", Date: at(2026, 2, 26), Cents: 31535, Method: card}}},
		Seller: seller, Context: ctx("RE-2026-000127"),
	})
	add(Scenario{
		Name: "credit-full", Description: "store credit covers everything: amount due 0",
		Order: Order{OrderNo: "1005", BillingAddress: de, Email: "max@example.org", FinancialStatus: "paid",
			ServicePeriod: &Period{Start: day(2026, 3, 1), End: day(2026, 3, 31)},
			Items:         []Item{{Name: "Software-Abo Basis (März 2026)", SKU: "SAAS-B", Quantity: qty("1"), UnitGrossCents: cents(1190), TaxRate: rate("19")}},
			CreditRedemptions: []CreditRedemption{
				{Type: "referral_credit", AmountCents: 1000, ExternalRef: "cr_81"},
				{Type: "referral_credit", AmountCents: 190, ExternalRef: "cr_82"},
			},
			GrossTotalCents: cents(1190)},
		Seller: seller, Context: ctx("RE-2026-000105"),
	})
	add(Scenario{
		Name: "gross-residual-cent", Description: "gross price 9.99 at 19 %: no net reaches it, 0.01 rounding amount (BT-114)",
		Order: Order{OrderNo: "1006", BillingAddress: de, Email: "max@example.org", RequiresShipping: true,
			Items:           []Item{{Name: "T-Shirt", SKU: "TS-M", Quantity: qty("1"), UnitGrossCents: cents(999), TaxRate: rate("19")}},
			GrossTotalCents: cents(999)},
		Seller: seller, Context: ctx("RE-2026-000106"),
	})
	add(Scenario{
		Name: "gift-card-split", Description: "taxed goods and a gift card: two documents, the voucher sale as category O",
		Order: Order{OrderNo: "1007", BillingAddress: de, Email: "max@example.org", RequiresShipping: true,
			ShippingGrossCents: cents(390),
			Items: []Item{
				{Name: "Teekanne", SKU: "TK-1", Quantity: qty("1"), UnitGrossCents: cents(2990), TaxRate: rate("19")},
				{Name: "Geschenkgutschein 25 EUR", SKU: "GC-25", Quantity: qty("1"), UnitGrossCents: cents(2500), GiftCard: true},
			},
			GrossTotalCents: cents(5880)},
		Seller: seller, Context: ctx("RE-2026-000107", "RE-2026-000108"),
	})
	add(Scenario{
		Name: "xrechnung", Description: "public-sector buyer with Leitweg-ID: XRechnung 3.0, service period",
		Order: Order{OrderNo: "1009",
			BillingAddress: Address{CountryCode: "DE", CompanyName: "Stadtverwaltung Musterstadt", Name: "Amt 10",
				Street: "Rathausplatz 1", PostalCode: "04109", City: "Leipzig", LeitwegID: "04011000-1234512345-06"},
			Email:         "rechnungseingang@musterstadt.example",
			ServicePeriod: &Period{Start: day(2026, 2, 1), End: day(2026, 2, 28)},
			Items: []Item{
				{Name: "Hosting Paket M", SKU: "HOST-M", Quantity: qty("1"), UnitNetCents: cents(4900), TaxRate: rate("19")},
				{Name: "Support-Stunden", SKU: "SUP-H", Quantity: qty("2.5"), UnitNetCents: cents(9500), TaxRate: rate("19")},
			}},
		Seller: seller, Context: ctx("RE-2026-000109"),
	})
	add(Scenario{
		Name: "eu-b2b-goods", Description: "EU business with VAT ID, goods: intra-community supply (K), EC sales list",
		Order: Order{OrderNo: "1010",
			BillingAddress: Address{CountryCode: "FR", CompanyName: "Client SARL", VATID: "FR12345678901",
				Street: "12 rue de la Paix", PostalCode: "75002", City: "Paris"},
			Email: "compta@client.example", RequiresShipping: true, ShippingNetCents: cents(1500), ShippingTaxRate: rate("19"),
			Items: []Item{{Name: "Industriefilter", SKU: "IF-5", Quantity: qty("10"), UnitNetCents: cents(2450), TaxRate: rate("19")}}},
		Seller: seller, Context: ctx("RE-2026-000110"),
	})
	add(Scenario{
		Name: "eu-b2b-services", Description: "EU business with VAT ID, services: reverse charge (AE), EC sales list",
		Order: Order{OrderNo: "1011",
			BillingAddress: Address{CountryCode: "AT", CompanyName: "Kunde GmbH", VATID: "ATU12345678",
				Street: "Ringstraße 3", PostalCode: "1010", City: "Wien"},
			Email:         "office@kunde.example",
			ServicePeriod: &Period{Start: day(2026, 3, 1), End: day(2026, 3, 31)},
			Items:         []Item{{Name: "SaaS Team-Lizenz", SKU: "SAAS-T", Quantity: qty("5"), UnitNetCents: cents(1900)}}},
		Seller: seller, Context: ctx("RE-2026-000111"),
	})
	add(Scenario{
		Name: "oss-b2c", Description: "EU consumer, OSS-registered seller: French rates 20 % and 5.5 %, OSS report",
		Order: Order{OrderNo: "1012",
			BillingAddress: Address{CountryCode: "FR", Name: "Jeanne Dupont", Street: "5 avenue Foch", PostalCode: "69006", City: "Lyon"},
			Email:          "jeanne@example.fr", RequiresShipping: true, ShippingGrossCents: cents(690),
			Items: []Item{
				{Name: "Sac à dos", SKU: "BP-1", Quantity: qty("1"), UnitGrossCents: cents(5990)},
				{Name: "Livre de cuisine", SKU: "BK-FR", Quantity: qty("2"), UnitGrossCents: cents(2110), TaxRate: rate("5.5")},
			}},
		Seller: seller, Context: ctx("RE-2026-000112"),
	})
	add(Scenario{
		Name: "export-goods", Description: "buyer outside the EU, goods: export (G)",
		Order: Order{OrderNo: "1013",
			BillingAddress: Address{CountryCode: "CH", CompanyName: "Kunde AG", Street: "Bahnhofstrasse 1", PostalCode: "8001", City: "Zürich"},
			Email:          "einkauf@kunde.example", RequiresShipping: true, ShippingGrossCents: cents(1990),
			Items: []Item{{Name: "Messgerät", SKU: "MG-2", Quantity: qty("1"), UnitNetCents: cents(34900), TaxRate: rate("19")}}},
		Seller: seller, Context: ctx("RE-2026-000113"),
	})
	add(Scenario{
		Name: "services-abroad", Description: "buyer outside the EU, services: not subject to German VAT (O)",
		Order: Order{OrderNo: "1014",
			BillingAddress: Address{CountryCode: "US", CompanyName: "Customer Inc.", Street: "1 Market St", PostalCode: "94105", City: "San Francisco"},
			Email:          "ap@customer.example",
			ServicePeriod:  &Period{Start: day(2026, 3, 1), End: day(2026, 3, 31)},
			Items:          []Item{{Name: "SaaS Business-Lizenz", SKU: "SAAS-B", Quantity: qty("1"), UnitNetCents: cents(29900)}}},
		Seller: seller, Context: ctx("RE-2026-000114"),
	})
	xrBuyer := Address{CountryCode: "DE", CompanyName: "Landesamt für Beispiele", Name: "Beschaffung",
		Street: "Behördenweg 3", PostalCode: "01097", City: "Dresden", LeitwegID: "991-33333TEST-33"}
	add(Scenario{
		Name: "xrechnung-goods", Description: "XRechnung for goods: gross prices at two rates, shipping split, store credit",
		Order: Order{OrderNo: "1015", BillingAddress: xrBuyer, Email: "e-rechnung@landesamt.example", RequiresShipping: true,
			ShippingGrossCents: cents(690),
			Items: []Item{
				{Name: "Fachbuch Verwaltungsrecht", SKU: "FB-1", Quantity: qty("3"), UnitGrossCents: cents(4990), TaxRate: rate("7")},
				{Name: "Aktenvernichter", SKU: "AV-2", Quantity: qty("1"), UnitGrossCents: cents(17999), TaxRate: rate("19"), DiscountNetCents: cents(1000)},
			},
			CreditRedemptions: []CreditRedemption{{Type: "referral_credit", AmountCents: 2000, ExternalRef: "cr_90"}},
			GrossTotalCents:   cents(32469)},
		Seller: seller, Context: ctx("RE-2026-000117"),
	})
	add(Scenario{
		Name: "xrechnung-cancellation-384", Description: "Stornorechnung of xrechnung as corrected invoice 384",
		Order: byName("xrechnung").Order, Seller: seller, Context: byName("xrechnung").Context,
		Cancel: TypeCorrected, CancelNumbers: []string{"RE-2026-000118"}, CancelDate: day(2026, 3, 10),
	})
	base := byName("single-rate")
	add(Scenario{
		Name: "cancellation-381", Description: "Stornorechnung of single-rate as credit note 381 with positive amounts",
		Order: base.Order, Seller: seller, Context: base.Context,
		Cancel: TypeCreditNote, CancelNumbers: []string{"RE-2026-000115"}, CancelDate: day(2026, 3, 5),
	})
	add(Scenario{
		Name: "cancellation-384", Description: "Stornorechnung of single-rate as corrected invoice 384 with negative amounts",
		Order: base.Order, Seller: seller, Context: base.Context,
		Cancel: TypeCorrected, CancelNumbers: []string{"RE-2026-000116"}, CancelDate: day(2026, 3, 5),
	})
	testSeller := seller
	testSeller.TestMode = true
	add(Scenario{
		Name: "test-mode", Description: "test document: TEST number range, test note in the XML, no report flags",
		Order: Order{OrderNo: "T-1", BillingAddress: Address{CountryCode: "FR", CompanyName: "Client SARL", VATID: "FR12345678901",
			Street: "12 rue de la Paix", PostalCode: "75002", City: "Paris"}, RequiresShipping: true,
			Items: []Item{{Name: "Testartikel", SKU: "T-1", Quantity: qty("1"), UnitNetCents: cents(1000), TaxRate: rate("19")}}},
		Seller: testSeller, Context: ctx("TEST-2026-000001"),
	})
	add(Typical())
	return out
}

// Typical is the benchmark scenario: a typical invoice of 10 lines at two
// rates with gross prices and shipping.
func Typical() Scenario {
	var items []Item
	for i := range 10 {
		r, price := "19", int64(1999+i*250)
		if i%3 == 0 {
			r, price = "7", int64(899+i*100)
		}
		items = append(items, Item{
			Name: fmt.Sprintf("Artikel %d", i+1), SKU: fmt.Sprintf("SKU-%03d", i+1),
			Quantity: money.Int(int64(1 + i%3)), UnitGrossCents: cents(price), TaxRate: rate(r),
		})
	}
	return Scenario{
		Name: "typical-10-lines", Description: "10 gross-priced lines at 19 % and 7 % with shipping (benchmark)",
		Order: Order{OrderNo: "2000", BillingAddress: Address{CountryCode: "DE", Name: "Max Mustermann",
			Street: "Hauptstraße 5", PostalCode: "80331", City: "München"},
			Email: "max@example.org", RequiresShipping: true, ShippingGrossCents: cents(495), Items: items},
		Seller: ExampleSeller(),
		Context: Context{IssueDate: day(2026, 3, 2), SupplyDate: day(2026, 2, 27), PaymentDate: day(2026, 2, 26),
			Numbers: []string{"RE-2026-002000"}},
	}
}
