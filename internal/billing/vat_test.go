package billing

import (
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/vatid"
)

// vatOrder is an order of one net-priced line to a company in billing
// country cc with VAT ID vat; goods when ship is set (then shipped to
// shipCC, or to the billing address when shipCC is "").
func vatOrder(cc, vat string, goods bool, shipCC, shipPostcode string) Order {
	o := Order{OrderNo: "V1", RequiresShipping: goods,
		BillingAddress: Address{CountryCode: cc, CompanyName: "Kunde", VATID: vat, Street: "s", PostalCode: "1000", City: "c"},
		Items:          []Item{{Name: "x", Quantity: money.Int(1), UnitNetCents: cents(1000)}}}
	if shipCC != "" {
		o.ShippingAddress = &Address{CountryCode: shipCC, Name: "n", Street: "s", PostalCode: shipPostcode, City: "c"}
	}
	return o
}

// TestDetermineByBuyerVATID: only goods shipped to another member state
// for a buyer whose valid VAT ID is of a member state other than Germany
// are zero-rated (Northern Ireland: an XI ID and goods shipped there);
// services to a buyer with a member state's valid VAT ID stay under the
// reverse charge; anything else is taxed as a sale without VAT ID. The
// invoice states the VAT ID normalised.
func TestDetermineByBuyerVATID(t *testing.T) {
	t.Parallel()
	oss := ExampleSeller()
	noOSS := oss
	noOSS.OSSRegistered = false
	tests := []struct {
		name      string
		order     Order
		seller    Seller
		want      Treatment
		wantCat   Category
		wantRate  string
		wantBuyer string // BT-48 on the invoice
	}{
		{"goods to FR, FR ID", vatOrder("FR", "FR12345678901", true, "", ""), oss, TreatIntraEU, CategoryIntraEU, "0", "FR12345678901"},
		{"goods to FR, FR ID with spaces and dots", vatOrder("FR", "fr 12.345.678-901", true, "", ""), oss, TreatIntraEU, CategoryIntraEU, "0", "FR12345678901"},
		{"goods to GR, EL ID", vatOrder("GR", "EL123456789", true, "", ""), oss, TreatIntraEU, CategoryIntraEU, "0", "EL123456789"},
		{"goods to FR, BE ID (another member state's)", vatOrder("FR", "BE0123456789", true, "", ""), oss, TreatIntraEU, CategoryIntraEU, "0", "BE0123456789"},
		{"goods to FR, German ID: German VAT even with OSS", vatOrder("FR", "DE123456789", true, "", ""), oss, TreatDistanceDE, CategoryStandard, "19", "DE123456789"},
		{"goods to FR, invalid ID, OSS", vatOrder("FR", "FR123", true, "", ""), oss, TreatOSS, CategoryStandard, "20", "FR123"},
		{"goods to FR, invalid ID, no OSS", vatOrder("FR", "n/a", true, "", ""), noOSS, TreatDistanceDE, CategoryStandard, "19", "N/A"},
		{"goods to FR, free text", vatOrder("FR", "none", true, "", ""), oss, TreatOSS, CategoryStandard, "20", "NONE"},
		{"goods to FR, only separators", vatOrder("FR", " - ", true, "", ""), oss, TreatOSS, CategoryStandard, "20", "-"},
		{"goods to FR, XI ID", vatOrder("FR", "XI123456789", true, "", ""), oss, TreatOSS, CategoryStandard, "20", "XI123456789"},
		{"goods from a Swiss buyer shipped to FR with FR ID", vatOrder("CH", "FR12345678901", true, "FR", "75001"), oss, TreatIntraEU, CategoryIntraEU, "0", "FR12345678901"},
		{"goods shipped to DE, FR ID: domestic", vatOrder("FR", "FR12345678901", true, "DE", "10115"), oss, TreatDomestic, CategoryStandard, "19", "FR12345678901"},
		{"goods to Northern Ireland, XI ID", vatOrder("GB", "XI123456789", true, "GB", "BT1 1AA"), oss, TreatIntraEU, CategoryIntraEU, "0", "XI123456789"},
		{"goods to Northern Ireland (country XI), XI ID", vatOrder("XI", "XI 123 4567 89", true, "", ""), oss, TreatIntraEU, CategoryIntraEU, "0", "XI123456789"},
		{"goods to Northern Ireland, IE ID: export", vatOrder("IE", "IE1234567WA", true, "GB", "bt7 1nn"), oss, TreatExport, CategoryExport, "0", "IE1234567WA"},
		{"goods to Great Britain, XI ID: export", vatOrder("GB", "XI123456789", true, "GB", "SW1A 1AA"), oss, TreatExport, CategoryExport, "0", "XI123456789"},
		{"goods to GB, UK VAT number: export", vatOrder("GB", "GB123456789", true, "", ""), oss, TreatExport, CategoryExport, "0", "GB123456789"},
		{"services to AT, AT ID", vatOrder("AT", "ATU12345678", false, "", ""), oss, TreatReverseCharge, CategoryReverse, "0", "ATU12345678"},
		{"services to FR, German ID: reverse charge as before", vatOrder("FR", "DE123456789", false, "", ""), oss, TreatReverseCharge, CategoryReverse, "0", "DE123456789"},
		{"services to IE, XI ID: not for services", vatOrder("IE", "XI123456789", false, "", ""), oss, TreatOSS, CategoryStandard, "23", "XI123456789"},
		{"services to FR, invalid ID", vatOrder("FR", "FR123", false, "", ""), noOSS, TreatDistanceDE, CategoryStandard, "19", "FR123"},
		{"services to GB, XI ID", vatOrder("GB", "XI123456789", false, "", ""), oss, TreatNotSubject, CategoryNotSubject, "0", ""},
		{"services to DE, FR ID", vatOrder("DE", "FR12345678901", false, "", ""), oss, TreatDomestic, CategoryStandard, "19", "FR12345678901"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Determine(tc.order, tc.seller); got != tc.want {
				t.Fatalf("Determine = %s, want %s", got, tc.want)
			}
			invs, err := Compute(tc.order, tc.seller, testCtx(1))
			if err != nil {
				t.Fatal(err)
			}
			inv := invs[0]
			if l := inv.Lines[0]; l.Category != tc.wantCat || l.Rate.String() != tc.wantRate {
				t.Errorf("line tax = %s %s, want %s %s", l.Category, l.Rate, tc.wantCat, tc.wantRate)
			}
			if inv.Buyer.VATID != tc.wantBuyer {
				t.Errorf("buyer VAT ID %q, want %q", inv.Buyer.VATID, tc.wantBuyer)
			}
			zero := tc.want == TreatIntraEU || tc.want == TreatReverseCharge
			if inv.ECSalesList != zero {
				t.Errorf("EC sales list %v, want %v", inv.ECSalesList, zero)
			}
			if zero && !strings.Contains(strings.Join(inv.Notes, " "), tc.wantBuyer) {
				t.Errorf("notes %q do not name the VAT ID %s", inv.Notes, tc.wantBuyer)
			}
		})
	}
}

