// Package reqlog records every request (request id, project, key prefix,
// method, path, status, duration, Idempotency-Key) for 30 days. Requests hand
// entries to a buffered channel; a writer copies them to PostgreSQL in
// batches, and a maintainer keeps daily partitions ahead and drops old ones.
// Entries are never dropped silently: a full buffer makes the request wait a
// moment (backpressure), then the entry spills into an overflow list the
// writer drains first; a failed write is retried with backoff. Only beyond
// the overflow's bound, or when PostgreSQL refuses an entry's content, is an
// entry dropped, counted and logged. Entries without a project (anonymous
// requests: no key, a key that did not authenticate, the public routes) are
// sampled: at most AnonymousRate a second are recorded, the rest counted, so
// an anonymous flood cannot fill the buffer and its overflow.
// It imports internal/httpx (Entry), internal/store (bounded connection
// waits), pgx and the Prometheus client.
package reqlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/store"
)

// Retention is how long request records are kept.
const Retention = 30 * 24 * time.Hour

// Log batches request records into the request_log table.
type Log struct {
	pool *pgxpool.Pool
	ch   chan httpx.Entry
	done chan struct{}

	// Backpressure is how long Record waits for room in a full buffer
	// before the entry spills; SpillLimit bounds the overflow list (entries
	// beyond it are dropped, counted and logged).
	Backpressure time.Duration
	SpillLimit   int
	// AnonymousRate is how many entries without a project are recorded a
	// second (bursts of as many); the others are not recorded, only
	// counted. 0: none is recorded. Set it before the first Record.
	AnonymousRate int

	mu    sync.Mutex
	spill []httpx.Entry

	anonMu sync.Mutex
	anon   bucket

	waited, spilled, dropped, failed, sampledOut atomic.Int64
	metrics                                      *metrics
}

type metrics struct {
	waited, spilled, dropped, failed, sampledOut prometheus.Counter
	pending                                      prometheus.GaugeFunc
}

// DefaultAnonymousRate is AnonymousRate unless set otherwise.
const DefaultAnonymousRate = 10

// New returns a log with room for buffer pending entries, waiting at most
// 50 ms for room, spilling at most 16 times buffer entries and recording
// DefaultAnonymousRate entries without a project a second.
func New(pool *pgxpool.Pool, buffer int) *Log {
	return &Log{pool: pool, ch: make(chan httpx.Entry, buffer), done: make(chan struct{}),
		Backpressure: 50 * time.Millisecond, SpillLimit: 16 * buffer, AnonymousRate: DefaultAnonymousRate}
}

// bucket is a token bucket of rate tokens a second holding at most rate
// (the burst): take decides, given the time, whether one more anonymous
// entry is recorded.
type bucket struct {
	tokens float64
	last   time.Time
	primed bool
}

