package reqlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/o2i-service/o2i/internal/httpx"
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

// TestFullBufferSpillsNeverDrops: with the buffer full and no writer running,
// entries wait briefly and then spill (counted) instead of being dropped;
// once the writer runs, every one of them is written. Beyond the overflow's
// bound an entry is dropped, but counted.
func TestFullBufferSpillsNeverDrops(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	if err := reqlog.EnsurePartitions(ctx, pool, time.Now()); err != nil {
		t.Fatal(err)
	}
	l := reqlog.New(pool, 2)
	l.Backpressure = time.Millisecond
	l.SpillLimit = 1000
	project := uuid.NewString()
	var ids []string
	for i := 0; i < 50; i++ {
		id := uuid.Must(uuid.NewV7()).String()
		ids = append(ids, id)
		l.Record(httpx.Entry{RequestID: id, ProjectID: project, Method: "GET", Path: "/v1/x", Route: "/v1/x", Status: 200,
			Duration: time.Millisecond, At: time.Now()})
	}
	if l.Dropped() != 0 || l.Spilled() != 48 || l.Waited() != 48 || l.Pending() != 50 {
		t.Fatalf("dropped %d spilled %d waited %d pending %d, want 0, 48, 48, 50", l.Dropped(), l.Spilled(), l.Waited(), l.Pending())
	}
	rctx, stop := context.WithCancel(ctx)
	go l.Run(rctx)
	t.Cleanup(func() { stop(); l.Wait() })
	testenv.Eventually(t, 10*time.Second, "all 50 entries written", func() bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM request_log WHERE project_id = $1 AND at > now() - interval '1 hour'`, project).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 50
	})
	for _, id := range ids[:3] {
		if _, err := reqlog.Show(ctx, pool, id); err != nil {
			t.Errorf("request %s: %v", id, err)
		}
	}

	// Beyond the bound: counted as dropped, never silently.
	small := reqlog.New(pool, 1)
	small.Backpressure = time.Millisecond
	small.SpillLimit = 2
	reg := prometheus.NewRegistry()
	if err := small.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		small.Record(httpx.Entry{RequestID: uuid.Must(uuid.NewV7()).String(), Method: "GET", Path: "/", Route: "/", At: time.Now()})
	}
	if small.Dropped() != 2 || small.Spilled() != 2 || small.Pending() != 3 {
		t.Fatalf("dropped %d spilled %d pending %d, want 2, 2, 3", small.Dropped(), small.Spilled(), small.Pending())
	}
	want := `
# HELP o2i_request_log_dropped_total Request log entries lost because the overflow list was full.
# TYPE o2i_request_log_dropped_total counter
o2i_request_log_dropped_total 2
# HELP o2i_request_log_spilled_total Request log entries that went to the overflow list.
# TYPE o2i_request_log_spilled_total counter
o2i_request_log_spilled_total 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "o2i_request_log_dropped_total", "o2i_request_log_spilled_total"); err != nil {
		t.Error(err)
	}
}

