package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/internal/consume"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/tracing"
)

// GroupID is the Kafka consumer group of the read-model projectors; replicas
// split the partitions between them.
const GroupID = "o2i-projector"

// Topics the projector consumes.
var Topics = []string{event.TopicOrders, event.TopicInvoices}

// MaxBatch bounds how many events one read-model transaction applies.
const MaxBatch = 500

// lockKey serialises a rebuild's table swap against live batches.
const lockKey = 0x6f32692d70726f6a // "o2i-proj"

// Bounds of the projector's external calls. A PostgreSQL statement that
// overruns closes its connection; the batch is then delivered again.
const (
	txTimeout    = 30 * time.Second // one read-model transaction (it may wait for a rebuild's table swap)
	dbTimeout    = 10 * time.Second // one statement outside it
	redisTimeout = 5 * time.Second  // one Redis pipeline
)

// Redis repair: how often the loop looks for marked orders when it was not
// told of any (marks of other replicas, of a crashed process), how many it
// copies per round, and its longest wait after a failed round.
const (
	repairEvery      = 5 * time.Second
	repairBatch      = 1000
	repairMaxBackoff = 5 * time.Second
)

// Projector maintains order_view, invoice_view and the Redis order status
// records from the event topics.
type Projector struct {
	pool    *pgxpool.Pool
	rdb     *redis.Client
	brokers []string
	tables  Tables
	topics  []string
	group   string
	shadow  bool // writes a rebuild's fresh tables: no lock, no Redis

	repair *redisRepair

	lag         prometheus.Histogram
	applied     *prometheus.CounterVec
	deadLetters prometheus.Counter
	redisErrors prometheus.Counter
	redisDirty  prometheus.Gauge
}

// redisRepair is the state a projector shares with its repair loop.
type redisRepair struct {
	// down is set when a Redis refresh failed and cleared when the loop
	// wrote Redis again: while set and the loop runs, batches mark their
	// orders without trying Redis (no timeout per batch while Redis hangs).
	down    atomic.Bool
	running atomic.Bool   // the repair loop runs (Apply also runs without Run)
	kick    chan struct{} // wakes the loop when down is set
}

func newRedisRepair() *redisRepair { return &redisRepair{kick: make(chan struct{}, 1)} }

// New returns a projector; its metrics are registered on reg when not nil.
func New(pool *pgxpool.Pool, rdb *redis.Client, brokers []string, reg prometheus.Registerer) *Projector {
	p := &Projector{
		pool: pool, rdb: rdb, brokers: brokers, tables: Live, topics: Topics, group: GroupID,
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "o2i_projection_lag_seconds",
			Help:    "Time from an event's commit (occurredAt) until it is visible in the read models.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2i_projection_events_total", Help: "Events applied by the projector, by type.",
		}, []string{"type"}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "o2i_projection_dead_letters_total", Help: "Events the projector could not apply, kept in projection_dead_letters.",
		}),
		redisErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "o2i_projection_redis_errors_total",
			Help: "Failed Redis refreshes of the projector (batches and repair rounds); the orders stay marked in projection_redis_dirty until copied.",
		}),
		redisDirty: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "o2i_projection_redis_dirty_orders", Help: "Orders whose Redis status record is stale, waiting for the repair loop (sampled by it).",
		}),
		repair: newRedisRepair(),
	}
	if reg != nil {
		reg.MustRegister(p.lag, p.applied, p.deadLetters, p.redisErrors, p.redisDirty)
	}
	return p
}

// Run consumes until ctx ends (consume.Group: a failed batch is not
// committed and comes again, never skipped). Beside it runs the loop that
// repairs the Redis records of marked orders.
func (p *Projector) Run(ctx context.Context) error {
	repaired := make(chan struct{})
	go func() { defer close(repaired); p.repairLoop(ctx) }()
	defer func() { <-repaired }()
	consume.Group{Name: "projector", Brokers: p.brokers, GroupID: p.group, Topics: p.topics, MaxBatch: MaxBatch}.
		Run(ctx, func(ctx context.Context, batch []kafka.Message) error { return p.Apply(ctx, batch) })
	return nil
}

// WithSource returns a copy of p that reads topics as consumer group group
// and writes tables (tests use their own, to run beside the service).
func (p *Projector) WithSource(topics []string, group string, tables Tables) *Projector {
	c := *p
	c.topics, c.group, c.tables = topics, group, tables
	c.repair = newRedisRepair()
	return &c
}

