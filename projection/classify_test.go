package projection

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestIsDataError: only errors of the batch's events are split and
// dead-lettered; faults of the code, the schema or the server are retried.
func TestIsDataError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code string
		want bool
		why  string
	}{
		{"22007", true, "invalid datetime format"},
		{"22003", true, "numeric value out of range"},
		{"22021", true, "a NUL byte in a text value"},
		{"23505", true, "unique violation"},
		{"23502", true, "not-null violation"},
		{"21000", true, "an upsert affecting one row twice (split: each applies alone)"},
		{"54000", true, "index row too large (a very long order number)"},
		{"54001", true, "statement too complex (split)"},
		{"42703", false, "undefined column: a deploy bug, the migration fixes it"},
		{"42P01", false, "undefined table"},
		{"42601", false, "syntax error"},
		{"42501", false, "insufficient privilege"},
		{"0A000", false, "feature not supported"},
		{"08006", false, "connection failure"},
		{"40001", false, "serialization failure"},
		{"40P01", false, "deadlock"},
		{"53300", false, "too many connections"},
		{"55P03", false, "lock not available"},
		{"57014", false, "query canceled (a statement timeout)"},
		{"57P01", false, "admin shutdown"},
		{"XX001", false, "data corrupted: the server's, not the event's"},
	} {
		err := fmt.Errorf("apply 3 events: %w", &pgconn.PgError{Code: tc.code})
		if got := isDataError(err); got != tc.want {
			t.Errorf("%s (%s): isDataError = %v, want %v", tc.code, tc.why, got, tc.want)
		}
	}
	if isDataError(errors.New("redis: connection refused")) {
		t.Error("a non-PostgreSQL error is a data error")
	}
}
