package leitweg

import (
	"math/big"
	"regexp"
	"strings"
	"testing"
)

var bodyPattern = regexp.MustCompile(`^[0-9]{2,12}(-[0-9A-Z]{1,30})?$`)

// mod97 is id's ISO/IEC 7064 MOD 97-10 remainder (hyphens dropped, A=10 ...
// Z=35), computed with big integers: an oracle independent of the package.
func mod97(id string) int64 {
	var digits strings.Builder
	for _, c := range id {
		switch {
		case c >= '0' && c <= '9':
			digits.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			digits.WriteString(big.NewInt(int64(c-'A') + 10).String())
		}
	}
	n, ok := new(big.Int).SetString("0"+digits.String(), 10)
	if !ok {
		panic("mod97: " + id)
	}
	return new(big.Int).Mod(n, big.NewInt(97)).Int64()
}

// FuzzCheck: Check never panics and agrees with the format and the MOD
// 97-10 oracle; CheckDigits completes every body to a valid ID; changing one
// digit of a valid ID makes it invalid.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"04011000-1234512345-06", "991-33333TEST-33", "04011000-900X999-08", "992-90009-96",
		"04011000-1234512345-07", "991-33333test-33", "991--33", "", " 992-90009-96", "992-90009-96\n",
		"123456789012-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123-45", "99-ÄÖ-12", "00-00",
	} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, id string, pos int) {
		why := Check(id)
		if Valid(id) != (why == "") {
			t.Fatalf("Valid and Check disagree on %q", id)
		}
		format := pattern.MatchString(id)
		if want := format && mod97(id) == 1; (why == "") != want {
			t.Fatalf("Check(%q) = %q, want valid %v", id, why, want)
		}
		if why == "" && len(id) > 46 {
			t.Fatalf("%q valid with %d characters", id, len(id))
		}
		if why == "" {
			// One digit changed: MOD 97-10 detects every such error.
			i := uint(pos) % uint(len(id))
			if c := id[i]; c >= '0' && c <= '9' {
				b := []byte(id)
				b[i] = '0' + (c-'0'+1)%10
				if Valid(string(b)) {
					t.Fatalf("%q valid, and %q too", id, b)
				}
			}
		}
		// id as a body: its check digits make it valid.
		if bodyPattern.MatchString(id) {
			cd := CheckDigits(id)
			if full := id + "-" + cd; !Valid(full) || len(cd) != 2 {
				t.Fatalf("CheckDigits(%q) = %q: %s", id, cd, Check(full))
			}
		}
	})
}
