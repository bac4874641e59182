package breaker

import (
	"errors"
	"testing"
	"time"
)

// step is one event in a breaker's life: a call asks at an offset from t0
// and, when let through, fails or succeeds at once (or, with late, reports
// its outcome only after the later steps ran).
type step struct {
	at      time.Duration
	fail    bool
	wantOK  bool
	wantAt  time.Duration // the probe time a refusal names (refused only)
	late    bool          // the outcome is reported at the end
	wantEnd State         // the state after the step
}

func TestBreakerDecisions(t *testing.T) {
	t.Parallel()
	p := Policy{Failures: 3, OpenFor: 30 * time.Second}
	s := time.Second
	tests := []struct {
		name  string
		steps []step
		final State
	}{
		{"successes keep it closed", []step{{0, false, true, 0, false, Closed}, {s, false, true, 0, false, Closed}}, Closed},
		{"two failures stay closed", []step{{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}}, Closed},
		{"a success between failures resets the count", []step{
			{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}, {2 * s, false, true, 0, false, Closed},
			{3 * s, true, true, 0, false, Closed}, {4 * s, true, true, 0, false, Closed}}, Closed},
		{"three failures in a row open it; calls are refused until the probe time", []step{
			{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}, {2 * s, true, true, 0, false, Open},
			{3 * s, false, false, 32 * s, false, Open}, {31 * s, false, false, 32 * s, false, Open}}, Open},
		{"at the probe time one call goes; its success closes it", []step{
			{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}, {2 * s, true, true, 0, false, Open},
			{32 * s, false, true, 0, false, Closed}, {33 * s, false, true, 0, false, Closed}}, Closed},
		{"a failed probe opens it for another period", []step{
			{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}, {2 * s, true, true, 0, false, Open},
			{32 * s, true, true, 0, false, Open}, {33 * s, false, false, 62 * s, false, Open}}, Open},
		{"while the probe is out other calls are refused", []step{
			{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}, {2 * s, true, true, 0, false, Open},
			{32 * s, false, true, 0, true, HalfOpen}, {33 * s, false, false, 62 * s, false, HalfOpen}}, Closed},
		{"a probe without an outcome is replaced after a period", []step{
			{0, true, true, 0, false, Closed}, {s, true, true, 0, false, Closed}, {2 * s, true, true, 0, false, Open},
			{32 * s, false, true, 0, true, HalfOpen}, {62 * s, false, true, 0, false, Closed}}, Closed},
		{"calls let in while closed that fail after it opened do not count", []step{
			{0, true, true, 0, true, Closed}, {0, true, true, 0, true, Closed}, {0, true, true, 0, true, Closed},
			{0, true, true, 0, true, Closed}, {0, true, true, 0, true, Closed}}, Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			var b Breaker
			type pending struct {
				ticket Ticket
				fail   bool
				at     time.Time
			}
			var late []pending
			for i, st := range tt.steps {
				now := t0.Add(st.at)
				tk, ok, at := b.Allow(p, now)
				if ok != st.wantOK || (!ok && !at.Equal(t0.Add(st.wantAt))) {
					t.Fatalf("step %d: Allow = %v, %s; want %v, %s", i, ok, at.Sub(t0), st.wantOK, st.wantAt)
				}
				if ok && st.late {
					late = append(late, pending{tk, st.fail, now})
				} else if ok {
					b.Record(p, tk, st.fail, now)
				}
				if b.State() != st.wantEnd {
					t.Fatalf("step %d: state %s, want %s", i, b.State(), st.wantEnd)
				}
			}
			// The late outcomes arrive now; the ones of an earlier state
			// change nothing.
			for i, l := range late {
				b.Record(p, l.ticket, l.fail, l.at.Add(time.Duration(i)*time.Millisecond))
			}
			if b.State() != tt.final {
				t.Errorf("final state %s, want %s", b.State(), tt.final)
			}
		})
	}
}

// TestSetKeepsKeysApart: one key's failures never refuse another key's
// calls; a refusal is an *OpenError naming the key and the probe time.
func TestSetKeepsKeysApart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := NewSet(Policy{Failures: 2, OpenFor: 10 * time.Second})
	for range 2 {
		tk, err := s.Allow("provider/A", now)
		if err != nil {
			t.Fatal(err)
		}
		s.Record("provider/A", tk, true, now)
	}
	_, err := s.Allow("provider/A", now)
	var open *OpenError
	if !errors.As(err, &open) || open.Key != "provider/A" || !open.Until.Equal(now.Add(10*time.Second)) {
		t.Fatalf("A after two failures: %v, want an OpenError until +10s", err)
	}
	if _, err := s.Allow("provider/B", now); err != nil || s.State("provider/B") != Closed {
		t.Errorf("B refused because of A: %v", err)
	}
}
