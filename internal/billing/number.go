package billing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Invoice number patterns
//
// A pattern is literal text with placeholders:
//
//	{YYYY}   the four-digit calendar year of the issue date
//	{YY}     its last two digits
//	{SEQ}    the sequence number within the year, unpadded
//	{SEQ:n}  the sequence number zero-padded to n digits (1 <= n <= 12)
//
// A pattern must contain exactly one sequence placeholder and one year
// placeholder, because the sequence restarts every calendar year: the year
// keeps numbers unique. Literal text may use letters, digits and - _ / .
// The live default is DefaultNumberPattern; test mode always uses
// TestNumberPattern, a range of its own. The counter itself (gapless per
// range, row-locked) lives in the database; RangeKey names its row.

// Default patterns.
const (
	DefaultNumberPattern = "RE-{YYYY}-{SEQ:6}"
	TestNumberPattern    = "TEST-{YYYY}-{SEQ:6}"
)

// NumberPattern is a parsed invoice number pattern.
type NumberPattern struct {
	raw   string
	parts []patternPart
}

type patternPart struct {
	lit   string
	token string // "YYYY", "YY", "SEQ"
	width int    // SEQ padding
}

// ParseNumberPattern parses and checks a pattern; an empty pattern is
// DefaultNumberPattern.
func ParseNumberPattern(p string) (NumberPattern, error) {
	if p == "" {
		p = DefaultNumberPattern
	}
	np := NumberPattern{raw: p}
	seq, year := 0, 0
	for rest := p; rest != ""; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			i = len(rest)
		}
		if i > 0 {
			lit := rest[:i]
			for _, r := range lit {
				if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-_/.", r)) {
					return NumberPattern{}, fmt.Errorf("billing: number pattern %q: character %q not allowed", p, r)
				}
			}
			np.parts = append(np.parts, patternPart{lit: lit})
			rest = rest[i:]
			continue
		}
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return NumberPattern{}, fmt.Errorf("billing: number pattern %q: unclosed {", p)
		}
		tok := rest[1:j]
		rest = rest[j+1:]
		switch {
		case tok == "YYYY" || tok == "YY":
			year++
			np.parts = append(np.parts, patternPart{token: tok})
		case tok == "SEQ":
			seq++
			np.parts = append(np.parts, patternPart{token: "SEQ"})
		case strings.HasPrefix(tok, "SEQ:"):
			w, err := strconv.Atoi(tok[4:])
			if err != nil || w < 1 || w > 12 {
				return NumberPattern{}, fmt.Errorf("billing: number pattern %q: bad width in {%s}", p, tok)
			}
			seq++
			np.parts = append(np.parts, patternPart{token: "SEQ", width: w})
		default:
			return NumberPattern{}, fmt.Errorf("billing: number pattern %q: unknown placeholder {%s}", p, tok)
		}
	}
	if seq != 1 || year != 1 {
		return NumberPattern{}, fmt.Errorf("billing: number pattern %q needs exactly one {SEQ} and one {YYYY} or {YY}", p)
	}
	return np, nil
}

// String returns the pattern text.
func (p NumberPattern) String() string { return p.raw }

// Format returns the invoice number for year and sequence (seq >= 1).
func (p NumberPattern) Format(year, seq int) (string, error) {
	if seq < 1 {
		return "", errors.New("billing: invoice sequence must start at 1")
	}
	if year < 1000 || year > 9999 {
		return "", fmt.Errorf("billing: year %d out of range", year)
	}
	return p.expand(year, func(width int) string { return fmt.Sprintf("%0*d", width, seq) }), nil
}

// RangeKey names the number range (the counter row) of year: the pattern
// with the year filled in and the sequence left as "{SEQ}", prefixed by the
// pattern's own text so that two patterns never share a counter. For the
// default patterns it is "RE-2026-{SEQ}" and "TEST-2026-{SEQ}"; ShortRangeKey
// gives the human form "RE-2026" / "TEST-2026".
func (p NumberPattern) RangeKey(year int) string {
	return p.expand(year, func(int) string { return "{SEQ}" })
}

// expand writes the pattern for year, with seq's text for the sequence.
func (p NumberPattern) expand(year int, seq func(width int) string) string {
	var b strings.Builder
	for _, pp := range p.parts {
		switch pp.token {
		case "":
			b.WriteString(pp.lit)
		case "YYYY":
			fmt.Fprintf(&b, "%04d", year)
		case "YY":
			fmt.Fprintf(&b, "%02d", year%100)
		case "SEQ":
			b.WriteString(seq(pp.width))
		}
	}
	return b.String()
}

// ShortRangeKey is RangeKey without the sequence placeholder and the
// separators around it: "RE-2026", "TEST-2026".
func (p NumberPattern) ShortRangeKey(year int) string {
	k := p.RangeKey(year)
	before, after, _ := strings.Cut(k, "{SEQ}")
	return strings.Trim(before, "-_/.") + strings.TrimRight(after, "-_/.")
}

// Parse reads year and sequence back from a number of this pattern. A
// two-digit year is returned as 2000 + YY.
func (p NumberPattern) Parse(number string) (year, seq int, err error) {
	rest := number
	bad := fmt.Errorf("billing: %q does not match pattern %q", number, p.raw)
	for i, pp := range p.parts {
		switch pp.token {
		case "":
			if !strings.HasPrefix(rest, pp.lit) {
				return 0, 0, bad
			}
			rest = rest[len(pp.lit):]
		case "YYYY", "YY":
			n := 4
			if pp.token == "YY" {
				n = 2
			}
			if len(rest) < n {
				return 0, 0, bad
			}
			y, err := strconv.Atoi(rest[:n])
			if err != nil || y < 0 {
				return 0, 0, bad
			}
			if n == 2 {
				y += 2000
			}
			year, rest = y, rest[n:]
		case "SEQ":
			end := len(rest)
			if i+1 < len(p.parts) {
				next := p.parts[i+1]
				if next.token != "" {
					return 0, 0, bad // ambiguous: placeholder follows {SEQ} directly
				}
				end = strings.Index(rest, next.lit)
				if end < 0 {
					return 0, 0, bad
				}
			}
			digits := rest[:end]
			if digits == "" || (pp.width > 0 && len(digits) < pp.width) {
				return 0, 0, bad
			}
			s, err := strconv.Atoi(digits)
			if err != nil || s < 1 {
				return 0, 0, bad
			}
			seq, rest = s, rest[end:]
		}
	}
	if rest != "" {
		return 0, 0, bad
	}
	return year, seq, nil
}

// PatternFor returns the number pattern of a seller: TestNumberPattern in
// test mode, else the seller's NumberPattern (DefaultNumberPattern when
// empty).
func PatternFor(s Seller) (NumberPattern, error) {
	if s.TestMode {
		return ParseNumberPattern(TestNumberPattern)
	}
	return ParseNumberPattern(s.NumberPattern)
}
