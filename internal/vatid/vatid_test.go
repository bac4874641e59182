package vatid_test

import (
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/vatid"
)

// TestParsePerState has, for every member state and Northern Ireland, well
// formed numbers (one per structure the state uses) and malformed ones (too
// short, too long, a letter where the state has none, the other states'
// structures).
func TestParsePerState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix  string
		valid   []string
		invalid []string
	}{
		{"AT", []string{"ATU12345678", "atu 123 456 78"}, []string{"AT12345678", "ATU1234567", "ATU123456789", "ATX12345678"}},
		{"BE", []string{"BE0123456789", "BE1234567890", "BE 0123.456.789"}, []string{"BE123456789", "BE2123456789", "BE01234567890", "BE012345678A"}},
		{"BG", []string{"BG123456789", "BG1234567890"}, []string{"BG12345678", "BG12345678901", "BG12345678A"}},
		{"CY", []string{"CY12345678L", "CY-12345678-X"}, []string{"CY123456789", "CY1234567L", "CY12345678LL"}},
		{"CZ", []string{"CZ12345678", "CZ123456789", "CZ1234567890"}, []string{"CZ1234567", "CZ12345678901", "CZ1234567A"}},
		{"DE", []string{"DE123456789", "de 123 456 789", "DE-123.456.789"}, []string{"DE12345678", "DE1234567890", "DE12345678X", "123456789"}},
		{"DK", []string{"DK12345678", "DK 12 34 56 78"}, []string{"DK1234567", "DK123456789"}},
		{"EE", []string{"EE123456789"}, []string{"EE12345678", "EE1234567890"}},
		{"EL", []string{"EL123456789", "el 123456789"}, []string{"EL12345678", "EL1234567890", "GR123456789"}},
		{"ES", []string{"ESX1234567X", "ESA12345678", "ES12345678Z", "ESB1234567C"}, []string{"ES123456789", "ESX123456X", "ESX12345678X"}},
		{"FI", []string{"FI12345678"}, []string{"FI1234567", "FI123456789"}},
		{"FR", []string{"FR12345678901", "FRAB123456789", "FR1A123456789", "FR 12 345 678 901"}, []string{"FR1234567890", "FRIO123456789", "FR12A45678901", "FR123456789012"}},
		{"HR", []string{"HR12345678901"}, []string{"HR1234567890", "HR123456789012"}},
		{"HU", []string{"HU12345678"}, []string{"HU1234567", "HU123456789"}},
		{"IE", []string{"IE1234567T", "IE1234567WA", "IE1234567TW", "IE1A23456T", "IE1+23456T", "IE1*23456T"}, []string{"IE123456T", "IE1234567", "IE1234567TZ", "IE1234567X", "IE12345678"}},
		{"IT", []string{"IT12345678901"}, []string{"IT1234567890", "IT123456789012"}},
		{"LT", []string{"LT123456789", "LT123456789012"}, []string{"LT12345678", "LT1234567890", "LT1234567890123"}},
		{"LU", []string{"LU12345678"}, []string{"LU1234567", "LU123456789"}},
		{"LV", []string{"LV12345678901"}, []string{"LV1234567890", "LV123456789012"}},
		{"MT", []string{"MT12345678"}, []string{"MT1234567", "MT123456789"}},
		{"NL", []string{"NL123456789B01", "nl 1234.56.789.b.01"}, []string{"NL123456789", "NL123456789A01", "NL12345678B01", "NL123456789B1"}},
		{"PL", []string{"PL1234567890", "PL 123-456-78-90"}, []string{"PL123456789", "PL12345678901"}},
		{"PT", []string{"PT123456789"}, []string{"PT12345678", "PT1234567890"}},
		{"RO", []string{"RO12", "RO1234567", "RO1234567890"}, []string{"RO1", "RO0123456", "RO12345678901"}},
		{"SE", []string{"SE123456789001"}, []string{"SE12345678901", "SE1234567890012"}},
		{"SI", []string{"SI12345678"}, []string{"SI02345678", "SI1234567", "SI123456789"}},
		{"SK", []string{"SK1234567890"}, []string{"SK123456789", "SK12345678901"}},
		{"XI", []string{"XI123456789", "XI123456789012", "XIGD123", "XIHA567", "XI 123 4567 89"}, []string{"XI12345678", "XI1234567890", "XIGD567", "XIHA123", "GB123456789"}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.prefix] = true
		t.Run(tc.prefix, func(t *testing.T) {
			t.Parallel()
			for _, s := range tc.valid {
				id, err := vatid.Parse(s)
				if err != nil {
					t.Errorf("Parse(%q): %v, want valid", s, err)
					continue
				}
				if id.Prefix() != tc.prefix || string(id) != vatid.Normalize(s) || id.Prefix()+id.Number() != string(id) {
					t.Errorf("Parse(%q) = %q (prefix %q, number %q)", s, id, id.Prefix(), id.Number())
				}
			}
			for _, s := range tc.invalid {
				if id, err := vatid.Parse(s); err == nil {
					t.Errorf("Parse(%q) = %q, want an error", s, id)
				}
			}
		})
	}
	// 27 member states and Northern Ireland.
	if len(seen) != 28 {
		t.Errorf("%d prefixes tested, want 28", len(seen))
	}
}

