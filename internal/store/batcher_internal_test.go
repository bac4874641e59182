package store

import (
	"testing"
	"time"
)

// TestRunnersSpare: a group commit starts a first runner at once, a
// second only while every running one's statement has been in flight for
// stall or longer, and never more than batchRunners.
func TestRunnersSpare(t *testing.T) {
	const stall = 5 * time.Millisecond
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	stalled, fresh := now.Add(-stall), now.Add(-stall+time.Microsecond)
	var idle time.Time // between statements
	for _, tc := range []struct {
		name   string
		active [batchRunners]bool
		since  [batchRunners]time.Time
		slot   int
		ok     bool
	}{
		{"none runs: the first", [batchRunners]bool{}, [batchRunners]time.Time{}, 0, true},
		{"one between statements: it takes the item", [batchRunners]bool{true, false}, [batchRunners]time.Time{idle, idle}, 0, false},
		{"one just started its statement", [batchRunners]bool{true, false}, [batchRunners]time.Time{fresh, idle}, 0, false},
		{"one stalled: a second", [batchRunners]bool{true, false}, [batchRunners]time.Time{stalled, idle}, 1, true},
		{"the second slot stalled: the first slot", [batchRunners]bool{false, true}, [batchRunners]time.Time{idle, stalled}, 0, true},
		{"both stalled: no third", [batchRunners]bool{true, true}, [batchRunners]time.Time{stalled, stalled}, 0, false},
		{"one stalled, one not", [batchRunners]bool{true, true}, [batchRunners]time.Time{stalled, fresh}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runners{active: tc.active, since: tc.since}
			slot, ok := r.spare(now, stall)
			if ok != tc.ok || (ok && slot != tc.slot) {
				t.Fatalf("spare = %d, %v; want %d, %v", slot, ok, tc.slot, tc.ok)
			}
		})
	}
}

// TestRunnersRedundant: a runner stops with items waiting only when
// another runner runs that is not stalled (it takes them).
func TestRunnersRedundant(t *testing.T) {
	const stall = 5 * time.Millisecond
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	stalled, fresh := now.Add(-time.Second), now.Add(-time.Millisecond)
	var idle time.Time
	for _, tc := range []struct {
		name   string
		active [batchRunners]bool
		since  [batchRunners]time.Time
		slot   int
		want   bool
	}{
		{"alone", [batchRunners]bool{true, false}, [batchRunners]time.Time{idle, idle}, 0, false},
		{"the other between statements", [batchRunners]bool{true, true}, [batchRunners]time.Time{idle, idle}, 0, true},
		{"the other writing, not stalled", [batchRunners]bool{true, true}, [batchRunners]time.Time{idle, fresh}, 0, true},
		{"the other stalled", [batchRunners]bool{true, true}, [batchRunners]time.Time{idle, stalled}, 0, false},
		{"the second slot, the first stalled", [batchRunners]bool{true, true}, [batchRunners]time.Time{stalled, idle}, 1, false},
		{"the second slot, the first writing", [batchRunners]bool{true, true}, [batchRunners]time.Time{fresh, idle}, 1, true},
		{"the other slot not running", [batchRunners]bool{false, true}, [batchRunners]time.Time{fresh, idle}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runners{active: tc.active, since: tc.since}
			if got := r.redundant(tc.slot, now, stall); got != tc.want {
				t.Fatalf("redundant(%d) = %v, want %v", tc.slot, got, tc.want)
			}
		})
	}
}
