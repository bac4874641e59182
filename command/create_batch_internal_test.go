package command

import (
	"testing"
	"time"
)

// TestRunnersSpare: the group commit starts a first runner at once, a
// second only while every running one's statement has been in flight for
// createStall or longer, and never more than createRunners.
func TestRunnersSpare(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	stalled, fresh := now.Add(-createStall), now.Add(-createStall+time.Microsecond)
	var idle time.Time // between statements
	for _, tc := range []struct {
		name   string
		active [createRunners]bool
		since  [createRunners]time.Time
		slot   int
		ok     bool
	}{
		{"none runs: the first", [createRunners]bool{}, [createRunners]time.Time{}, 0, true},
		{"one between statements: it takes the order", [createRunners]bool{true, false}, [createRunners]time.Time{idle, idle}, 0, false},
		{"one just started its statement", [createRunners]bool{true, false}, [createRunners]time.Time{fresh, idle}, 0, false},
		{"one stalled: a second", [createRunners]bool{true, false}, [createRunners]time.Time{stalled, idle}, 1, true},
		{"the second slot stalled: the first slot", [createRunners]bool{false, true}, [createRunners]time.Time{idle, stalled}, 0, true},
		{"both stalled: no third", [createRunners]bool{true, true}, [createRunners]time.Time{stalled, stalled}, 0, false},
		{"one stalled, one not", [createRunners]bool{true, true}, [createRunners]time.Time{stalled, fresh}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runners{active: tc.active, since: tc.since}
			slot, ok := r.spare(now)
			if ok != tc.ok || (ok && slot != tc.slot) {
				t.Fatalf("spare = %d, %v; want %d, %v", slot, ok, tc.slot, tc.ok)
			}
		})
	}
}

// TestRunnersRedundant: a runner stops with orders pending only when
// another runner runs that is not stalled (it takes them).
func TestRunnersRedundant(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	stalled, fresh := now.Add(-time.Second), now.Add(-time.Millisecond)
	var idle time.Time
	for _, tc := range []struct {
		name   string
		active [createRunners]bool
		since  [createRunners]time.Time
		slot   int
		want   bool
	}{
		{"alone", [createRunners]bool{true, false}, [createRunners]time.Time{idle, idle}, 0, false},
		{"the other between statements", [createRunners]bool{true, true}, [createRunners]time.Time{idle, idle}, 0, true},
		{"the other writing, not stalled", [createRunners]bool{true, true}, [createRunners]time.Time{idle, fresh}, 0, true},
		{"the other stalled", [createRunners]bool{true, true}, [createRunners]time.Time{idle, stalled}, 0, false},
		{"the second slot, the first stalled", [createRunners]bool{true, true}, [createRunners]time.Time{stalled, idle}, 1, false},
		{"the second slot, the first writing", [createRunners]bool{true, true}, [createRunners]time.Time{fresh, idle}, 1, true},
		{"the other slot not running", [createRunners]bool{false, true}, [createRunners]time.Time{fresh, idle}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runners{active: tc.active, since: tc.since}
			if got := r.redundant(tc.slot, now); got != tc.want {
				t.Fatalf("redundant(%d) = %v, want %v", tc.slot, got, tc.want)
			}
		})
	}
}
