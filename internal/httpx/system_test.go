package httpx_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/httpx"
)

// TestHealth: status reports the process and is ok whenever it answers; db
// reports PostgreSQL alone, and only its failure makes the answer 503 with
// a Retry-After.
func TestHealth(t *testing.T) {
	t.Parallel()
	all := func(db, redis, kafka, s3 bool) map[string]bool {
		return map[string]bool{"db": db, "redis": redis, "kafka": kafka, "s3": s3}
	}
	tests := []struct {
		name       string
		checks     map[string]bool
		status     int
		retryAfter time.Duration
		db         bool
	}{
		{"everything answers", all(true, true, true, true), http.StatusOK, 0, true},
		{"database down", all(false, true, true, true), http.StatusServiceUnavailable, httpx.HealthRetryAfter, false},
		{"database down, the rest too", all(false, false, false, false), http.StatusServiceUnavailable, httpx.HealthRetryAfter, false},
		{"redis down: reported in checks only", all(true, false, true, true), http.StatusOK, 0, true},
		{"kafka down: reported in checks only", all(true, true, false, true), http.StatusOK, 0, true},
		{"s3 down: reported in checks only", all(true, true, true, false), http.StatusOK, 0, true},
		{"no database check", map[string]bool{"redis": true}, http.StatusServiceUnavailable, httpx.HealthRetryAfter, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, retryAfter, body := httpx.Health(tt.checks)
			want := httpx.HealthBody{Status: "ok", DB: tt.db, Checks: tt.checks}
			if status != tt.status || retryAfter != tt.retryAfter {
				t.Errorf("HTTP %d, Retry-After %v; want %d, %v", status, retryAfter, tt.status, tt.retryAfter)
			}
			if diff := cmp.Diff(want, body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	if httpx.HealthRetryAfter < time.Second || httpx.HealthRetryAfter%time.Second != 0 {
		t.Errorf("HealthRetryAfter %v is no whole number of seconds", httpx.HealthRetryAfter)
	}
}
