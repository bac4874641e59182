package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// RoundTrips counts what the pools Open makes send to PostgreSQL, one for
// each query sent alone (BEGIN and COMMIT among them) and one for each
// batch, however many queries it carries (o2i_db_round_trips_total).
// PostgreSQL's own statistics do not show them: pg_stat_statements counts
// the statements of a batch one by one and leaves out a BEGIN or COMMIT
// sent in one.
var RoundTrips = prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_db_round_trips_total",
	Help: "Round trips to PostgreSQL: queries sent alone and batches."})

// roundTripTracer is the pools' pgx tracer: it only counts.
type roundTripTracer struct{}

func (roundTripTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	RoundTrips.Inc()
	return ctx
}

func (roundTripTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (roundTripTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	RoundTrips.Inc()
	return ctx
}

func (roundTripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (roundTripTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