// TestRefusedEntryNeverHoldsUpTheOthers: an entry PostgreSQL can never take
// (a time no partition covers) is set aside, counted as dropped, and the
// entries of its batch are written.
func TestRefusedEntryNeverHoldsUpTheOthers(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	l := reqlog.New(pool, 16)
	project := uuid.NewString()
	l.Record(httpx.Entry{RequestID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Method: "GET", Path: "/old", Route: "/old",
		At: time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)})
	for i := 0; i < 3; i++ {
		l.Record(httpx.Entry{RequestID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Method: "GET", Path: "/ok", Route: "/ok",
			Status: 200, At: time.Now()})
	}
	rctx, stop := context.WithCancel(ctx)
	go l.Run(rctx)
	t.Cleanup(func() { stop(); l.Wait() })
	testenv.Eventually(t, 10*time.Second, "the three good entries written, the refused one dropped", func() bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM request_log WHERE project_id = $1 AND at > now() - interval '1 hour'`, project).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 3 && l.Dropped() == 1
	})
}

// TestEntriesWrittenAsRecorded: every field of an entry reads back as it
// was recorded, an entry without a project or key has them NULL, and an
// entry whose request id is not a UUID is skipped without holding up the
// entries around it in the same batch.
func TestEntriesWrittenAsRecorded(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	if err := reqlog.EnsurePartitions(ctx, pool, time.Now()); err != nil {
		t.Fatal(err)
	}
	l := reqlog.New(pool, 16)
	project := uuid.NewString()
	at := time.Now().UTC().Truncate(time.Microsecond)
	full := httpx.Entry{RequestID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, KeyPrefix: "o2i_live_ab12",
		Method: "POST", Path: "/v1/orders", Route: "/v1/orders", Status: 201, Duration: 1234 * time.Microsecond,
		IdempotencyKey: "key-1", At: at}
	bare := httpx.Entry{RequestID: uuid.Must(uuid.NewV7()).String(), Method: "GET", Path: "/v1/orders/A-1",
		Route: "/v1/orders/{orderNo}", Status: 404, Duration: 7 * time.Microsecond, At: at.Add(time.Millisecond)}
	l.Record(full)
	l.Record(httpx.Entry{RequestID: "not-a-uuid", ProjectID: project, Method: "GET", Path: "/x", Route: "/x", At: at})
	l.Record(bare)
	rctx, stop := context.WithCancel(ctx)
	go l.Run(rctx)
	t.Cleanup(func() { stop(); l.Wait() })
	var got []reqlog.Record
	testenv.Eventually(t, 10*time.Second, "both entries written", func() bool {
		got = got[:0]
		for _, e := range []httpx.Entry{full, bare} {
			r, err := reqlog.Show(ctx, pool, e.RequestID)
			if err != nil {
				return false
			}
			got = append(got, r)
		}
		return true
	})
	str := func(s string) *string { return &s }
	want := []reqlog.Record{
		{RequestID: full.RequestID, At: at, ProjectID: str(project), KeyPrefix: str("o2i_live_ab12"), Method: "POST",
			Path: "/v1/orders", Route: "/v1/orders", Status: 201, DurationMicros: 1234, IdempotencyKey: str("key-1")},
		{RequestID: bare.RequestID, At: at.Add(time.Millisecond), Method: "GET", Path: "/v1/orders/A-1",
			Route: "/v1/orders/{orderNo}", Status: 404, DurationMicros: 7},
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Errorf("entry %d: at %v, want %v", i, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		gj, _ := g.MarshalJSON()
		wj, _ := w.MarshalJSON()
		if string(gj) != string(wj) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM request_log WHERE project_id = $1 AND at > now() - interval '1 hour'`, project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d entries of the project written, want 1 (the one with a malformed request id is skipped)", n)
	}
}

// TestSteadyEntriesWrittenOncePerTick: entries recorded at a steady rate are
// written in about one COPY a tick (rows of one COPY share its transaction
// id), not in a COPY of their own for every few that arrived during the last
// one.
func TestSteadyEntriesWrittenOncePerTick(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	if err := reqlog.EnsurePartitions(ctx, pool, time.Now()); err != nil {
		t.Fatal(err)
	}
	l := reqlog.New(pool, 4096)
	rctx, stop := context.WithCancel(ctx)
	go l.Run(rctx)
	t.Cleanup(func() { stop(); l.Wait() })
	project := uuid.NewString()
	const entries, every = 1000, 500 * time.Microsecond // 2,000 a second for half a second
	start := time.Now()
	pace := time.NewTicker(every) // the load's pace: nothing is waited for
	defer pace.Stop()
	for i := range entries {
		if i > 0 {
			<-pace.C
		}
		l.Record(httpx.Entry{RequestID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Method: "GET",
			Path: "/v1/orders/A-1", Route: "/v1/orders/{orderNo}", Status: 200, At: time.Now()})
	}
	took := time.Since(start)
	var rows, copies int
	testenv.Eventually(t, 10*time.Second, "every entry written", func() bool {
		if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM request_log
			WHERE project_id = $1 AND at > now() - interval '1 hour'`, project).Scan(&rows, &copies); err != nil {
			t.Fatal(err)
		}
		return rows == entries
	})
	// One COPY per 50 ms tick while recording, and one for the rest.
	if ticks := int(took/(50*time.Millisecond)) + 2; copies > ticks {
		t.Errorf("%d entries over %v written in %d COPYs, want at most %d (one a tick)", entries, took.Round(time.Millisecond), copies, ticks)
	}
}
