package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPgbenchLatencies: the third field of each line of pgbench's
// per-transaction log is the latency in µs; a line that is not such a line
// is an error naming it, not a latency of zero.
func TestPgbenchLatencies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, log string
		want      []time.Duration
		err       string
	}{
		{"two clients", "0 1 3667 0 1764705600 123456\n1 1 13251 0 1764705600 123999\n", []time.Duration{3667 * time.Microsecond, 13251 * time.Microsecond}, ""},
		{"blank lines", "\n0 7 250 0 1764705600 1\n\n", []time.Duration{250 * time.Microsecond}, ""},
		{"empty", "", nil, ""},
		{"short line", "0 1 3667 0\n", nil, "line 1: 4 fields"},
		{"not a number", "0 1 3.5 0 1764705600 1\n", nil, `line 1: latency "3.5"`},
		{"negative", "0 1 -4 0 1764705600 1\n", nil, `line 1: latency "-4"`},
	} {
		got, err := pgbenchLatencies([]byte(c.log))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && !slices.Equal(got, c.want):
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMedianAndP99: the durations sorted, whatever their order, then the
// elements at n/2 and n·99/100 (rounded down).
func TestMedianAndP99(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(100 - i) // 100 ms down to 1 ms
	}
	for _, c := range []struct {
		name     string
		in       []time.Duration
		p50, p99 time.Duration
	}{
		{"one", []time.Duration{ms(7)}, ms(7), ms(7)},
		{"unsorted three", []time.Duration{ms(9), ms(1), ms(5)}, ms(5), ms(9)},
		{"a hundred, descending", hundred, ms(51), ms(100)},
	} {
		p50, p99 := medianAndP99(c.in)
		if p50 != c.p50 || p99 != c.p99 {
			t.Errorf("%s: p50 %s, p99 %s; want %s, %s", c.name, p50, p99, c.p50, c.p99)
		}
	}
}
