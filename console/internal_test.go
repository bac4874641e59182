package console

import (
	"testing"

	"github.com/o2i-service/o2i/query"
)

func TestFromAcceptLanguage(t *testing.T) {
	for _, tc := range []struct{ h, want string }{
		{"", "en"},
		{"de", "de"},
		{"de-DE,de;q=0.9,en;q=0.8", "de"},
		{"en-US,en;q=0.9,de;q=0.8", "en"},
		{"fr-FR,fr;q=0.9,de;q=0.7,en;q=0.5", "de"},
		{"fr", "en"},
		{"en;q=0.2, de;q=0.9", "de"},
		{"de;q=0", "en"},
	} {
		if got := fromAcceptLanguage(tc.h); got != tc.want {
			t.Errorf("fromAcceptLanguage(%q) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/console/p/x/keys", "/console/p/x/keys"},
		{"", "/console/"},
		{"https://evil.example/", "/console/"},
		{"//evil.example/console/", "/console/"},
		{"/v1/orders", "/console/"},
		{"/console/\\evil", "/console/"},
	} {
		if got := safeNext(tc.in); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every text has both languages.
func TestTextsComplete(t *testing.T) {
	for k := range texts["en"] {
		if _, ok := texts["de"][k]; !ok {
			t.Errorf("%q has no German text", k)
		}
	}
	for k := range texts["de"] {
		if _, ok := texts["en"][k]; !ok {
			t.Errorf("%q has no English text", k)
		}
	}
}

// The overview says "+" where a reason's count reached the cap it is
// counted to, and only there.
func TestStatsWaitingCap(t *testing.T) {
	for _, tc := range []struct {
		n    int
		more bool
	}{{0, false}, {3, false}, {query.WaitingCap - 1, false}, {query.WaitingCap, true}} {
		s := newStats(query.Overview{Waiting: map[string]int{"payment": tc.n}})
		if len(s.Reasons) != 1 || s.Reasons[0].Count != tc.n || s.Reasons[0].More != tc.more {
			t.Errorf("%d waiting: %+v, want more %v", tc.n, s.Reasons, tc.more)
		}
	}
}

func TestFixField(t *testing.T) {
	for _, c := range []struct {
		typ, details, want string
	}{
		{"seller_data_incomplete", `{"missing":["sellerName","sellerVatId or sellerTaxNumber"]}`, "sellerName"},
		{"seller_data_incomplete", `{"missing":["sellerVatId or sellerTaxNumber"]}`, "sellerVatId"},
		{"seller_data_incomplete", `{"missing":["sellerCity"]}`, "sellerCity"},
		{"seller_data_incomplete", `{}`, "sellerName"},
		{"seller_data_incomplete", `{"missing":["a {b}"]}`, "sellerName"},
		{"xrechnung_contact_phone_missing", `{}`, "contactPhone"},
		{"provider_rights_missing", `{"missing":["stripeApiKey"]}`, "stripeApiKey"},
		{"vat_review", `{"missing":["sellerName"]}`, ""},
	} {
		if got := fixField(query.Task{Type: c.typ, Details: []byte(c.details)}); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.typ, c.details, got, c.want)
		}
	}
}
