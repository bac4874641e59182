package billing

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/money"
)

// amounts is the arithmetic of one document in cents, for compact tables.
type amounts struct {
	Lines    []money.Cents // BT-131 per line
	Bases    []money.Cents // BT-116 per breakdown (breakdown order: category, then rate descending)
	Taxes    []money.Cents // BT-117
	Grand    money.Cents   // BT-112
	Prepaid  money.Cents   // BT-113
	Rounding money.Cents   // BT-114
	Due      money.Cents   // BT-115
}

func amountsOf(inv Invoice) amounts {
	a := amounts{Grand: inv.Totals.GrandCents, Prepaid: inv.Totals.PrepaidCents, Rounding: inv.Totals.RoundingCents, Due: inv.Totals.DueCents}
	for _, l := range inv.Lines {
		a.Lines = append(a.Lines, l.NetCents)
	}
	for _, v := range inv.VAT {
		a.Bases = append(a.Bases, v.BaseCents)
		a.Taxes = append(a.Taxes, v.TaxCents)
	}
	return a
}

func deOrder(items ...Item) Order {
	return Order{OrderNo: "T1", RequiresShipping: true, Items: items, BillingAddress: Address{
		CountryCode: "DE", Name: "Max Mustermann", Street: "Hauptstraße 5", PostalCode: "80331", City: "München"}}
}

func testCtx(n int) Context {
	nums := []string{"RE-2026-000001", "RE-2026-000002"}
	return Context{IssueDate: day(2026, 3, 2), SupplyDate: day(2026, 2, 27), Numbers: nums[:n]}
}