func (b *bucket) take(rate int, now time.Time) bool {
	if rate <= 0 {
		return false
	}
	if !b.primed {
		b.tokens, b.last, b.primed = float64(rate), now, true
	}
	if now.After(b.last) {
		b.tokens = min(float64(rate), b.tokens+now.Sub(b.last).Seconds()*float64(rate))
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sampled reports whether e is recorded: always when it has a project,
// else as the anonymous bucket allows at now.
func (l *Log) sampled(e httpx.Entry, now time.Time) bool {
	if e.ProjectID != "" {
		return true
	}
	l.anonMu.Lock()
	defer l.anonMu.Unlock()
	return l.anon.take(l.AnonymousRate, now)
}

// RegisterMetrics registers the log's counters with reg:
// o2i_request_log_backpressure_total (entries that waited for room),
// o2i_request_log_spilled_total (entries that went to the overflow list),
// o2i_request_log_dropped_total (entries lost beyond the overflow's bound),
// o2i_request_log_write_errors_total (failed batch writes, retried),
// o2i_request_log_sampled_out_total (anonymous entries not recorded) and the
// gauge o2i_request_log_pending (entries buffered or spilled).
func (l *Log) RegisterMetrics(reg prometheus.Registerer) error {
	m := &metrics{
		sampledOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_request_log_sampled_out_total", Help: "Request log entries without a project not recorded (beyond the anonymous sample's rate)."}),
		waited:     prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_request_log_backpressure_total", Help: "Request log entries that waited for room in the full buffer."}),
		spilled:    prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_request_log_spilled_total", Help: "Request log entries that went to the overflow list."}),
		dropped:    prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_request_log_dropped_total", Help: "Request log entries lost because the overflow list was full."}),
		failed:     prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_request_log_write_errors_total", Help: "Failed request log batch writes (retried)."}),
	}
	m.pending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "o2i_request_log_pending", Help: "Request log entries buffered or spilled, not yet written."},
		func() float64 { return float64(l.Pending()) })
	for _, c := range []prometheus.Collector{m.waited, m.spilled, m.dropped, m.failed, m.sampledOut, m.pending} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	l.metrics = m
	return nil
}

func (l *Log) count(c *atomic.Int64, pick func(*metrics) prometheus.Counter) {
	c.Add(1)
	if l.metrics != nil {
		pick(l.metrics).Inc()
	}
}

// Record implements httpx.Recorder. When the buffer is full it waits up to
// Backpressure for room, then spills the entry into the overflow list; only
// when that holds SpillLimit entries is the entry dropped (counted, logged).
// An entry without a project beyond AnonymousRate is not recorded (counted).
func (l *Log) Record(e httpx.Entry) {
	if !l.sampled(e, time.Now()) {
		l.count(&l.sampledOut, func(m *metrics) prometheus.Counter { return m.sampledOut })
		return
	}
	select {
	case l.ch <- e:
		return
	default:
	}
	l.count(&l.waited, func(m *metrics) prometheus.Counter { return m.waited })
	t := time.NewTimer(l.Backpressure)
	defer t.Stop()
	select {
	case l.ch <- e:
		return
	case <-t.C:
	}
	l.mu.Lock()
	ok := len(l.spill) < l.SpillLimit
	if ok {
		l.spill = append(l.spill, e)
	}
	l.mu.Unlock()
	if ok {
		l.count(&l.spilled, func(m *metrics) prometheus.Counter { return m.spilled })
		return
	}
	l.count(&l.dropped, func(m *metrics) prometheus.Counter { return m.dropped })
	slog.Error("request log: overflow full, entry dropped", "requestId", e.RequestID, "spillLimit", l.SpillLimit)
}

// Dropped is the number of entries lost because the overflow list was full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// SampledOut is the number of entries without a project not recorded.
func (l *Log) SampledOut() int64 { return l.sampledOut.Load() }

// Spilled is the number of entries that went to the overflow list.
func (l *Log) Spilled() int64 { return l.spilled.Load() }

// Waited is the number of entries that found the buffer full.
func (l *Log) Waited() int64 { return l.waited.Load() }

// Pending is the number of entries buffered or spilled, not yet written.
func (l *Log) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ch) + len(l.spill)
}

// takeSpill moves up to n spilled entries into batch.
func (l *Log) takeSpill(batch []httpx.Entry, n int) []httpx.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := max(min(n, len(l.spill)), 0)
	batch = append(batch, l.spill[:k]...)
	l.spill = append(l.spill[:0], l.spill[k:]...)
	return batch
}

// respill puts a batch whose write failed back in front of the overflow
// list, beyond its bound too (these entries were accepted already).
func (l *Log) respill(batch []httpx.Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spill = append(append(make([]httpx.Entry, 0, len(batch)+len(l.spill)), batch...), l.spill...)
}

