package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/consume"
	"github.com/o2i-service/o2i/internal/event"
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

	lag         prometheus.Histogram
	applied     *prometheus.CounterVec
	deadLetters prometheus.Counter
}

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
	}
	if reg != nil {
		reg.MustRegister(p.lag, p.applied, p.deadLetters)
	}
	return p
}

// Run consumes until ctx ends. A failed batch is not committed: the reader
// is recreated and the batch is delivered again (never skipped).
func (p *Projector) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := p.consume(ctx)
		if ctx.Err() != nil {
			return nil
		}
		slog.Error("projector: restarting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (p *Projector) consume(ctx context.Context) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     p.brokers,
		GroupID:     p.group,
		GroupTopics: p.topics,
		MinBytes:    1,
		MaxBytes:    10 << 20,
		MaxWait:     100 * time.Millisecond,
		StartOffset: kafka.FirstOffset,
		// Offsets are handed to the reader only after the read models are
		// written; it commits them in the background every CommitInterval,
		// so a crash replays at most that much, which apply ignores.
		CommitInterval: 100 * time.Millisecond,
		QueueCapacity:  MaxBatch * 2,
		// A crashed member's partitions move to the others after 10 s
		// (the default 30 s would stall its orders' status that long).
		SessionTimeout:    10 * time.Second,
		HeartbeatInterval: time.Second,
	})
	defer r.Close()
	for {
		msgs, err := consume.FetchBatch(ctx, r, MaxBatch)
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		if err := p.Apply(ctx, msgs); err != nil {
			return err
		}
		if err := r.CommitMessages(ctx, msgs...); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
}

// WithSource returns a copy of p that reads topics as consumer group group
// and writes tables (tests use their own, to run beside the service).
func (p *Projector) WithSource(topics []string, group string, tables Tables) *Projector {
	c := *p
	c.topics, c.group, c.tables = topics, group, tables
	return &c
}

// Apply writes a batch of messages into the read models in one transaction,
// then refreshes the Redis copies of every order it touched (also when the
// events were already applied, which repairs a crash between the two).
// When PostgreSQL rejects the batch for its data, the events are applied one
// by one and the offending ones go to the dead-letter table; any other
// failure is returned and the batch is delivered again.
func (p *Projector) Apply(ctx context.Context, msgs []kafka.Message) error {
	err := p.apply(ctx, msgs, nil)
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

// isDataError reports whether PostgreSQL refused the values themselves
// (data exception or integrity violation): retrying cannot help.
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}

type deadLetter struct {
	m   kafka.Message
	err string
}

func (p *Projector) apply(ctx context.Context, msgs []kafka.Message, extra *deadLetter) error {
	var b pgx.Batch
	if !p.shadow {
		// A rebuild swaps the tables under the exclusive form of this lock.
		b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, int64(lockKey))
	}
	touched := map[orderRef]bool{}
	orders := map[orderRef]orderState{}
	var refs []orderRef
	var events []event.Event
	var dead []kafka.Message
	var deadErr []string
	if extra != nil {
		dead, deadErr = append(dead, extra.m), append(deadErr, extra.err)
	}
	for _, m := range msgs {
		ev, err := event.Decode(m.Value)
		var ref orderRef
		if err == nil {
			ref, err = queue(&b, orders, p.tables, ev)
		} else {
			err = poisonError{err}
		}
		var poison poisonError
		if errors.As(err, &poison) {
			dead = append(dead, m)
			deadErr = append(deadErr, err.Error())
			continue
		}
		if err != nil {
			return err
		}
		events = append(events, ev)
		if !touched[ref] {
			touched[ref] = true
			refs = append(refs, ref)
		}
	}
	queueOrders(&b, p.tables, orders)
	for i, m := range dead {
		b.Queue(`INSERT INTO projection_dead_letters (projector, topic, partition, "offset", msg_key, payload, error)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, p.group, m.Topic, m.Partition, m.Offset, string(m.Key), m.Value, deadErr[i])
	}
	var rows []statusRow
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		var err error
		if p.shadow {
			return nil
		}
		rows, err = loadStatus(ctx, tx, p.tables.Orders, refs)
		return err
	})
	if err != nil {
		return fmt.Errorf("apply %d events: %w", len(msgs), err)
	}
	for i, m := range dead {
		p.deadLetters.Inc()
		slog.Error("projector: dead letter", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", deadErr[i])
	}
	if !p.shadow {
		if err := putRedis(ctx, p.rdb, rows); err != nil {
			// Redis is a view: the API falls back to PostgreSQL, and the next
			// event of the order or a rebuild refreshes it.
			slog.Warn("projector: redis refresh failed", "orders", len(rows), "err", err)
		}
	}
	now := time.Now()
	for _, ev := range events {
		p.applied.WithLabelValues(ev.Type).Inc()
		p.lag.Observe(now.Sub(ev.OccurredAt).Seconds())
	}
	return nil
}
