// Package vatid checks the syntax of VAT identification numbers of the EU
// member states (Art. 215 VAT Directive) and of Northern Ireland (XI, for
// goods under the Windsor Framework), as the Commission's VIES publishes
// each state's structure. It checks the form only: whether a number was
// issued, and to whom, only the issuing state's records (VIES, or the
// qualified confirmation of §18e UStG) can say.
//
// The write side validates orders with it and the invoice engine decides
// the VAT treatment with it. It imports only the standard library.
package vatid

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ID is a VAT identification number that Parse accepted, normalised: upper
// case, without spaces, dots and hyphens, prefix first ("DE123456789",
// "EL123456789", "XI123456789").
type ID string

// Prefix is the two-letter prefix: the member state's ISO 3166-1 code, EL
// for Greece, XI for Northern Ireland.
func (id ID) Prefix() string { return string(id[:2]) }

// Number is the national part, without the prefix (as the EC sales list
// states it).
func (id ID) Number() string { return string(id[2:]) }

// MemberState is the ISO 3166-1 code of the member state that issued id (GR
// for EL), or "" for a Northern Ireland number (XI): Northern Ireland is
// part of the United Kingdom and counts as EU territory for goods only.
func (id ID) MemberState() string {
	switch p := id.Prefix(); p {
	case "XI":
		return ""
	case "EL":
		return "GR"
	default:
		return p
	}
}

// NorthernIreland reports whether id is a Northern Ireland number (XI),
// which counts for supplies of goods only, never for services.
func (id ID) NorthernIreland() bool { return id.Prefix() == "XI" }

// MatchesCountry reports whether id is the kind of number a buyer in
// country (ISO 3166-1 alpha-2) has: its prefix is the country's (EL for GR;
// XI for GB, where only Northern Ireland has such numbers).
func (id ID) MatchesCountry(country string) bool {
	return id.Prefix() == PrefixOf(country)
}

// PrefixOf returns the VAT id prefix of a buyer in country (ISO 3166-1
// alpha-2): the code of an EU member state itself, EL for Greece (GR), XI
// for the United Kingdom (GB; Northern Ireland's numbers) and for XI
// itself; "" for every other country.
func PrefixOf(country string) string {
	switch c := strings.ToUpper(strings.TrimSpace(country)); c {
	case "GR", "EL":
		return "EL"
	case "GB", "XI":
		return "XI"
	default:
		if _, ok := rules[c]; ok {
			return c
		}
		return ""
	}
}

// IsMemberState reports whether country (ISO 3166-1 alpha-2; EL accepted for
// Greece) is an EU member state, by this package's table.
func IsMemberState(country string) bool {
	p := PrefixOf(country)
	return p != "" && p != "XI"
}

// Normalize returns s upper-cased, without spaces (also no-break spaces),
// dots and hyphens: the form Parse checks and ID holds. It does not check
// anything.
func Normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\u00a0', '\u202f', '.', '-':
			return -1
		}
		return r
	}, strings.ToUpper(s))
}

// rule is one prefix's syntax.
type rule struct {
	name    string         // the state, in English
	pattern *regexp.Regexp // the national part, after the prefix
	format  string         // the pattern in words, for error messages
	example string         // a well-formed number (not necessarily issued)
}