// Run writes batches until ctx ends, then drains what is buffered and
// spilled (for at most 5 s). A failed write keeps its entries and is
// retried with backoff (up to 5 s).
func (l *Log) Run(ctx context.Context) {
	defer close(l.done)
	if err := EnsurePartitions(ctx, l.pool, time.Now()); err != nil {
		slog.Error("request log: partitions", "err", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	maint := time.NewTicker(time.Hour)
	defer maint.Stop()
	const size = 1024
	batch := make([]httpx.Entry, 0, size)
	backoff := time.Duration(0)
	var retryAt time.Time
	flush := func(ctx context.Context) bool {
		batch = l.takeSpill(batch, size-len(batch))
		if len(batch) == 0 {
			return true
		}
		if time.Now().Before(retryAt) {
			// Backing off: the entries wait in the overflow list, where
			// Record's bound sees them, so nothing grows without limit.
			l.respill(batch)
			batch = batch[:0]
			return false
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := l.write(wctx, batch)
		if refused(err) {
			// PostgreSQL refused some entry's content (for example a time
			// no partition covers): write them one by one, so only the
			// refused ones are set aside and the rest is never held up.
			err = l.writeEach(wctx, batch)
		}
		cancel()
		if err != nil {
			l.count(&l.failed, func(m *metrics) prometheus.Counter { return m.failed })
			slog.Error("request log: write failed, retrying", "entries", len(batch), "err", err)
			var again errRetryLater
			if !errors.As(err, &again) {
				l.respill(batch)
			}
			batch = batch[:0]
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			retryAt = time.Now().Add(backoff)
			return false
		}
		backoff = 0
		batch = batch[:0]
		return true
	}
	// fill takes what the channel holds, without waiting, up to a batch.
	fill := func() {
		for len(batch) < size {
			select {
			case e := <-l.ch:
				batch = append(batch, e)
			default:
				return
			}
		}
	}
	// The writer wakes once a tick, not for every entry: a request hands
	// its entry to the channel without waking anyone, and each tick writes
	// what came meanwhile. Past the first batch it writes further ones only
	// while a full batch waits (a backlog, or more than a batch a tick):
	// a COPY's own cost (its start, its commit and WAL flush) is about that
	// of 40 rows, and writing again for the few entries that arrived during
	// the last COPY made most batches small under load.
	for {
		select {
		case <-tick.C:
			for i := 0; i < 16; i++ {
				fill()
				if !flush(ctx) || !moreBatches(l.Pending(), size) {
					break
				}
			}
		case <-maint.C:
			if err := EnsurePartitions(ctx, l.pool, time.Now()); err != nil {
				slog.Error("request log: partitions", "err", err)
			}
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			retryAt = time.Time{}
			for dctx.Err() == nil {
				fill()
				if !flush(dctx) {
					retryAt = time.Time{}
					continue
				}
				if l.Pending() == 0 && len(batch) == 0 {
					return
				}
			}
			if n := l.Pending() + len(batch); n > 0 {
				slog.Error("request log: entries not written at shutdown", "entries", n)
			}
			return
		}
	}
}

// moreBatches reports whether a tick writes another batch after one:
// only while a full batch of size entries is pending.
func moreBatches(pending, size int) bool { return pending >= size }

// Wait blocks until Run has returned.
func (l *Log) Wait() { <-l.done }

// refused reports whether PostgreSQL refused the data itself (SQLSTATE
// classes 22 and 23): retrying the same entries can never succeed.
func refused(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "23"))
}

// writeEach writes the entries one at a time. An entry PostgreSQL refuses
// is dropped: counted and logged with its content. Any other failure
// returns it, so the caller keeps and retries the whole batch.
func (l *Log) writeEach(ctx context.Context, batch []httpx.Entry) error {
	var kept []httpx.Entry
	for i, e := range batch {
		err := l.write(ctx, []httpx.Entry{e})
		switch {
		case err == nil:
		case refused(err):
			l.count(&l.dropped, func(m *metrics) prometheus.Counter { return m.dropped })
			slog.Error("request log: entry refused by the database, dropped", "requestId", e.RequestID, "at", e.At,
				"projectId", e.ProjectID, "method", e.Method, "path", e.Path, "status", e.Status, "err", err)
		default:
			// The written ones are in; the rest is retried as a batch.
			kept = append(kept, batch[i:]...)
			l.respill(kept)
			return errRetryLater{err}
		}
	}
	return nil
}

// errRetryLater: writeEach put the unwritten entries back in the overflow
// list already.
type errRetryLater struct{ error }

func (l *Log) write(ctx context.Context, batch []httpx.Entry) error {
	_, err := l.pool.CopyFrom(ctx, pgx.Identifier{"request_log"},
		[]string{"request_id", "at", "project_id", "key_prefix", "method", "path", "route", "status", "duration_us", "idempotency_key"},
		newCopyRows(batch))
	return err
}

// copyRows is a pgx.CopyFromSource over entries. Each row's values are of
// the exact column types, so that COPY encodes them without conversions,
// and they live in one row buffer that every row reuses: Values hands out
// pointers into it (pgx encodes a row before it asks for the next), so
// the rows cost no allocation per entry (this runs for every request).
type copyRows struct {
	batch []httpx.Entry
	i     int
	row   copyRow
	vals  []any
}

type copyRow struct {
	id, project                    pgtype.UUID
	at                             pgtype.Timestamptz
	keyPrefix, method, path, route pgtype.Text
	idempotencyKey                 pgtype.Text
	status                         pgtype.Int2
	duration                       pgtype.Int8
}

func newCopyRows(batch []httpx.Entry) *copyRows {
	c := &copyRows{batch: batch, i: -1}
	r := &c.row
	c.vals = []any{&r.id, &r.at, &r.project, &r.keyPrefix, &r.method, &r.path, &r.route, &r.status, &r.duration, &r.idempotencyKey}
	return c
}

// Next moves to the next entry with a valid request id (entries without
// one are skipped, as before).
func (c *copyRows) Next() bool {
	for c.i+1 < len(c.batch) {
		c.i++
		e := &c.batch[c.i]
		id, err := uuid.Parse(e.RequestID)
		if err != nil {
			continue
		}
		r := &c.row
		r.id = pgtype.UUID{Bytes: id, Valid: true}
		r.project = pgtype.UUID{}
		if p, err := uuid.Parse(e.ProjectID); err == nil {
			r.project = pgtype.UUID{Bytes: p, Valid: true}
		}
		r.at = pgtype.Timestamptz{Time: e.At, Valid: true}
		r.keyPrefix = pgtype.Text{String: e.KeyPrefix, Valid: e.KeyPrefix != ""}
		r.method = pgtype.Text{String: e.Method, Valid: true}
		r.path = pgtype.Text{String: e.Path, Valid: true}
		r.route = pgtype.Text{String: e.Route, Valid: true}
		r.status = pgtype.Int2{Int16: int16(e.Status), Valid: true}
		r.duration = pgtype.Int8{Int64: e.Duration.Microseconds(), Valid: true}
		r.idempotencyKey = pgtype.Text{String: e.IdempotencyKey, Valid: e.IdempotencyKey != ""}
		return true
	}
	return false
}

func (c *copyRows) Values() ([]any, error) { return c.vals, nil }

func (c *copyRows) Err() error { return nil }

// EnsurePartitions creates the daily partitions from yesterday to three days
// ahead and drops those older than Retention. Replicas serialise on an
// advisory lock.
func EnsurePartitions(ctx context.Context, pool *pgxpool.Pool, now time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('o2i.request_log.partitions'))`); err != nil {
			return err
		}
		day := now.UTC().Truncate(24 * time.Hour)
		for d := -1; d <= 3; d++ {
			from := day.AddDate(0, 0, d)
			to := from.AddDate(0, 0, 1)
			_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF request_log
				FOR VALUES FROM ('%s') TO ('%s')`, partitionName(from), from.Format(time.RFC3339), to.Format(time.RFC3339)))
			if err != nil {
				return fmt.Errorf("create partition %s: %w", partitionName(from), err)
			}
			// Request ids are UUIDv7 (time-ordered) and arrive roughly in
			// order, so a BRIN index finds one cheaply and costs little to keep.
			if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s_id_brin ON %s USING brin (request_id) WITH (pages_per_range = 16)`,
				partitionName(from), partitionName(from))); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i
			JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
			WHERE p.relname = 'request_log'`)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		oldest := partitionName(day.Add(-Retention))
		for _, n := range names {
			if n < oldest { // names sort by date
				if _, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{n}.Sanitize()); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func partitionName(day time.Time) string { return "request_log_" + day.Format("20060102") }

// Record is one stored request, as `o2i requests show` prints it.
type Record struct {
	RequestID      string    `json:"requestId"`
	At             time.Time `json:"at"`
	ProjectID      *string   `json:"projectId"`
	KeyPrefix      *string   `json:"keyPrefix"`
	Method         string    `json:"method"`
	Path           string    `json:"path"`
	Route          string    `json:"route"`
	Status         int       `json:"status"`
	DurationMicros int64     `json:"durationMicros"`
	IdempotencyKey *string   `json:"idempotencyKey"`
}

// MarshalJSON keeps the field order stable.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return json.Marshal(plain(r))
}

