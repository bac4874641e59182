package project

import (
	"slices"
	"testing"
)

// complete is seller data every kind of invoice can be issued with.
func complete() Settings {
	return Settings{SellerName: "Muster GmbH", SellerStreet: "Hauptstraße 1", SellerPostalCode: "10115", SellerCity: "Berlin",
		SellerCountry: "DE", SellerVATID: "DE123456789", ContactName: "Erika", ContactPhone: "+49 30 1234567",
		ContactEmail: "rechnung@example.com"}
}

func with(f func(*Settings)) Settings {
	s := complete()
	f(&s)
	return s
}

// TestCauseOf: the cause of the project that holds a due order, decided
// from its settings before the order is computed.
func TestCauseOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		s         Settings
		xrechnung bool
		kind      string
		missing   []string
	}{
		{"complete", complete(), false, "", nil},
		{"complete, XRechnung", complete(), true, "", nil},
		{"no seller data at all", Settings{}, false, CauseSellerData, []string{"sellerName", "sellerVatId or sellerTaxNumber"}},
		{"no seller data, XRechnung: seller data first", Settings{}, true, CauseSellerData,
			[]string{"sellerName", "sellerVatId or sellerTaxNumber", "sellerCity", "sellerPostalCode", "contactName", "contactEmail"}},
		{"no name", with(func(s *Settings) { s.SellerName = "" }), false, CauseSellerData, []string{"sellerName"}},
		{"neither VAT ID nor tax number", with(func(s *Settings) { s.SellerVATID = "" }), false, CauseSellerData, []string{"sellerVatId or sellerTaxNumber"}},
		{"tax number instead of VAT ID", with(func(s *Settings) { s.SellerVATID, s.SellerTaxNumber = "", "30/123/45678" }), false, "", nil},
		{"no city: only XRechnung needs it", with(func(s *Settings) { s.SellerCity = "" }), false, "", nil},
		{"no city, XRechnung", with(func(s *Settings) { s.SellerCity = "" }), true, CauseSellerData, []string{"sellerCity"}},
		{"no contact e-mail, XRechnung", with(func(s *Settings) { s.ContactEmail = "" }), true, CauseSellerData, []string{"contactEmail"}},
		{"no phone", with(func(s *Settings) { s.ContactPhone = "" }), false, "", nil},
		{"no phone, XRechnung", with(func(s *Settings) { s.ContactPhone = "" }), true, CauseContactPhone, []string{"contactPhone"}},
		{"no phone and no name, XRechnung", with(func(s *Settings) { s.ContactPhone, s.SellerName = "", "" }), true, CauseSellerData, []string{"sellerName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kind, missing := tt.s.CauseOf(tt.xrechnung)
			if kind != tt.kind || !slices.Equal(missing, tt.missing) {
				t.Errorf("CauseOf = %q %q, want %q %q", kind, missing, tt.kind, tt.missing)
			}
		})
	}
}

// TestFixedCauses: which open tasks a change of settings reports fixed.
func TestFixedCauses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after Settings
		want          []string
	}{
		{"nothing changed", complete(), complete(), nil},
		{"nothing changed, incomplete", Settings{}, Settings{}, nil},
		{"seller data set", Settings{}, with(func(s *Settings) { s.ContactPhone = "" }), []string{CauseValidation, CauseSellerData}},
		{"seller data still incomplete", Settings{}, Settings{SellerName: "Muster GmbH"}, []string{CauseValidation}},
		{"phone set", with(func(s *Settings) { s.ContactPhone = "" }), complete(), []string{CauseValidation, CauseSellerData, CauseContactPhone}},
		{"new provider key", complete(), with(func(s *Settings) { s.StripeAPIKey = "rk_new" }), []string{CauseValidation, CauseSellerData, CauseContactPhone, CauseProviderRights}},
		{"provider key removed", with(func(s *Settings) { s.StripeAPIKey = "rk_old" }), complete(), []string{CauseValidation, CauseSellerData, CauseContactPhone}},
		{"another setting, causes still there", Settings{}, Settings{PaymentTermDays: 30}, []string{CauseValidation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := FixedCauses(tt.before, tt.after); !slices.Equal(got, tt.want) {
				t.Errorf("FixedCauses = %q, want %q", got, tt.want)
			}
		})
	}
}
