// Package reqlog records every request (request id, project, key prefix,
// method, path, status, duration, Idempotency-Key) for 30 days. Requests hand
// entries to a buffered channel; a writer copies them to PostgreSQL in
// batches, and a maintainer keeps daily partitions ahead and drops old ones.
// It imports internal/httpx (Entry), internal/store (bounded connection
// waits) and pgx.
package reqlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/store"
)

// Retention is how long request records are kept.
const Retention = 30 * 24 * time.Hour

// Log batches request records into the request_log table.
type Log struct {
	pool    *pgxpool.Pool
	ch      chan httpx.Entry
	dropped atomic.Int64
	done    chan struct{}
}

// New returns a log with room for buffer pending entries.
func New(pool *pgxpool.Pool, buffer int) *Log {
	return &Log{pool: pool, ch: make(chan httpx.Entry, buffer), done: make(chan struct{})}
}

// Record implements httpx.Recorder; it never blocks. When the buffer is full
// the entry is counted as dropped.
func (l *Log) Record(e httpx.Entry) {
	select {
	case l.ch <- e:
	default:
		l.dropped.Add(1)
	}
}

// Dropped is the number of entries dropped because the buffer was full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Run writes batches until ctx ends, then drains what is buffered.
func (l *Log) Run(ctx context.Context) {
	defer close(l.done)
	if err := EnsurePartitions(ctx, l.pool, time.Now()); err != nil {
		slog.Error("request log: partitions", "err", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	maint := time.NewTicker(time.Hour)
	defer maint.Stop()
	batch := make([]httpx.Entry, 0, 1024)
	flush := func(ctx context.Context) {
		if len(batch) == 0 {
			return
		}
		if err := l.write(ctx, batch); err != nil {
			slog.Error("request log: write", "entries", len(batch), "err", err)
		}
		batch = batch[:0]
	}
	for {
		select {
		case e := <-l.ch:
			batch = append(batch, e)
			if len(batch) == cap(batch) {
				flush(ctx)
			}
		case <-tick.C:
			flush(ctx)
		case <-maint.C:
			if err := EnsurePartitions(ctx, l.pool, time.Now()); err != nil {
				slog.Error("request log: partitions", "err", err)
			}
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for {
				select {
				case e := <-l.ch:
					batch = append(batch, e)
					if len(batch) == cap(batch) {
						flush(dctx)
					}
				default:
					flush(dctx)
					return
				}
			}
		}
	}
}

// Wait blocks until Run has returned.
func (l *Log) Wait() { <-l.done }

func (l *Log) write(ctx context.Context, batch []httpx.Entry) error {
	// Values of the exact column types, so that COPY encodes them without
	// conversions (this runs for every request).
	rows := make([][]any, 0, len(batch))
	for _, e := range batch {
		id, err := uuid.Parse(e.RequestID)
		if err != nil {
			continue
		}
		project := pgtype.UUID{}
		if p, err := uuid.Parse(e.ProjectID); err == nil {
			project = pgtype.UUID{Bytes: p, Valid: true}
		}
		rows = append(rows, []any{pgtype.UUID{Bytes: id, Valid: true}, pgtype.Timestamptz{Time: e.At, Valid: true}, project,
			pgtype.Text{String: e.KeyPrefix, Valid: e.KeyPrefix != ""}, pgtype.Text{String: e.Method, Valid: true},
			pgtype.Text{String: e.Path, Valid: true}, pgtype.Text{String: e.Route, Valid: true},
			pgtype.Int2{Int16: int16(e.Status), Valid: true}, pgtype.Int8{Int64: e.Duration.Microseconds(), Valid: true},
			pgtype.Text{String: e.IdempotencyKey, Valid: e.IdempotencyKey != ""}})
	}
	_, err := l.pool.CopyFrom(ctx, pgx.Identifier{"request_log"},
		[]string{"request_id", "at", "project_id", "key_prefix", "method", "path", "route", "status", "duration_us", "idempotency_key"},
		pgx.CopyFromRows(rows))
	return err
}

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