// rules are the VIES structures per prefix ("9" a digit, "L" a letter, "X"
// a letter or a digit), with what each state adds to them.
var rules = map[string]rule{
	"AT": {"Austria", re(`U[0-9]{8}`), "U and 8 digits", "ATU12345678"},
	"BE": {"Belgium", re(`[01][0-9]{9}`), "10 digits starting with 0 or 1", "BE0123456789"},
	"BG": {"Bulgaria", re(`[0-9]{9,10}`), "9 or 10 digits", "BG123456789"},
	"CY": {"Cyprus", re(`[0-9]{8}[A-Z]`), "8 digits and a letter", "CY12345678L"},
	"CZ": {"Czechia", re(`[0-9]{8,10}`), "8, 9 or 10 digits", "CZ12345678"},
	"DE": {"Germany", re(`[0-9]{9}`), "9 digits", "DE123456789"},
	"DK": {"Denmark", re(`[0-9]{8}`), "8 digits", "DK12345678"},
	"EE": {"Estonia", re(`[0-9]{9}`), "9 digits", "EE123456789"},
	"EL": {"Greece", re(`[0-9]{9}`), "9 digits (the prefix is EL, not GR)", "EL123456789"},
	// Spain: the first and the last character may be letters or digits, but
	// not both digits.
	"ES": {"Spain", re(`[A-Z][0-9]{7}[0-9A-Z]|[0-9]{8}[A-Z]`), "9 characters: a letter or digit, 7 digits, a letter or digit, not both ends digits", "ESX1234567X"},
	"FI": {"Finland", re(`[0-9]{8}`), "8 digits", "FI12345678"},
	// France: a two-character key (digits or letters other than I and O),
	// then the 9-digit SIREN.
	"FR": {"France", re(`[0-9A-HJ-NP-Z]{2}[0-9]{9}`), "2 digits or letters (not I or O) and 9 digits", "FR12345678901"},
	"HR": {"Croatia", re(`[0-9]{11}`), "11 digits", "HR12345678901"},
	"HU": {"Hungary", re(`[0-9]{8}`), "8 digits", "HU12345678"},
	// Ireland: 7 digits and a check letter, since 2013 with a second letter
	// (A to I, or W); older numbers a digit, a letter, + or *, 5 digits and a
	// check letter.
	"IE": {"Ireland", re(`[0-9]{7}[A-W][A-IW]?|[0-9][A-Z+*][0-9]{5}[A-W]`), "7 digits and 1 or 2 letters, or a digit, a letter (or + or *), 5 digits and a letter", "IE1234567WA"},
	"IT": {"Italy", re(`[0-9]{11}`), "11 digits", "IT12345678901"},
	"LT": {"Lithuania", re(`[0-9]{9}|[0-9]{12}`), "9 or 12 digits", "LT123456789"},
	"LU": {"Luxembourg", re(`[0-9]{8}`), "8 digits", "LU12345678"},
	"LV": {"Latvia", re(`[0-9]{11}`), "11 digits", "LV12345678901"},
	"MT": {"Malta", re(`[0-9]{8}`), "8 digits", "MT12345678"},
	"NL": {"the Netherlands", re(`[0-9]{9}B[0-9]{2}`), "9 digits, B and 2 digits", "NL123456789B01"},
	"PL": {"Poland", re(`[0-9]{10}`), "10 digits", "PL1234567890"},
	"PT": {"Portugal", re(`[0-9]{9}`), "9 digits", "PT123456789"},
	"RO": {"Romania", re(`[1-9][0-9]{1,9}`), "2 to 10 digits, the first not 0", "RO1234567"},
	"SE": {"Sweden", re(`[0-9]{12}`), "12 digits", "SE123456789001"},
	"SI": {"Slovenia", re(`[1-9][0-9]{7}`), "8 digits, the first not 0", "SI12345678"},
	"SK": {"Slovakia", re(`[0-9]{10}`), "10 digits", "SK1234567890"},
	// Northern Ireland: the United Kingdom's structures under the XI prefix
	// (9 digits, 12 for a branch, GD and 3 digits below 500 for government
	// departments, HA and 3 digits from 500 for health authorities).
	"XI": {"Northern Ireland", re(`[0-9]{9}|[0-9]{12}|GD[0-4][0-9]{2}|HA[5-9][0-9]{2}`), "9 or 12 digits, GD and 3 digits below 500, or HA and 3 digits from 500", "XI123456789"},
}

func re(national string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + national + `)$`) }

// errEmpty is Parse's error for an empty id, made once: most orders have
// none, and the invoice's computation asks for the buyer's.
var errEmpty = errors.New("is empty")

// Parse normalises s (see Normalize) and checks it against the syntax of
// its prefix's state. The error says why s is not a valid VAT
// identification number, in words a caller can act on.
func Parse(s string) (ID, error) {
	n := Normalize(s)
	if n == "" {
		return "", errEmpty
	}
	if len(n) < 3 {
		return "", fmt.Errorf("is too short: a VAT id is a two-letter prefix and the national number")
	}
	p := n[:2]
	r, ok := rules[p]
	if !ok {
		if p == "GR" {
			return "", fmt.Errorf("starts with GR: Greek VAT ids carry the prefix EL, for example EL123456789")
		}
		return "", fmt.Errorf("does not start with the prefix of an EU member state (EL for Greece) or XI (Northern Ireland), for example DE123456789")
	}
	if !r.pattern.MatchString(n[2:]) {
		return "", fmt.Errorf("is not a VAT id of %s: %s after %s, for example %s", r.name, r.format, p, r.example)
	}
	return ID(n), nil
}
