// Package leitweg checks Leitweg-IDs, the routing IDs of German public-sector
// buyers (KoSIT "Formatspezifikation Leitweg-ID"). The write side validates
// orders with it and the invoice engine decides XRechnung with it. It imports
// only the standard library.
package leitweg

import "regexp"

// pattern is the format: a coarse address of 2 to 12 digits, an optional fine
// address of 1 to 30 digits or upper-case letters, and two check digits, all
// separated by hyphens.
var pattern = regexp.MustCompile(`^[0-9]{2,12}(-[0-9A-Z]{1,30})?-[0-9]{2}$`)

// Check reports why id is not a valid Leitweg-ID: "" when it is valid,
// otherwise a short reason (format or check digits).
func Check(id string) string {
	if !pattern.MatchString(id) {
		return "must match ^[0-9]{2,12}(-[0-9A-Z]{1,30})?-[0-9]{2}$ (coarse address, optional fine address, two check digits)"
	}
	if !checkDigitsOK(id) {
		return "the check digits are wrong (ISO/IEC 7064 MOD 97-10)"
	}
	return ""
}

// Valid reports whether id has the Leitweg-ID format and correct check digits.
func Valid(id string) bool { return Check(id) == "" }

// checkDigitsOK applies ISO/IEC 7064 MOD 97-10 to id without its hyphens,
// letters counting A=10 ... Z=35: the whole number modulo 97 must be 1.
func checkDigitsOK(id string) bool {
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

// CheckDigits returns the two check digits for the Leitweg-ID body (the
// coarse and optional fine address without the trailing check digits and
// their hyphen), for example "04011000-1234512345" gives "06".
func CheckDigits(body string) string {
	rem := 0
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	rem = (rem * 100) % 97
	d := (98 - rem) % 97
	return string([]byte{byte('0' + d/10), byte('0' + d%10)})
}
