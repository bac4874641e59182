package reqlog

import (
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/httpx"
)

// TestAnonymousSample: entries with a project are always recorded; those
// without one as a token bucket of AnonymousRate a second (bursts of as
// many) allows, given the time.
func TestAnonymousSample(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	type step struct {
		after   time.Duration // since t0
		project string
		want    bool
	}
	burst := func(n int, after time.Duration, want bool) []step {
		var s []step
		for range n {
			s = append(s, step{after: after, want: want})
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		rate  int
		steps []step
	}{
		{"a burst: rate recorded, the next not", 3, append(burst(3, 0, true), step{want: false})},
		{"a project is always recorded", 1, []step{{want: true}, {want: false}, {project: "p", want: true}, {project: "p", want: true}, {want: false}}},
		{"refills at the rate", 2, append(append(burst(2, 0, true), step{want: false}),
			step{after: 499 * time.Millisecond, want: false}, step{after: 500 * time.Millisecond, want: true},
			step{after: 500 * time.Millisecond, want: false})},
		{"refills no more than the burst", 2, append(append(burst(2, 0, true), burst(2, time.Hour, true)...), step{after: time.Hour, want: false})},
		{"time going back takes nothing back", 1, []step{{after: time.Second, want: true}, {after: 0, want: false}, {after: 2 * time.Second, want: true}}},
		{"rate 0 records no anonymous entry", 0, []step{{want: false}, {after: time.Hour, want: false}, {project: "p", want: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := &Log{AnonymousRate: tc.rate}
			for i, s := range tc.steps {
				if got := l.sampled(httpx.Entry{ProjectID: s.project}, t0.Add(s.after)); got != s.want {
					t.Fatalf("step %d (%+v): recorded %v, want %v", i, s, got, s.want)
				}
			}
		})
	}
}

// TestMoreBatches: a tick writes another batch only while a full one waits.
func TestMoreBatches(t *testing.T) {
	for _, c := range []struct {
		pending, size int
		want          bool
	}{
		{0, 1024, false},
		{1, 1024, false},
		{1023, 1024, false},
		{1024, 1024, true},
		{5000, 1024, true},
	} {
		if got := moreBatches(c.pending, c.size); got != c.want {
			t.Errorf("moreBatches(%d, %d) = %v, want %v", c.pending, c.size, got, c.want)
		}
	}
}
