package invoicing

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/breaker"
)

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second,
		30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := retryDelay(n); got != w {
			t.Errorf("retryDelay(%d) = %s, want %s", n, got, w)
		}
	}
	if got := retryDelay(1000); got != 30*time.Second {
		t.Errorf("retryDelay(1000) = %s, want the cap", got)
	}
}

func TestNextRetryRespectsTheBreaker(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	open := func(in time.Duration) error {
		return fmt.Errorf("bank transfer: %w", &breaker.OpenError{Key: "k", Until: now.Add(in)})
	}
	tests := []struct {
		name  string
		n     int
		cause error
		want  time.Duration
	}{
		{"a timeout: the backoff", 2, errors.New("context deadline exceeded"), 4 * time.Second},
		{"breaker open longer than the backoff: its probe time", 0, open(25 * time.Second), 25 * time.Second},
		{"breaker open shorter than the backoff: the backoff", 5, open(3 * time.Second), 30 * time.Second},
	}
	for _, tt := range tests {
		if got := nextRetry(tt.n, tt.cause, now); got != tt.want {
			t.Errorf("%s: nextRetry = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestEscalate(t *testing.T) {
	t.Parallel()
	p := retryPolicy{retriesBeforeTask: 5, taskAfter: 10 * time.Minute}
	tests := []struct {
		name       string
		permanent  bool
		waiting    bool
		retries    int
		failingFor time.Duration
		want       bool
	}{
		{"first failure of a dependency: a retry, no task", false, false, 0, 0, false},
		{"four retries within minutes: no task yet", false, false, 4, 2 * time.Minute, false},
		{"the fifth retry fails: task", false, false, 5, 2 * time.Minute, true},
		{"failing ten minutes (the breaker kept refusing): task", false, false, 1, 10 * time.Minute, true},
		{"a failure that never goes away: task at once", true, false, 0, 0, true},
		{"waiting for the range's document before it, retried 50 times: no task (that one has it)", false, true, 50, time.Hour, false},
	}
	for _, tt := range tests {
		if got := escalate(p, tt.permanent, tt.waiting, tt.retries, tt.failingFor); got != tt.want {
			t.Errorf("%s: escalate = %v, want %v", tt.name, got, tt.want)
		}
	}
	// RetriesBeforeTask 0: every failure opens the task (the behaviour
	// before the retry table had a retry state).
	if !escalate(retryPolicy{retriesBeforeTask: 0, taskAfter: time.Hour}, false, false, 0, 0) {
		t.Error("retriesBeforeTask 0 does not open the task at the first failure")
	}
	// Only a wait for the document before it is a wait.
	pending := fmt.Errorf("archive invoice x: %w", ErrChainPending)
	if !onlyWaiting(pending) || !onlyWaiting(errors.Join(pending, pending)) ||
		onlyWaiting(errors.Join(pending, errors.New("object store down"))) || onlyWaiting(errors.New("object store down")) {
		t.Error("onlyWaiting: a wait (also joined with another wait) is one; joined with another failure it is not")
	}
	// The permanent errors are those that open the task at once.
	if !permanent(fmt.Errorf("issue: %w", billing.FieldErrors{{Field: "items[0].quantity", Message: "x"}})) ||
		permanent(fmt.Errorf("archive: %w", &breaker.OpenError{})) {
		t.Error("permanent: an engine refusal is permanent, an open breaker is not")
	}
}

func TestRepairDelay(t *testing.T) {
	t.Parallel()
	want := map[int]time.Duration{1: 15 * time.Second, 2: 30 * time.Second, 3: time.Minute, 6: 8 * time.Minute, 7: 15 * time.Minute, 50: 15 * time.Minute}
	for n, w := range want {
		if got := repairDelay(n); got != w {
			t.Errorf("repairDelay(%d) = %s, want %s", n, got, w)
		}
	}
}