// Apply writes a batch of messages into the read models in one transaction,
// then refreshes the Redis copies of every order it touched (also when the
// events were already applied, which repairs a crash between the two).
// When Redis fails, the orders are marked in projection_redis_dirty and the
// repair loop of Run copies them once Redis answers (see refreshRedis).
// When PostgreSQL rejects the batch for its data, the events are applied one
// by one and the offending ones go to the dead-letter table; any other
// failure is returned and the batch is delivered again.
func (p *Projector) Apply(ctx context.Context, msgs []kafka.Message) (err error) {
	// One consumer span per event, a child of the span that published it,
	// all ending with the batch.
	var spans []trace.Span
	if tracing.Enabled() {
		spans = make([]trace.Span, len(msgs))
		for i, m := range msgs {
			_, spans[i] = tracing.Consume(ctx, "projector "+p.group, m)
		}
	}
	defer func() {
		for _, s := range spans {
			tracing.End(s, err)
		}
	}()
	err = p.apply(ctx, msgs, nil)
	if err == nil || !isDataError(err) {
		return err
	}
	for _, m := range msgs {
		one := []kafka.Message{m}
		if err := p.apply(ctx, one, nil); err != nil {
			if !isDataError(err) {
				return err
			}
			if err := p.apply(ctx, nil, &deadLetter{m, err.Error()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// isDataError reports whether PostgreSQL refused the batch for the events in
// it, so that delivering the same batch again can never succeed. Apply then
// applies the events one by one; those that still fail alone are
// dead-lettered. The SQLSTATE classes:
//
//   - 22 data exception (a value out of range, an invalid date, a NUL byte)
//     and 23 integrity constraint violation: the values.
//   - 21 cardinality violation: an upsert got two rows for one key from
//     the batch; alone, each event applies.
//   - 54 program limit exceeded: a value too large for an index row (a
//     very long order number), or a statement too large for the batch.
//
// Every other class is retried forever, by design: 42 (undefined table,
// column or function, syntax, privileges), 0A, 25, 2B... are faults of the
// code or the schema; a deploy or migration fixes them and the same events
// then apply, while dead-lettering would drop every event during a bad
// deploy. 08, 40, 53, 55, 57, 58 and XX are the server's state (connection,
// deadlock or serialization, resources, lock, shutdown, I/O, corruption).
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code[:2] {
	case "21", "22", "23", "54":
		return true
	}
	return false
}

type deadLetter struct {
	m   kafka.Message
	err string
}

func (p *Projector) apply(ctx context.Context, msgs []kafka.Message, extra *deadLetter) error {
	var b pgx.Batch
	// The batch's lookups by arrays of keys keep their generic plans
	// (store.GenericPlans).
	if !p.shadow {
		// A rebuild swaps the tables under the exclusive form of this lock.
		b.Queue(`SELECT pg_advisory_xact_lock_shared($1), `+store.GenericPlans, int64(lockKey))
	} else {
		b.Queue(`SELECT ` + store.GenericPlans)
	}
	touched := map[orderRef]bool{}
	orders := map[orderRef]orderState{}
	invoices := map[[2]string]invoiceRow{}
	var refs []orderRef
	var events []appliedEvent
	var dead []kafka.Message
	var deadErr []string
	if extra != nil {
		dead, deadErr = append(dead, extra.m), append(deadErr, extra.err)
	}
	for _, m := range msgs {
		ref, applied, err := queueMessage(orders, invoices, m.Topic, m.Value)
		var poison poisonError
		if errors.As(err, &poison) {
			dead = append(dead, m)
			deadErr = append(deadErr, err.Error())
			continue
		}
		if err != nil {
			return err
		}
		events = append(events, applied)
		if !touched[ref] {
			touched[ref] = true
			refs = append(refs, ref)
		}
	}
	if err := resolveWaiting(ctx, p.pool, orders); err != nil {
		return err
	}
	queueInvoices(&b, p.tables, invoices)
	queueOrders(&b, p.tables, orders)
	for i, m := range dead {
		b.Queue(`INSERT INTO projection_dead_letters (projector, topic, partition, "offset", msg_key, payload, error)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, p.group, m.Topic, m.Partition, m.Offset, string(m.Key), m.Value, deadErr[i])
	}
	// The status records are read back in the same batch, after its writes.
	// The batch is one round trip and one transaction: an implicit one (a
	// pipeline of statements ends with one Sync), whose failure anywhere
	// rolls back all of it, as BEGIN and COMMIT around it did.
	var rows []statusRow
	if !p.shadow {
		queueLoadStatus(&b, p.tables.Orders, refs, &rows)
	}
	tctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	if err := p.pool.SendBatch(tctx, &b).Close(); err != nil {
		return fmt.Errorf("apply %d events: %w", len(msgs), err)
	}
	for i, m := range dead {
		p.deadLetters.Inc()
		slog.ErrorContext(tracing.Message(ctx, m), "projector: dead letter", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", deadErr[i])
	}
	if !p.shadow {
		if err := p.refreshRedis(ctx, rows); err != nil {
			return err
		}
	}
	now := time.Now()
	for _, ev := range events {
		p.applied.WithLabelValues(ev.typ).Inc()
		p.lag.Observe(now.Sub(ev.occurredAt).Seconds())
	}
	return nil
}
