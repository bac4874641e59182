package money

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCentsString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Cents
		want string
	}{
		{"zero", 0, "0.00"},
		{"one cent", 1, "0.01"},
		{"ten cents", 10, "0.10"},
		{"euros", 1234, "12.34"},
		{"negative cent", -5, "-0.05"},
		{"negative", -123456, "-1234.56"},
		{"min", -1 << 63, "-92233720368547758.08"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.String(); got != tc.want {
				t.Errorf("Cents(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
			}
		})
	}
}

func TestMulDivRound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		a, b, d int64
		want    int64
		wantErr error
	}{
		{"exact", 10, 10, 4, 25, nil},
		{"half rounds up", 1, 1, 2, 1, nil},
		{"below half rounds down", 149, 1, 100, 1, nil},
		{"half away from zero negative", -1, 1, 2, -1, nil},
		{"negative below half", -149, 1, 100, -1, nil},
		{"negative divisor", 3, 1, -2, -2, nil},
		{"128-bit intermediate", 1 << 62, 100, 200, 1 << 61, nil},
		{"overflow", 1 << 62, 1 << 62, 1, 0, ErrOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := MulDivRound(tc.a, tc.b, tc.d)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("MulDivRound(%d, %d, %d) = %d, want %d", tc.a, tc.b, tc.d, got, tc.want)
			}
		})
	}
}

func TestPercentAndNet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		amount  Cents
		rate    string
		wantTax Cents
		wantNet Cents // NetOfGross(amount, rate)

	}{
		{"19 on 100.00", 10000, "19", 1900, 8403},
		{"7 on 10.70", 1070, "7", 75, 1000},
		{"19 on 23.80", 2380, "19", 452, 2000},
		// DOMAIN.md shipping example: 1.52 at 7 % and 3.38 at 19 %
		{"shipping part 7", 152, "7", 11, 142},
		{"shipping part 19", 338, "19", 64, 284},
		{"half cent rounds up", 50, "1", 1, 50},   // 0.5 cent -> 1
		{"5.5 percent", 1000, "5.5", 55, 948},     // 1000/1.055 = 947.87
		{"25.5 percent", 1000, "25.5", 255, 797},  // 1000/1.255 = 796.81
		{"negative base", -1070, "7", -75, -1000}, // symmetric
		{"zero rate", 1234, "0", 0, 1234},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rate := MustParse(tc.rate)
			tax, err := Percent(tc.amount, rate)
			if err != nil {
				t.Fatal(err)
			}
			if tax != tc.wantTax {
				t.Errorf("Percent(%v, %v) = %v, want %v", tc.amount, rate, tax, tc.wantTax)
			}
			net, err := NetOfGross(tc.amount, rate)
			if err != nil {
				t.Fatal(err)
			}
			if net != tc.wantNet {
				t.Errorf("NetOfGross(%v, %v) = %v, want %v", tc.amount, rate, net, tc.wantNet)
			}
		})
	}
}

func TestMul(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		q    string
		c    Cents
		want Cents
	}{
		{"integer quantity", "3", 1999, 5997},
		{"fractional exact", "1.5", 1000, 1500},
		{"fractional rounds half up", "0.5", 3, 2},
		{"thirds", "0.333", 1000, 333},
		{"kilograms", "2.375", 899, 2135}, // 2135.125
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Mul(MustParse(tc.q), tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Mul(%s, %v) = %v, want %v", tc.q, tc.c, got, tc.want)
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		total   Cents
		weights []Cents
		want    []Cents
	}{
		// DOMAIN.md: 4.90 shipping over goods of 10.70 (7 %) and 23.80 (19 %)
		{"domain shipping example", 490, []Cents{1070, 2380}, []Cents{152, 338}},
		{"even", 100, []Cents{1, 1}, []Cents{50, 50}},
		{"thirds tie goes to first", 100, []Cents{1, 1, 1}, []Cents{34, 33, 33}},
		{"largest remainder", 10, []Cents{1, 2, 3, 4, 5}, []Cents{1, 1, 2, 3, 3}},
		{"single", 499, []Cents{7}, []Cents{499}},
		{"zero weights", 5, []Cents{0, 0}, []Cents{5, 0}},
		{"zero total", 0, []Cents{3, 4}, []Cents{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Allocate(tc.total, tc.weights)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Allocate(%v, %v) mismatch (-want +got):\n%s", tc.total, tc.weights, diff)
			}
			if Sum(got...) != tc.total {
				t.Errorf("parts sum to %v, want %v", Sum(got...), tc.total)
			}
		})
	}
}

func TestParseDecimal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"19", "19", false},
		{"19.00", "19", false},
		{"5.5", "5.5", false},
		{"-0.25", "-0.25", false},
		{"+3", "3", false},
		{"1e2", "100", false},
		{"2.5E-1", "0.25", false},
		{"0.000000001", "0.000000001", false},
		{"0.0000000001", "", true},
		{"", "", true},
		{"1,5", "", true},
		{"abc", "", true},
		{".", "", true},
		{"99999999999999999999", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			d, err := ParseDecimal(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseDecimal(%q) err = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if err == nil && d.String() != tc.want {
				t.Errorf("ParseDecimal(%q) = %s, want %s", tc.in, d, tc.want)
			}
		})
	}
}

func TestDecimalJSONAndCmp(t *testing.T) {
	t.Parallel()
	var v struct {
		Q Decimal  `json:"q"`
		R *Decimal `json:"r"`
	}
	if err := json.Unmarshal([]byte(`{"q": 1.50, "r": 19}`), &v); err != nil {
		t.Fatal(err)
	}
	if got := v.Q.String(); got != "1.5" {
		t.Errorf("q = %s, want 1.5", got)
	}
	if !v.R.Equal(Int(19)) {
		t.Errorf("r = %s, want 19", v.R)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"q":1.5,"r":19}` {
		t.Errorf("marshal = %s", out)
	}
	if MustParse("5.5").Cmp(MustParse("5.50")) != 0 || MustParse("7").Cmp(MustParse("19")) >= 0 {
		t.Error("Cmp disagrees")
	}
	s, err := MustParse("0.1").Add(MustParse("0.25"))
	if err != nil || s.String() != "0.35" {
		t.Errorf("Add = %s, %v", s, err)
	}
}

func TestUnitPrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		total Cents
		q     string
		want  string
	}{
		{"exact two decimals", 5997, "3", "19.99"},
		{"exact more decimals", 100, "8", "0.125"},
		{"repeating", 5039, "3", "16.7967"}, // 3 x 16.7967 = 50.3901
		{"fractional quantity", 1000, "0.5", "20"},
		{"within a tenth of a cent", 100000, "7", "142.8571"}, // 999.9997
		{"large quantity", 100000, "700", "1.428571"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := UnitPrice(tc.total, MustParse(tc.q), 6)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("UnitPrice(%v, %s) = %s, want %s", tc.total, tc.q, got, tc.want)
			}
		})
	}
}
