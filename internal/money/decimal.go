package money

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxScale is the largest number of decimal places a Decimal keeps.
const MaxScale = 9

// Decimal is an exact decimal number coef x 10^-scale, used for quantities
// (1.5 pieces), percentage rates (19, 5.5) and unit prices in currency units
// that may carry more than two decimals. The zero value is 0.
type Decimal struct {
	coef  int64
	scale uint8
}

// NewDecimal returns coef x 10^-scale. scale must be in [0, MaxScale].
func NewDecimal(coef int64, scale int) Decimal {
	if scale < 0 || scale > MaxScale {
		panic(fmt.Sprintf("money: scale %d out of range", scale))
	}
	return Decimal{coef: coef, scale: uint8(scale)}.norm()
}

// Int returns the Decimal n.
func Int(n int64) Decimal { return Decimal{coef: n} }

// MustParse is ParseDecimal for constants in code and tests; it panics on a
// malformed literal.
func MustParse(s string) Decimal {
	d, err := ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseDecimal reads a plain decimal ("19", "-1.50", "0.333") or a JSON
// number with exponent ("1e2", "2.5E-1"). It fails on more than MaxScale
// significant decimal places and on values that do not fit into 64 bits.
func ParseDecimal(s string) (Decimal, error) {
	bad := func() (Decimal, error) { return Decimal{}, fmt.Errorf("money: malformed decimal %q", s) }
	i, neg := 0, false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var coef uint64
	digits, scale, exp := 0, 0, 0
	seenPoint := false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if coef > (1<<63-1)/10 {
				return Decimal{}, fmt.Errorf("money: decimal %q: %w", s, ErrOverflow)
			}
			coef = coef*10 + uint64(c-'0')
			digits++
			if seenPoint {
				scale++
			}
		case c == '.' && !seenPoint:
			seenPoint = true
		case c == 'e' || c == 'E':
			if digits == 0 {
				return bad()
			}
			e, err := strconv.Atoi(s[i+1:])
			if err != nil || e > 30 || e < -30 {
				return bad()
			}
			exp = e
			i = len(s)
		default:
			return bad()
		}
	}
	if digits == 0 || coef > 1<<63-1 {
		return bad()
	}
	v := int64(coef)
	if neg {
		v = -v
	}
	scale -= exp
	for scale < 0 {
		if v > (1<<63-1)/10 || v < -(1<<63-1)/10 {
			return Decimal{}, fmt.Errorf("money: decimal %q: %w", s, ErrOverflow)
		}
		v *= 10
		scale++
	}
	for scale > 0 && v%10 == 0 {
		v /= 10
		scale--
	}
	if scale > MaxScale {
		return Decimal{}, fmt.Errorf("money: decimal %q has more than %d decimal places", s, MaxScale)
	}
	return Decimal{coef: v, scale: uint8(scale)}, nil
}

// norm strips trailing zeros so that equal values have equal representations.
func (d Decimal) norm() Decimal {
	for d.scale > 0 && d.coef%10 == 0 {
		d.coef /= 10
		d.scale--
	}
	return d
}

// Scale returns the number of decimal places of d (without trailing zeros).
func (d Decimal) Scale() int { return int(d.norm().scale) }

// Sign returns -1, 0 or +1.
func (d Decimal) Sign() int {
	switch {
	case d.coef < 0:
		return -1
	case d.coef > 0:
		return 1
	}
	return 0
}

// IsZero reports whether d is 0.
func (d Decimal) IsZero() bool { return d.coef == 0 }

// Neg returns -d.
func (d Decimal) Neg() Decimal { return Decimal{coef: -d.coef, scale: d.scale} }

