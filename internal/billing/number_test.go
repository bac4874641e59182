package billing

import (
	"testing"
)

func TestNumberPatternFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern   string
		year      int
		seq       int
		want      string
		wantKey   string
		wantShort string
	}{
		{"", 2026, 1, "RE-2026-000001", "RE-2026-{SEQ}", "RE-2026"},
		{TestNumberPattern, 2026, 42, "TEST-2026-000042", "TEST-2026-{SEQ}", "TEST-2026"},
		{"INV/{YY}/{SEQ}", 2027, 1234567, "INV/27/1234567", "INV/27/{SEQ}", "INV/27"},
		{"{YYYY}{SEQ:5}", 2026, 7, "202600007", "2026{SEQ}", "2026"},
		{"R{SEQ:4}-{YYYY}", 2026, 12, "R0012-2026", "R{SEQ}-2026", "R-2026"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			p, err := ParseNumberPattern(tc.pattern)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Format(tc.year, tc.seq)
			if err != nil || got != tc.want {
				t.Fatalf("Format = %q, %v; want %q", got, err, tc.want)
			}
			if k := p.RangeKey(tc.year); k != tc.wantKey {
				t.Errorf("RangeKey = %q, want %q", k, tc.wantKey)
			}
			if k := p.ShortRangeKey(tc.year); k != tc.wantShort {
				t.Errorf("ShortRangeKey = %q, want %q", k, tc.wantShort)
			}
			y, s, err := p.Parse(got)
			if err != nil || s != tc.seq || y%100 != tc.year%100 {
				t.Errorf("Parse(%q) = %d, %d, %v", got, y, s, err)
			}
		})
	}
}

func TestNumberPatternErrors(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"RE-{SEQ}", "RE-{YYYY}", "RE-{YYYY}-{SEQ}-{SEQ}", "RE {YYYY}-{SEQ}", "RE-{YYYY}-{SEQ:0}", "RE-{YYYY}-{SEQ:13}", "RE-{YYYY-{SEQ}", "RE-{MM}-{YYYY}-{SEQ}"} {
		if _, err := ParseNumberPattern(p); err == nil {
			t.Errorf("ParseNumberPattern(%q): want error", p)
		}
	}
	p, _ := ParseNumberPattern("")
	if _, err := p.Format(2026, 0); err == nil {
		t.Error("Format seq 0: want error")
	}
	for _, n := range []string{"RE-2026-00001", "RE-2026-abcdef", "XX-2026-000001", "RE-2026-000001x"} {
		if _, _, err := p.Parse(n); err == nil {
			t.Errorf("Parse(%q): want error", n)
		}
	}
}

func TestPatternFor(t *testing.T) {
	t.Parallel()
	s := ExampleSeller()
	s.NumberPattern = "INV-{YYYY}-{SEQ:4}"
	p, err := PatternFor(s)
	if err != nil || p.String() != "INV-{YYYY}-{SEQ:4}" {
		t.Errorf("live: %v %v", p, err)
	}
	s.TestMode = true
	p, err = PatternFor(s)
	if err != nil || p.String() != TestNumberPattern {
		t.Errorf("test mode: %v %v", p, err)
	}
}

// TestValidLeitwegID covers what the engine adds to package leitweg (which
// owns format and check digits): letters compared upper-cased, blanks trimmed.
func TestValidLeitwegID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want bool
	}{
		{"04011000-1234512345-06", true},
		{"991-33333test-33", true},
		{" 992-90009-96 ", true},
		{"04011000-1234512345-07", false}, // wrong check digits
		{"", false},
	}
	for _, tc := range tests {
		if got := ValidLeitwegID(tc.id); got != tc.want {
			t.Errorf("ValidLeitwegID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestEURates(t *testing.T) {
	t.Parallel()
	r := EURates()
	if r.AsOf == "" || r.Source == "" || len(r.Rates) != 27 {
		t.Fatalf("table: asOf %q, %d states", r.AsOf, len(r.Rates))
	}
	for cc, want := range map[string]string{"DE": "19", "FR": "20", "AT": "20", "HU": "27", "LU": "17", "FI": "25.5"} {
		if got := r.Rates[cc].Standard.String(); got != want {
			t.Errorf("%s standard = %s, want %s", cc, got, want)
		}
	}
	if IsEU("CH") || IsEU("GB") || !IsEU("EL") || !IsEU("GR") {
		t.Error("IsEU")
	}
}