func TestParseErrorsSayWhy(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "is empty"},
		{" .-", "is empty"},
		{"D", "too short"},
		{"GR123456789", "prefix EL"},
		{"CHE123456789", "prefix of an EU member state"},
		{"123456789", "prefix of an EU member state"},
		{"FR1234", "not a VAT id of France: 2 digits or letters (not I or O) and 9 digits after FR, for example FR12345678901"},
		{"FR12,345678901\r\n", "not a VAT id of France"},
	}
	for _, tc := range tests {
		_, err := vatid.Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"de 123.456-789", "DE123456789"},
		{"DE\u00a0123\u202f456 789", "DE123456789"},
		{"FR12,345", "FR12,345"}, // only spaces, dots and hyphens go
		{"de\n123", "DE\n123"},
	}
	for _, tc := range tests {
		if got := vatid.Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCountries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		country, prefix string
		member          bool
	}{
		{"DE", "DE", true}, {"FR", "FR", true}, {"GR", "EL", true}, {"EL", "EL", true},
		{"AT", "AT", true}, {"GB", "XI", false}, {"XI", "XI", false}, {"CH", "", false}, {"US", "", false}, {"", "", false},
	}
	for _, tc := range tests {
		if got := vatid.PrefixOf(tc.country); got != tc.prefix {
			t.Errorf("PrefixOf(%q) = %q, want %q", tc.country, got, tc.prefix)
		}
		if got := vatid.IsMemberState(tc.country); got != tc.member {
			t.Errorf("IsMemberState(%q) = %v, want %v", tc.country, got, tc.member)
		}
	}
	for _, tc := range []struct {
		id, country, state string
		matches, ni        bool
	}{
		{"DE123456789", "DE", "DE", true, false},
		{"DE123456789", "FR", "DE", false, false},
		{"EL123456789", "GR", "GR", true, false},
		{"XI123456789", "GB", "", true, true},
		{"XI123456789", "IE", "", false, true},
		{"ATU12345678", "CH", "AT", false, false},
	} {
		id, err := vatid.Parse(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if id.MatchesCountry(tc.country) != tc.matches || id.MemberState() != tc.state || id.NorthernIreland() != tc.ni {
			t.Errorf("%s in %s: matches %v, member state %q, Northern Ireland %v; want %v %q %v", tc.id, tc.country,
				id.MatchesCountry(tc.country), id.MemberState(), id.NorthernIreland(), tc.matches, tc.state, tc.ni)
		}
	}
}
