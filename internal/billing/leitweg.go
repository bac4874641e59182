package billing

import (
	"regexp"
	"strings"
)

var leitwegRE = regexp.MustCompile(`^[0-9]{2,12}(-[0-9A-Z]{0,30})?-[0-9]{2}$`)

// ValidLeitwegID reports whether id is a formally valid Leitweg-ID (KoSIT
// Formatspezifikation 2.0.2): a coarse address of 2 to 12 digits, an optional
// fine address of up to 30 letters or digits, and two check digits (ISO 7064
// MOD 97-10), separated by hyphens, 5 to 46 characters. Letters are compared
// upper-cased. The XRechnung schematron checks only that BT-10 is present,
// not the check digits; this function does.
func ValidLeitwegID(id string) bool {
	id = strings.ToUpper(strings.TrimSpace(id))
	if len(id) < 5 || len(id) > 46 || !leitwegRE.MatchString(id) {
		return false
	}
	// MOD 97-10 over the characters without hyphens, A=10 ... Z=35.
	rem := 0
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	return rem == 1
}