// Cmp compares d and e: -1 if d < e, 0 if equal, +1 if d > e.
func (d Decimal) Cmp(e Decimal) int {
	a, b, ok := align(d, e)
	if !ok { // cannot overflow-free align: compare via 128-bit cross products
		return crossCmp(d, e)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Equal reports whether d and e are the same number.
func (d Decimal) Equal(e Decimal) bool { return d.Cmp(e) == 0 }

func align(d, e Decimal) (int64, int64, bool) {
	a, b := d.coef, e.coef
	for s := d.scale; s < e.scale; s++ {
		if a > (1<<63-1)/10 || a < -(1<<63-1)/10 {
			return 0, 0, false
		}
		a *= 10
	}
	for s := e.scale; s < d.scale; s++ {
		if b > (1<<63-1)/10 || b < -(1<<63-1)/10 {
			return 0, 0, false
		}
		b *= 10
	}
	return a, b, true
}

func crossCmp(d, e Decimal) int {
	// Only reached for huge coefficients; compare signs first, then magnitudes
	// at a common scale by repeated division (lossy only below 10^-18).
	if d.Sign() != e.Sign() {
		if d.Sign() < e.Sign() {
			return -1
		}
		return 1
	}
	a, _ := MulDivRound(d.coef, pow10[MaxScale-int(d.scale)], 1)
	b, _ := MulDivRound(e.coef, pow10[MaxScale-int(e.scale)], 1)
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Add returns d + e. It returns ErrOverflow when the sum does not fit.
func (d Decimal) Add(e Decimal) (Decimal, error) {
	a, b, ok := align(d, e)
	if !ok {
		return Decimal{}, ErrOverflow
	}
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return Decimal{}, ErrOverflow
	}
	return Decimal{coef: s, scale: max(d.scale, e.scale)}.norm(), nil
}

// IsInt reports whether d has no fractional part.
func (d Decimal) IsInt() bool { return d.norm().scale == 0 }

// Coef returns the coefficient and scale of d (d = coef x 10^-scale), with
// trailing zeros removed.
func (d Decimal) Coef() (int64, int) { n := d.norm(); return n.coef, int(n.scale) }

// String returns the shortest plain notation: "19", "5.5", "-0.25".
func (d Decimal) String() string {
	var buf [32]byte
	return string(d.AppendText(buf[:0]))
}

// AppendText appends the String form of d to b.
func (d Decimal) AppendText(b []byte) []byte {
	d = d.norm()
	u := uint64(d.coef)
	if d.coef < 0 {
		b = append(b, '-')
		u = uint64(-d.coef)
	}
	if d.scale == 0 {
		return strconv.AppendUint(b, u, 10)
	}
	p := uint64(pow10[d.scale])
	b = strconv.AppendUint(b, u/p, 10)
	b = append(b, '.')
	frac := u % p
	for s := int(d.scale) - 1; s >= 0; s-- {
		b = append(b, byte('0'+frac/uint64(pow10[s])%10))
	}
	return b
}

// MarshalJSON writes d as a JSON number.
func (d Decimal) MarshalJSON() ([]byte, error) { return d.AppendText(nil), nil }

// UnmarshalJSON reads a JSON number (or a string holding one) exactly.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := ParseDecimal(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Decimal) MarshalText() ([]byte, error) { return d.AppendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Decimal) UnmarshalText(b []byte) error {
	v, err := ParseDecimal(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// CentsDecimal returns c as a Decimal in currency units (1234 -> 12.34).
func CentsDecimal(c Cents) Decimal { return Decimal{coef: int64(c), scale: 2}.norm() }

// UnitPrice returns total / q in currency units: the exact quotient when it
// has at most maxScale decimals (and at least 2), else the quotient rounded
// half up to the fewest decimals in [2, maxScale] for which q x price
// reproduces total within a tenth of a cent. It derives a line's unit price
// from a given line amount. q must be positive.
func UnitPrice(total Cents, q Decimal, maxScale int) (Decimal, error) {
	if q.Sign() <= 0 {
		return Decimal{}, errors.New("money: unit price of a non-positive quantity")
	}
	qc, qs := q.Coef()
	maxScale = min(maxScale, MaxScale, 18-qs+2)
	var fallback Decimal
	found := false
	for k := 2; k <= maxScale; k++ {
		// price x 10^k = total x 10^(qs+k-2) / qc
		p, err := MulDivRound(int64(total), pow10[qs+k-2], qc)
		if err != nil {
			return Decimal{}, err
		}
		price := Decimal{coef: p, scale: uint8(k)}
		// q x price at scale qs+k versus total at the same scale
		back, err := MulDivRound(qc, p, 1)
		if err != nil {
			return Decimal{}, err
		}
		want, err := MulDivRound(int64(total), pow10[qs+k-2], 1)
		if err != nil {
			return Decimal{}, err
		}
		diff := back - want
		if diff == 0 {
			return price.norm(), nil
		}
		if !found && 10*abs(diff) < pow10[qs+k-2] {
			fallback, found = price, true
		}
		if k == maxScale && !found {
			fallback = price
		}
	}
	return fallback.norm(), nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
