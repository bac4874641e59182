package testenv

import (
	"testing"
	"time"
)

// Eventually polls cond every 20 ms until it holds; when it still does not
// after d, the test fails, naming what it waited for. Tests wait with it for
// anything asynchronous instead of sleeping a fixed time.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