// TestComputeArithmetic pins every arithmetic case with hand-computed cents.
func TestComputeArithmetic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		order Order
		want  []amounts
	}{
		{
			// 2 x 149.00 + 39.90 = 337.90; 19 % = 64.201 -> 64.20
			name:  "net prices one rate",
			order: deOrder(Item{Name: "a", Quantity: qty("2"), UnitNetCents: cents(14900), TaxRate: rate("19")}, Item{Name: "b", Quantity: qty("1"), UnitNetCents: cents(3990), TaxRate: rate("19")}),
			want:  []amounts{{Lines: []money.Cents{29800, 3990}, Bases: []money.Cents{33790}, Taxes: []money.Cents{6420}, Grand: 40210, Due: 40210}},
		},
		{
			// VAT on the category sum, not per line: five lines of 0.02 at 19 %
			// would each be 0.0038 -> 0.00; on the sum 0.10 x 19 % = 0.019 -> 0.02.
			name: "VAT on the summed amount",
			order: deOrder(
				Item{Name: "a", Quantity: qty("1"), UnitNetCents: cents(2), TaxRate: rate("19")},
				Item{Name: "b", Quantity: qty("1"), UnitNetCents: cents(2), TaxRate: rate("19")},
				Item{Name: "c", Quantity: qty("1"), UnitNetCents: cents(2), TaxRate: rate("19")},
				Item{Name: "d", Quantity: qty("1"), UnitNetCents: cents(2), TaxRate: rate("19")},
				Item{Name: "e", Quantity: qty("1"), UnitNetCents: cents(2), TaxRate: rate("19")},
			),
			want: []amounts{{Lines: []money.Cents{2, 2, 2, 2, 2}, Bases: []money.Cents{10}, Taxes: []money.Cents{2}, Grand: 12, Due: 12}},
		},
		{
			// 3 x 18.69 = 56.07 - 5.00 = 51.07 (7 %: 3.5749 -> 3.57);
			// 420.17 - 42.02 = 378.15 and 2 x 12.50 = 25.00 -> 403.15 (19 %: 76.5985 -> 76.60)
			name: "line discounts",
			order: deOrder(
				Item{Name: "a", Quantity: qty("3"), UnitNetCents: cents(1869), TaxRate: rate("7"), DiscountNetCents: cents(500)},
				Item{Name: "b", Quantity: qty("1"), UnitNetCents: cents(42017), TaxRate: rate("19"), DiscountNetCents: cents(4202)},
				Item{Name: "c", Quantity: qty("2"), UnitNetCents: cents(1250), TaxRate: rate("19")},
			),
			want: []amounts{{Lines: []money.Cents{5107, 37815, 2500}, Bases: []money.Cents{40315, 5107}, Taxes: []money.Cents{7660, 357}, Grand: 53439, Due: 53439}},
		},
		{
			// DOMAIN.md: 10.70 (7 %) and 23.80 (19 %) gross with 4.90 shipping:
			// shipping 4.90 x 10.70/34.50 = 1.5197 -> 1.52 and 3.38; nets 1.42 and 2.84.
			// 7 %: 10.70 + 1.52 = 12.22 -> net 11.42 (10.00 + 1.42), tax 0.80;
			// 19 %: 23.80 + 3.38 = 27.18 -> net 22.84 (20.00 + 2.84), tax 4.34.
			name: "DOMAIN shipping example",
			order: func() Order {
				o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(1070), TaxRate: rate("7")}, Item{Name: "b", Quantity: qty("1"), UnitGrossCents: cents(2380), TaxRate: rate("19")})
				o.ShippingGrossCents = cents(490)
				return o
			}(),
			want: []amounts{{Lines: []money.Cents{1000, 2000, 142, 284}, Bases: []money.Cents{2284, 1142}, Taxes: []money.Cents{434, 80}, Grand: 3940, Due: 3940}},
		},
		{
			// single rate: shipping takes it entirely: 89.90 + 4.90 = 94.80 -> net 79.66
			// (94.80/1.19 = 79.663 -> 79.66, tax 15.1354 -> 15.14, 94.80 ok), split by gross
			// 89.90 : 4.90 -> 75.54 and 4.12 (largest remainder of 79.66).
			name: "shipping one rate",
			order: func() Order {
				o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(8990), TaxRate: rate("19")})
				o.ShippingGrossCents = cents(490)
				return o
			}(),
			want: []amounts{{Lines: []money.Cents{7554, 412}, Bases: []money.Cents{7966}, Taxes: []money.Cents{1514}, Grand: 9480, Due: 9480}},
		},
		{
			// shipping net + rate taken as given: 10.00 + 5.90 = 15.90, 19 % 3.021 -> 3.02
			name: "shipping net as given",
			order: func() Order {
				o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitNetCents: cents(1000), TaxRate: rate("19")})
				o.ShippingNetCents, o.ShippingTaxRate = cents(590), rate("19")
				return o
			}(),
			want: []amounts{{Lines: []money.Cents{1000, 590}, Bases: []money.Cents{1590}, Taxes: []money.Cents{302}, Grand: 1892, Due: 1892}},
		},
		{
			// 9.99 gross at 19 %: 8.39 + 1.59 = 9.98, 8.40 + 1.60 = 10.00:
			// no net reaches 9.99 -> net 8.39, rounding amount 0.01, due 9.99.
			name:  "gross residual cent",
			order: deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(999), TaxRate: rate("19")}),
			want:  []amounts{{Lines: []money.Cents{839}, Bases: []money.Cents{839}, Taxes: []money.Cents{159}, Grand: 998, Rounding: 1, Due: 999}},
		},
		{
			// residual downwards at 7 %: 6.50 gross: 6.07 + 0.42 = 6.49, 6.08 + 0.43 = 6.51
			// (6.50/1.07 = 6.0748 -> 6.07): rounding amount +0.01.
			name:  "gross residual cent 7 percent",
			order: deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(650), TaxRate: rate("7")}),
			want:  []amounts{{Lines: []money.Cents{607}, Bases: []money.Cents{607}, Taxes: []money.Cents{42}, Grand: 649, Rounding: 1, Due: 650}},
		},
		{
			// gross lines share the group net by their paid gross: 3 x 19.99 = 59.97 and
			// 1 x 5.00 -> 64.97 / 1.19 = 54.596 -> 54.60 (tax 10.374 -> 10.37, sum 64.97);
			// 54.60 x 59.97/64.97 = 50.398 -> 50.39 / 4.20 + 1 cent to the larger remainder
			// (0.398 vs 0.2017 of 4.2017) -> 50.40 and 4.20.
			name: "gross lines share the net",
			order: deOrder(
				Item{Name: "a", Quantity: qty("3"), UnitGrossCents: cents(1999), TaxRate: rate("19")},
				Item{Name: "b", Quantity: qty("1"), UnitGrossCents: cents(500), TaxRate: rate("19")},
			),
			want: []amounts{{Lines: []money.Cents{5040, 420}, Bases: []money.Cents{5460}, Taxes: []money.Cents{1037}, Grand: 6497, Due: 6497}},
		},
		{
			// store credit is a payment: VAT on the full 94.80, paid 15.00, due 79.80
			name: "credit partly covering",
			order: func() Order {
				o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(8990), TaxRate: rate("19")})
				o.ShippingGrossCents = cents(490)
				o.CreditRedemptions = []CreditRedemption{{Type: "referral_credit", AmountCents: 1500}}
				o.GrossTotalCents = cents(9480)
				return o
			}(),
			want: []amounts{{Lines: []money.Cents{7554, 412}, Bases: []money.Cents{7966}, Taxes: []money.Cents{1514}, Grand: 9480, Prepaid: 1500, Due: 7980}},
		},
		{
			name: "credit fully covering",
			order: func() Order {
				o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(1190), TaxRate: rate("19")})
				o.FinancialStatus = "paid"
				o.CreditRedemptions = []CreditRedemption{{Type: "referral_credit", AmountCents: 1000}, {Type: "referral_credit", AmountCents: 190}}
				o.GrossTotalCents = cents(1190)
				return o
			}(),
			want: []amounts{{Lines: []money.Cents{1000}, Bases: []money.Cents{1000}, Taxes: []money.Cents{190}, Grand: 1190, Prepaid: 1190, Due: 0}},
		},
		{
			// gift card on its own document (category O, no VAT); credit pays the
			// taxed invoice first (29.90 + 3.90 = 33.80), the rest (6.20) the voucher.
			name: "gift card split with credit",
			order: func() Order {
				o := deOrder(
					Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(2990), TaxRate: rate("19")},
					Item{Name: "gc", Quantity: qty("1"), UnitGrossCents: cents(2500), GiftCard: true},
				)
				o.ShippingGrossCents = cents(390)
				o.CreditRedemptions = []CreditRedemption{{Type: "referral_credit", AmountCents: 4000}}
				o.GrossTotalCents = cents(5880)
				return o
			}(),
			want: []amounts{
				// 33.80 / 1.19 = 28.403 -> 28.40, tax 5.396 -> 5.40; split 29.90 : 3.90 -> 25.12 / 3.28
				{Lines: []money.Cents{2512, 328}, Bases: []money.Cents{2840}, Taxes: []money.Cents{540}, Grand: 3380, Prepaid: 3380, Due: 0},
				{Lines: []money.Cents{2500}, Bases: []money.Cents{2500}, Taxes: []money.Cents{0}, Grand: 2500, Prepaid: 620, Due: 1880},
			},
		},
		{
			// fractional quantity: 2.5 x 95.00 = 237.50
			name:  "fractional quantity",
			order: deOrder(Item{Name: "a", Quantity: qty("2.5"), UnitNetCents: cents(9500), TaxRate: rate("19")}),
			want:  []amounts{{Lines: []money.Cents{23750}, Bases: []money.Cents{23750}, Taxes: []money.Cents{4513}, Grand: 28263, Due: 28263}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			invs, err := Compute(tc.order, ExampleSeller(), testCtx(Documents(tc.order)))
			if err != nil {
				t.Fatal(err)
			}
			var got []amounts
			for _, inv := range invs {
				got = append(got, amountsOf(inv))
				if err := Invariants(&inv); err != nil {
					t.Errorf("invariants: %v", err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("amounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDetermine(t *testing.T) {
	t.Parallel()
	seller := ExampleSeller()
	noOSS := seller
	noOSS.OSSRegistered = false
	addr := func(cc, vat string) Address {
		return Address{CountryCode: cc, Name: "n", VATID: vat, Street: "s", PostalCode: "p", City: "c"}
	}
	tests := []struct {
		name      string
		order     Order
		seller    Seller
		want      Treatment
		wantCat   Category
		wantRate  string
		oss, ecsl bool
	}{
		{"domestic", Order{BillingAddress: addr("DE", ""), RequiresShipping: true}, seller, TreatDomestic, CategoryStandard, "19", false, false},
		{"domestic with VAT ID", Order{BillingAddress: addr("DE", "DE987654321")}, seller, TreatDomestic, CategoryStandard, "19", false, false},
		{"EU B2B goods", Order{BillingAddress: addr("FR", "FR12345678901"), RequiresShipping: true}, seller, TreatIntraEU, CategoryIntraEU, "0", false, true},
		{"EU B2B services", Order{BillingAddress: addr("AT", "ATU12345678")}, seller, TreatReverseCharge, CategoryReverse, "0", false, true},
		{"EU B2C OSS", Order{BillingAddress: addr("FR", ""), RequiresShipping: true}, seller, TreatOSS, CategoryStandard, "20", true, false},
		{"EU B2C OSS services", Order{BillingAddress: addr("FI", "")}, seller, TreatOSS, CategoryStandard, "25.5", true, false},
		{"EU B2C without OSS", Order{BillingAddress: addr("FR", "")}, noOSS, TreatDistanceDE, CategoryStandard, "19", false, false},
		{"Greece as EL", Order{BillingAddress: addr("EL", "")}, seller, TreatOSS, CategoryStandard, "24", true, false},
		{"export goods", Order{BillingAddress: addr("CH", ""), RequiresShipping: true}, seller, TreatExport, CategoryExport, "0", false, false},
		{"services abroad", Order{BillingAddress: addr("US", "")}, seller, TreatNotSubject, CategoryNotSubject, "0", false, false},
		{"goods shipped abroad decide by shipping country", Order{BillingAddress: addr("DE", ""), RequiresShipping: true,
			ShippingAddress: &Address{CountryCode: "NO", Name: "n", City: "Oslo"}}, seller, TreatExport, CategoryExport, "0", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.order.OrderNo = "D1"
			tc.order.Items = []Item{{Name: "x", Quantity: money.Int(1), UnitNetCents: cents(1000)}}
			if got := Determine(tc.order, tc.seller); got != tc.want {
				t.Fatalf("Determine = %s, want %s", got, tc.want)
			}
			invs, err := Compute(tc.order, tc.seller, testCtx(1))
			if err != nil {
				t.Fatal(err)
			}
			l := invs[0].Lines[0]
			if l.Category != tc.wantCat || l.Rate.String() != tc.wantRate {
				t.Errorf("line tax = %s %s, want %s %s", l.Category, l.Rate, tc.wantCat, tc.wantRate)
			}
			if invs[0].OSSReport != tc.oss || invs[0].ECSalesList != tc.ecsl {
				t.Errorf("flags OSS=%v ECSL=%v, want %v %v", invs[0].OSSReport, invs[0].ECSalesList, tc.oss, tc.ecsl)
			}
			// test documents never count
			ts := tc.seller
			ts.TestMode = true
			ctx := testCtx(1)
			ctx.Numbers = []string{"TEST-2026-000001"}
			tinvs, err := Compute(tc.order, ts, ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tinvs[0].OSSReport || tinvs[0].ECSalesList || !tinvs[0].Test {
				t.Errorf("test document: OSS=%v ECSL=%v Test=%v", tinvs[0].OSSReport, tinvs[0].ECSalesList, tinvs[0].Test)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	base := func() Order {
		return deOrder(Item{Name: "a", Quantity: qty("1"), UnitGrossCents: cents(1190), TaxRate: rate("19")})
	}
	tests := []struct {
		name   string
		mutate func(*Order)
		seller func(*Seller)
		want   []string // fields
	}{
		{"valid", func(o *Order) {}, nil, nil},
		{"DE rate 16 rejected", func(o *Order) { o.Items[0].TaxRate = rate("16") }, nil, []string{"items[0].taxRate"}},
		{"DE rate 0 is zero-rated", func(o *Order) { o.Items[0].TaxRate = rate("0"); o.GrossTotalCents = cents(1190) }, nil, nil},
		{"product default used when no rate is sent", func(o *Order) { o.Items[0].TaxRate = nil; o.Items[0].ProductTaxRate = rate("5") }, nil, []string{"items[0].taxRate"}},
		{"OSS rate not of the destination", func(o *Order) {
			o.BillingAddress.CountryCode = "FR"
			o.Items[0].TaxRate = rate("7")
		}, nil, []string{"items[0].taxRate"}},
		{"gross total agrees", func(o *Order) { o.GrossTotalCents = cents(1190) }, nil, nil},
		{"gross total off by one cent", func(o *Order) { o.GrossTotalCents = cents(1191) }, nil, []string{"grossTotalCents"}},
		{"credit without gross total", func(o *Order) {
			o.CreditRedemptions = []CreditRedemption{{Type: "referral_credit", AmountCents: 100}}
		}, nil, []string{"grossTotalCents"}},
		{"credit exceeds total", func(o *Order) {
			o.CreditRedemptions = []CreditRedemption{{Type: "referral_credit", AmountCents: 2000}}
			o.GrossTotalCents = cents(1190)
		}, nil, []string{"creditRedemptions"}},
		{"invalid Leitweg-ID", func(o *Order) { o.BillingAddress.LeitwegID = "04011000-1234512345-07" }, nil, []string{"billingAddress.leitweg_id"}},
		{"missing country", func(o *Order) { o.BillingAddress.CountryCode = "" }, nil, []string{"billingAddress.country_code"}},
		// A German consumer up to 250 EUR gets a small-amount invoice without
		// an address (TestSmallAmount); a business buyer never does.
		{"missing address", func(o *Order) {
			o.BillingAddress.City, o.BillingAddress.Street, o.BillingAddress.CompanyName = "", "", "Kunde AG"
		}, nil, []string{"billingAddress.street", "billingAddress.city"}},
		{"no price", func(o *Order) { o.Items[0].UnitGrossCents = nil }, nil, []string{"items[0].unitNetCents"}},
		{"zero quantity", func(o *Order) { o.Items[0].Quantity = money.Int(0) }, nil, []string{"items[0].quantity"}},
		{"discount above line", func(o *Order) {
			o.Items[0].UnitGrossCents, o.Items[0].UnitNetCents, o.Items[0].DiscountNetCents = nil, cents(100), cents(101)
		}, nil, []string{"items[0].discountNetCents"}},
		{"shipping net without rate", func(o *Order) { o.ShippingNetCents = cents(500) }, nil, []string{"shippingTaxRate"}},
		{"shipping rate not German", func(o *Order) { o.ShippingNetCents, o.ShippingTaxRate = cents(500), rate("20") }, nil, []string{"shippingTaxRate"}},
		{"service period reversed", func(o *Order) {
			o.ServicePeriod = &Period{Start: day(2026, 3, 31), End: day(2026, 3, 1)}
		}, nil, []string{"service_period.end_date"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := base()
			tc.mutate(&o)
			err := Validate(o, ExampleSeller())
			var got []string
			var fes FieldErrors
			if errors.As(err, &fes) {
				for _, fe := range fes {
					got = append(got, fe.Field)
				}
			} else if err != nil {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != tc.want[0] {
					t.Errorf("errors.As first field = %v, want %s", fe, tc.want[0])
				}
			}
		})
	}
}

func TestComputeDocumentsAndNumbers(t *testing.T) {
	t.Parallel()
	o := deOrder(
		Item{Name: "a", Quantity: qty("1"), UnitNetCents: cents(1000), TaxRate: rate("19")},
		Item{Name: "gc", Quantity: qty("1"), UnitGrossCents: cents(2500), GiftCard: true},
	)
	if n := Documents(o); n != 2 {
		t.Fatalf("Documents = %d, want 2", n)
	}
	if _, err := Compute(o, ExampleSeller(), testCtx(1)); err == nil {
		t.Error("Compute with one number for two documents: want error")
	}
	ctx := testCtx(2)
	ctx.Numbers[0] = "TEST-2026-000001"
	if _, err := Compute(o, ExampleSeller(), ctx); err == nil {
		t.Error("live seller with a TEST number: want error")
	}
	invs, err := Compute(o, ExampleSeller(), testCtx(2))
	if err != nil {
		t.Fatal(err)
	}
	if invs[0].Kind != KindInvoice || invs[1].Kind != KindVoucherSale || invs[1].Seller.VATID != "" || invs[1].Seller.TaxNumber == "" {
		t.Errorf("documents: %s %s, voucher seller VAT %q tax %q", invs[0].Kind, invs[1].Kind, invs[1].Seller.VATID, invs[1].Seller.TaxNumber)
	}
	only := deOrder(Item{Name: "gc", Quantity: qty("1"), UnitGrossCents: cents(2500), GiftCard: true})
	if n := Documents(only); n != 1 {
		t.Errorf("gift card only: Documents = %d, want 1", n)
	}
}

func TestXRechnungAndDates(t *testing.T) {
	t.Parallel()
	o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitNetCents: cents(1000), TaxRate: rate("19")})
	o.BillingAddress.LeitwegID = "991-33333test-33"
	o.RequiresShipping = false
	invs, err := Compute(o, ExampleSeller(), Context{IssueDate: day(2026, 3, 2), PaymentDate: day(2026, 2, 20), Numbers: []string{"RE-2026-000001"}})
	if err != nil {
		t.Fatal(err)
	}
	inv := invs[0]
	if inv.Format != FormatXRechnung || inv.BuyerReference != "991-33333TEST-33" || inv.Guideline() != GuidelineXRechnung {
		t.Errorf("format %s, BT-10 %q", inv.Format, inv.BuyerReference)
	}
	if inv.Buyer.ElectronicAddressScheme != "0204" {
		t.Errorf("buyer electronic address scheme %q, want 0204 (no e-mail)", inv.Buyer.ElectronicAddressScheme)
	}
	if !inv.SupplyDate.Equal(day(2026, 2, 20)) || inv.Period != nil {
		t.Errorf("service without period: supply date %v, want the payment date", inv.SupplyDate)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	o := deOrder(Item{Name: "a", Quantity: qty("2"), UnitNetCents: cents(1000), TaxRate: rate("19"), DiscountNetCents: cents(100)})
	invs, err := Compute(o, ExampleSeller(), testCtx(1))
	if err != nil {
		t.Fatal(err)
	}
	orig := invs[0]
	c381, err := Cancel(orig, "RE-2026-000009", day(2026, 3, 9), TypeCreditNote)
	if err != nil {
		t.Fatal(err)
	}
	// Settled by offset: BT-113 is the whole amount, nothing is due.
	want := orig.Totals
	want.PrepaidCents, want.OffsetCents, want.DueCents = orig.Totals.GrandCents, orig.Totals.GrandCents, 0
	if c381.TypeCode != TypeCreditNote || c381.Totals != want || c381.Preceding.Number != orig.Number ||
		c381.Payment.Code != MeansClearing || c381.Payment.IBAN != "" {
		t.Errorf("381: %+v %+v", c381.Totals, c381.Payment)
	}
	c384, err := Cancel(orig, "RE-2026-000010", day(2026, 3, 9), TypeCorrected)
	if err != nil {
		t.Fatal(err)
	}
	if c384.Totals.GrandCents != -orig.Totals.GrandCents || c384.Lines[0].Quantity.String() != "-2" ||
		c384.Lines[0].UnitNetPrice.Sign() <= 0 || c384.Lines[0].DiscountCents != -100 {
		t.Errorf("384: grand %s, line %+v", c384.Totals.GrandCents, c384.Lines[0])
	}
	if orig.Lines[0].Quantity.String() != "2" {
		t.Error("Cancel changed the original")
	}
	if _, err := Cancel(orig, "RE-2026-000011", day(2026, 3, 9), TypeInvoice); err == nil {
		t.Error("cancel as 380: want error")
	}
	if _, err := Cancel(c381, "RE-2026-000012", day(2026, 3, 9), TypeCreditNote); err == nil {
		t.Error("cancel a cancellation: want error")
	}
}

// TestPaymentMeans: what the invoice asks the buyer to do, per way of paying.
func TestPaymentMeans(t *testing.T) {
	t.Parallel()
	transfer := &BankTransfer{IBAN: "DE36 1001 0010 0000 0000 01", BIC: "SOGEDEFFXXX", AccountHolder: "Stripe Payments Europe Limited", Reference: "AK40SLQJDCVQ"}
	seller := ExampleSeller()
	seller.InvoiceFirstGateways = []string{"invoice"}
	for _, tc := range []struct {
		name     string
		gateway  string
		transfer *BankTransfer
		want     PaymentMeans
	}{
		{"provider bank transfer: the virtual IBAN and the provider's reference", "provider_transfer", transfer, PaymentMeans{Code: "58",
			Information: "Überweisung an das Konto des Zahlungsdienstleisters", IBAN: "DE36100100100000000001", AccountName: "Stripe Payments Europe Limited",
			BIC: "SOGEDEFFXXX", Reference: "AK40SLQJDCVQ", DueDate: day(2026, 3, 16),
			Terms: "Zahlbar innerhalb von 14 Tagen ohne Abzug bis zum 16.03.2026. Bitte überweisen Sie den Betrag unter Angabe des Verwendungszwecks AK40SLQJDCVQ."}},
		{"invoice-first gateway: the seller's account, the order's reference", "invoice", nil, PaymentMeans{Code: "58",
			Information: "Zahlung über invoice", IBAN: seller.IBAN, BIC: seller.BIC, Reference: "PAY-1", DueDate: day(2026, 3, 16),
			Terms: "Zahlbar innerhalb von 14 Tagen ohne Abzug bis zum 16.03.2026. Bitte überweisen Sie den Betrag unter Angabe des Verwendungszwecks PAY-1."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := deOrder(Item{Name: "a", Quantity: qty("1"), UnitNetCents: cents(1000), TaxRate: rate("19")})
			o.PaymentGateway, o.PaymentRef, o.Transfer = tc.gateway, "PAY-1", tc.transfer
			invs, err := Compute(o, seller, testCtx(1))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, invs[0].Payment); d != "" {
				t.Errorf("payment means (-want +got):\n%s", d)
			}
		})
	}
}
