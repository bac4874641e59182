package apikey_test

import (
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/apikey"
)

func TestWellFormed(t *testing.T) {
	secret := strings.Repeat("aZ09", apikey.SecretLen/4)
	for _, c := range []struct {
		key  string
		want bool
	}{
		{apikey.Prefix + secret, true},
		{apikey.LegacyTest + secret, true},
		{apikey.LegacyLive + secret, true},
		{"xyz_" + secret, false},
		{apikey.Prefix + secret[1:], false},
		{apikey.Prefix + secret + "a", false},
		{apikey.Prefix + secret[:39] + "-", false},
		{apikey.Prefix + secret[:39] + "_", false},
		{apikey.Prefix + secret[:38] + "ä", false}, // two bytes, neither base62
		{apikey.Prefix + secret[:39] + "\x00", false},
		{"", false},
	} {
		if got := apikey.WellFormed(c.key); got != c.want {
			t.Errorf("wellFormed(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}