// Show finds a request by its id. Request ids are UUIDv7, so the time in the
// id narrows the search to one or two partitions.
func Show(ctx context.Context, pool *pgxpool.Pool, requestID string) (Record, error) {
	id, err := uuid.Parse(requestID)
	if err != nil {
		return Record{}, apperr.New(apperr.NotFound, "request_not_found", "no request %q", requestID)
	}
	lo, hi := time.Now().Add(-Retention-48*time.Hour), time.Now().Add(time.Hour)
	if id.Version() == 7 {
		sec, nsec := id.Time().UnixTime()
		t := time.Unix(sec, nsec)
		lo, hi = t.Add(-time.Minute), t.Add(10*time.Minute)
	}
	var r Record
	var status int16
	err = store.QueryRow(ctx, pool, `SELECT request_id::text, at, project_id::text, key_prefix, method, path, route, status, duration_us, idempotency_key
		FROM request_log WHERE request_id = $1 AND at >= $2 AND at < $3`, id, lo, hi).
		Scan(&r.RequestID, &r.At, &r.ProjectID, &r.KeyPrefix, &r.Method, &r.Path, &r.Route, &status, &r.DurationMicros, &r.IdempotencyKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, apperr.New(apperr.NotFound, "request_not_found", "no request %q in the last 30 days", requestID)
	}
	r.Status = int(status)
	return r, err
}
