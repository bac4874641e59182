package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Group commits statements of concurrent callers that do not depend on
// each other (each one statement, its own implicit transaction alone): the
// statements waiting when a pipeline is sent go in it together, one round
// trip and one commit for all (a Batcher's batches). Each caller gets the
// answer its statement alone would have given:
//
//   - The pipeline is one implicit transaction (pgx sends a batch with one
//     Sync): its statements commit together or not at all.
//   - When PostgreSQL refuses any statement of the pipeline (a constraint, a
//     deadlock, a statement timeout), none of them committed, and each is
//     sent again alone, concurrently: the one at fault fails alone, the
//     others commit.
//   - When the outcome is unknown (the connection was lost, the pipeline's
//     time ran out), every caller gets the error, as a statement alone whose
//     connection broke before its answer: the callers' statements must be
//     safe to send again, which every statement that may be retried is.
//   - A pipeline's statements run in the order of their keys, so that two
//     pipelines take the rows of the same keys in one order.
//   - A statement alone, with nothing in flight, is sent at once as before.
type Group struct {
	pool    *pgxpool.Pool
	max     int
	timeout time.Duration
	batches Batcher[*groupItem]

	sizes     prometheus.Histogram
	fallbacks prometheus.Counter
}

// groupItem is one caller's statement and where its answer goes.
type groupItem struct {
	key  string
	sql  string
	args []any
	scan func(pgx.Row) error
	done chan error
}

// NewGroup returns a group over pool whose pipelines hold at most max
// statements and take at most timeout (a statement sent again alone has the
// same bound). name labels its metrics.
func NewGroup(pool *pgxpool.Pool, name string, max int, timeout time.Duration) *Group {
	labels := prometheus.Labels{"group": name}
	g := &Group{pool: pool, max: max, timeout: timeout,
		sizes: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "o2i_db_group_statements",
			Help: "Statements per group-commit pipeline, by group.", ConstLabels: labels, Buckets: []float64{1, 2, 4, 8, 16, 32, 64}}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_db_group_fallbacks_total",
			Help: "Statements sent again alone after PostgreSQL refused their group-commit pipeline, by group.", ConstLabels: labels}),
	}
	g.batches = Batcher[*groupItem]{Stall: 5 * time.Millisecond, Take: g.take, Write: g.write}
	return g
}

// Collectors are the group's metrics.
func (g *Group) Collectors() []prometheus.Collector {
	return []prometheus.Collector{g.sizes, g.fallbacks}
}

// QueryRow sends sql with args in the next pipeline and hands its one row
// to scan: pgx.ErrNoRows, or scan's error, when the statement gives no row
// or scan fails. scan may be called more than once (when the pipeline fails,
// again for the statement sent alone): a caller reads what it scanned only
// after QueryRow returned nil. When ctx ends first, QueryRow returns its
// error and the statement may still commit.
func (g *Group) QueryRow(ctx context.Context, key, sql string, args []any, scan func(pgx.Row) error) error {
	it := &groupItem{key: key, sql: sql, args: args, scan: scan, done: make(chan error, 1)}
	g.batches.Add(it)
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// take is the next pipeline: the oldest max waiting statements.
func (g *Group) take(pending []*groupItem) (batch, rest []*groupItem) {
	n := min(len(pending), max(g.max, 1))
	batch = slices.Clone(pending[:n])
	return batch, append(pending[:0], pending[n:]...)
}

// write sends one pipeline and answers each of its statements.
func (g *Group) write(batch []*groupItem) {
	defer func() {
		// Never leave a caller without an answer (a scan that panicked).
		if p := recover(); p != nil {
			slog.Error("group commit: panic", "panic", p)
			for _, it := range batch {
				select {
				case it.done <- fmt.Errorf("group commit: panic: %v", p):
				default:
				}
			}
		}
	}()
	g.sizes.Observe(float64(len(batch)))
	if len(batch) == 1 {
		batch[0].done <- g.alone(batch[0])
		return
	}
	slices.SortStableFunc(batch, func(x, y *groupItem) int { return cmp.Compare(x.key, y.key) })
	errs, refused := g.pipeline(batch)
	if !refused {
		for i, it := range batch {
			it.done <- errs[i]
		}
		return
	}
	g.fallbacks.Add(float64(len(batch)))
	for _, it := range batch {
		go func() { it.done <- g.alone(it) }()
	}
}

// alone sends its statement on its own, in a transaction of its own.
func (g *Group) alone(it *groupItem) (err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("group commit: panic", "panic", p)
			err = fmt.Errorf("group commit: panic: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	return it.scan(QueryRow(ctx, g.pool, it.sql, it.args...))
}

// pipeline sends batch as one pipeline and returns each statement's error.
// refused: PostgreSQL refused a statement, so that none committed.
func (g *Group) pipeline(batch []*groupItem) (errs []error, refused bool) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	errs = make([]error, len(batch))
	conn, err := Acquire(ctx, g.pool)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs, false
	}
	defer conn.Release()
	b := &pgx.Batch{}
	for _, it := range batch {
		b.Queue(it.sql, it.args...)
	}
	br := conn.SendBatch(ctx, b)
	for i, it := range batch {
		errs[i] = it.scan(br.QueryRow())
	}
	closeErr := br.Close()
	var pgErr *pgconn.PgError
	if errors.As(closeErr, &pgErr) {
		return errs, true
	}
	for i, err := range errs {
		if errors.As(err, &pgErr) {
			return errs, true
		}
		if closeErr != nil {
			errs[i] = closeErr // committed or not: unknown
		}
	}
	return errs, false
}
