// Package money holds the exact arithmetic of the service: amounts in integer
// cents, exact decimal quantities and rates, and the one rounding policy
// (half up, that is half away from zero: commercial rounding).
//
// Money never passes through float64 here or anywhere else. Every product or
// quotient is computed exactly in 128 bits and rounded once.
//
// Imports: standard library only.
package money

import (
	"errors"
	"math/bits"
	"strconv"
)

// ErrOverflow is returned when a result does not fit into 64 bits.
var ErrOverflow = errors.New("money: overflow")

// Cents is an amount of money in the smallest unit of the currency (euro
// cents for EUR). All amounts of an invoice are Cents.
type Cents int64

// String formats c in currency units with exactly two decimals and a point,
// as EN 16931 XML expects: 1234 -> "12.34", -5 -> "-0.05".
func (c Cents) String() string {
	var buf [24]byte
	return string(c.AppendText(buf[:0]))
}

// AppendText appends the String form of c to b.
func (c Cents) AppendText(b []byte) []byte {
	u := uint64(c)
	if c < 0 {
		b = append(b, '-')
		u = uint64(-c)
	}
	b = strconv.AppendUint(b, u/100, 10)
	r := u % 100
	return append(b, '.', byte('0'+r/10), byte('0'+r%10))
}

// Abs returns the absolute value of c.
func (c Cents) Abs() Cents {
	if c < 0 {
		return -c
	}
	return c
}

// Sum adds amounts.
func Sum(cs ...Cents) Cents {
	var s Cents
	for _, c := range cs {
		s += c
	}
	return s
}

// pow10 holds 10^0 .. 10^18.
var pow10 = [...]int64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
}

// Pow10 returns 10^n for 0 <= n <= 18 (it panics outside: no int64 holds more).
func Pow10(n int) int64 { return pow10[n] }

// Abs returns |v|.
func Abs(v int64) int64 { return abs(v) }

// MulDivRound returns a*b/d rounded half away from zero, computed exactly in
// 128 bits. It is the single rounding policy of the service. d must not be
// zero. It returns ErrOverflow when the result does not fit into int64.
func MulDivRound(a, b, d int64) (int64, error) {
	if d == 0 {
		return 0, errors.New("money: division by zero")
	}
	neg := false
	ua, ub, ud := abs64(a, &neg), abs64(b, &neg), abs64(d, &neg)
	hi, lo := bits.Mul64(ua, ub)
	if hi >= ud {
		return 0, ErrOverflow
	}
	q, r := bits.Div64(hi, lo, ud)
	if r >= ud-r { // 2r >= d: half or more rounds away from zero
		q++
	}
	if q > 1<<63-1 {
		return 0, ErrOverflow
	}
	if neg {
		return -int64(q), nil
	}
	return int64(q), nil
}

func abs64(v int64, neg *bool) uint64 {
	if v < 0 {
		*neg = !*neg
		return uint64(-v)
	}
	return uint64(v)
}

// Percent returns base x rate / 100 rounded half up to whole cents: the VAT
// amount of a taxable amount (EN 16931 BR-CO-17). rate is a percentage (19
// for nineteen percent).
func Percent(base Cents, rate Decimal) (Cents, error) {
	v, err := MulDivRound(int64(base), rate.coef, 100*pow10[rate.scale])
	return Cents(v), err
}

// NetOfGross returns the net amount contained in gross at rate percent,
// gross x 100 / (100 + rate), rounded half up to whole cents.
func NetOfGross(gross Cents, rate Decimal) (Cents, error) {
	p := 100 * pow10[rate.scale]
	v, err := MulDivRound(int64(gross), p, p+rate.coef)
	return Cents(v), err
}

// Mul returns q x c rounded half up to whole cents, for example quantity x
// unit price.
func Mul(q Decimal, c Cents) (Cents, error) {
	v, err := MulDivRound(q.coef, int64(c), pow10[q.scale])
	return Cents(v), err
}

// MulRatio returns c x num / den rounded half up to whole cents.
func MulRatio(c Cents, num, den int64) (Cents, error) {
	v, err := MulDivRound(int64(c), num, den)
	return Cents(v), err
}

// Allocate splits total into parts proportional to weights by the largest
// remainder method: every part is floor(total x w / sum(w)) and the cents
// left over go, one each, to the parts with the largest remainders (ties to
// the earlier part). The parts sum exactly to total. total and all weights
// must not be negative; a zero weight sum gives all of total to the first
// part.
func Allocate(total Cents, weights []Cents) ([]Cents, error) {
	if len(weights) == 0 {
		return nil, errors.New("money: allocate to no parts")
	}
	if total < 0 {
		return nil, errors.New("money: allocate a negative total")
	}
	var sum uint64
	for _, w := range weights {
		if w < 0 {
			return nil, errors.New("money: negative allocation weight")
		}
		var carry uint64
		sum, carry = bits.Add64(sum, uint64(w), 0)
		if carry != 0 {
			return nil, ErrOverflow
		}
	}
	parts := make([]Cents, len(weights))
	if sum == 0 {
		parts[0] = total
		return parts, nil
	}
	rems := make([]uint64, len(weights))
	var given Cents
	for i, w := range weights {
		hi, lo := bits.Mul64(uint64(total), uint64(w))
		q, r := bits.Div64(hi, lo, sum) // q <= total, no overflow
		parts[i] = Cents(q)
		rems[i] = r
		given += Cents(q)
	}
	for left := total - given; left > 0; left-- {
		best := -1
		for i, r := range rems {
			if best < 0 || r > rems[best] {
				best = i
			}
		}
		parts[best]++
		rems[best] = 0
	}
	return parts, nil
}
