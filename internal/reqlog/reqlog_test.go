package reqlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/reqlog"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestPartitionsAheadAndOldOnesDropped: the maintainer creates today's and
// the next days' partitions and drops partitions older than the retention.
func TestPartitionsAheadAndOldOnesDropped(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	// A partition far older than the retention (no other test writes there).
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS request_log_20000101 PARTITION OF request_log
		FOR VALUES FROM ('2000-01-01T00:00:00Z') TO ('2000-01-02T00:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := reqlog.EnsurePartitions(ctx, pool, now); err != nil {
		t.Fatal(err)
	}
	exists := func(name string) bool {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if exists("request_log_20000101") {
		t.Error("a partition older than the retention was kept")
	}
	for d := 0; d <= 3; d++ {
		name := "request_log_" + now.AddDate(0, 0, d).Format("20060102")
		if !exists(name) {
			t.Errorf("partition %s was not created ahead", name)
		}
	}
	if reqlog.Retention != 30*24*time.Hour {
		t.Errorf("retention %v, want 30 days", reqlog.Retention)
	}
}
