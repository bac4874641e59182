package console

import "testing"

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