// TestVATIDReview: a VAT ID that decides a supply abroad and needs a person
// to confirm it gives a reason; one that does not, none.
func TestVATIDReview(t *testing.T) {
	t.Parallel()
	withShippingID := vatOrder("FR", "", true, "FR", "75001")
	withShippingID.ShippingAddress.VATID = "FR12345678901"
	tests := []struct {
		name  string
		order Order
		want  string // part of the reason; "" for none
	}{
		{"goods, ID of the buyer's country", vatOrder("FR", "FR12345678901", true, "", ""), ""},
		{"goods, EL ID of a Greek buyer", vatOrder("GR", "EL123456789", true, "", ""), ""},
		{"services, ID of the buyer's country", vatOrder("AT", "ATU12345678", false, "", ""), ""},
		{"goods to Northern Ireland, XI ID of a GB buyer", vatOrder("GB", "XI123456789", true, "GB", "BT1 1AA"), ""},
		{"no VAT ID", vatOrder("FR", "", true, "", ""), ""},
		{"domestic, any ID", vatOrder("DE", "FR12345678901", true, "", ""), ""},
		{"domestic, invalid ID", vatOrder("DE", "n/a", false, "", ""), ""},
		{"export, any ID", vatOrder("CH", "CHE-123.456.789 MWST", true, "", ""), ""},
		{"goods, ID of another member state", vatOrder("FR", "BE0123456789", true, "", ""), "not of the buyer's country FR"},
		{"goods, Swiss buyer shipping to FR", vatOrder("CH", "FR12345678901", true, "FR", "75001"), "not of the buyer's country CH: confirm it"},
		{"services, German ID abroad", vatOrder("FR", "DE123456789", false, "", ""), "before relying on the reverse charge"},
		{"goods, German ID", vatOrder("FR", "DE123456789", true, "", ""), "German VAT charged"},
		{"goods, invalid ID", vatOrder("FR", "FR123", true, "", ""), `VAT ID "FR123" is not a VAT id of France`},
		{"services, XI ID", vatOrder("IE", "XI123456789", false, "", ""), "goods only, not for services"},
		{"goods to FR, XI ID", vatOrder("FR", "XI123456789", true, "", ""), "goods shipped to Northern Ireland only"},
		{"goods to Northern Ireland, IE ID", vatOrder("IE", "IE1234567WA", true, "GB", "BT7 1NN"), "only an XI VAT ID"},
		{"VAT ID on the shipping address only", withShippingID, "on the shipping address only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := VATIDReview(tc.order)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("VATIDReview = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMemberStatesAgree: the VAT rate table and the VAT ID table know the
// same 27 member states.
func TestMemberStatesAgree(t *testing.T) {
	t.Parallel()
	for c := range EURates().Rates {
		if !vatid.IsMemberState(c) {
			t.Errorf("%s has VAT rates but no VAT ID syntax", c)
		}
	}
	for _, c := range []string{"XI", "GB", "CH", "NO"} {
		if IsEU(c) || vatid.IsMemberState(c) {
			t.Errorf("%s counted as a member state", c)
		}
	}
}
