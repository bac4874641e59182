package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/internal/tracing"
)

// leaderLock is the PostgreSQL advisory lock the active relay holds; other
// replicas wait on standby, so events leave in outbox order.
const leaderLock int64 = 0x6f32692d72656c79 // "o2i-rely"

// Relay publishes outbox rows to Kafka. Several replicas may run: one holds
// the leader lock (a session advisory lock) and publishes; the others retry
// the lock every StandbyPoll. The leader reads the rows after its position
// in (tx_id, id) order, publishes them with one WriteMessages call
// (RequiredAcks all, keyed by project and aggregate so that each order stays
// on one partition), and stores the position of the last one after Kafka
// acknowledged every message (one row in outbox_relay_positions; rows are
// deleted after Retention by the global leader). A crash in between
// publishes them again: delivery is at least once, and consumers deduplicate
// by eventId. While Kafka is unreachable the rows stay and the relay retries
// with backoff; accepted writes never depend on Kafka.
//
// Each message has the headers eventId and type and, when the row was
// written in a span (its traceparent column), traceparent and tracestate:
// the context of the relay's publish span, a child of the writer's (the
// writer's own context unchanged while the relay records no spans).
//
// Ordering: tx_id is the writing transaction's id. The relay reads only rows
// of transactions older than every running one (tx_id <
// pg_snapshot_xmin(pg_current_snapshot())): those have all committed or
// rolled back, and every later row sorts after them, so a transaction that
// commits late is never skipped; it only holds the relay back while it runs
// (keep write transactions short). Two changes of one order are serialised
// by the order's row lock, so the later change's transaction commits after
// the earlier one. Its id can still be the smaller one (it wrote something
// before it waited for the lock), so the outbox's insert trigger raises a
// row's tx_id to the largest of its key's rows still there (migration
// 00060): the later change's rows sort after the earlier one's, and the
// order's events leave in commit order.
//
// Size: the broker refuses a record batch larger than its limit
// (MaxMessageBytes), and kafka-go fails the whole batch. The writer's
// BatchBytes is set so that no batch it assembles exceeds the limit, and a
// row whose message alone does not fit is never sent: it is moved to
// outbox_dead_letters (metric o2i_outbox_dead_letters_total, an error log)
// in the transaction that moves the position past it, so the rows behind it
// are published. When the broker refuses a batch as too large anyway (its
// limit is lower than configured), the rows are sent one by one and the one
// the broker refuses alone is dead-lettered the same way. Every other
// failure is retried with backoff, nothing skipped.
//
// Every database statement, broker write and lock attempt is bounded in
// time; a statement that overruns closes the leader's connection, which
// gives up the lock, and the relay starts over.
type Relay struct {
	Pool    *pgxpool.Pool
	Brokers []string

	BatchSize   int           // rows per publish; default 1000
	Poll        time.Duration // wait when the outbox is empty; default 10ms
	StandbyPoll time.Duration // how often a standby replica tries the leader lock; default 1s
	MaxBackoff  time.Duration // longest wait between failed publishes; default 5s
	Retention   time.Duration // how long published rows are kept before the leader deletes them; default 1h

	// MaxMessageBytes is the largest record batch the broker accepts on the
	// relay's topics: the broker's message.max.bytes, or the topic's
	// max.message.bytes when that is lower. Default DefaultMaxMessageBytes,
	// the default of Kafka and of the local stack's broker. Raising it needs
	// the broker's and topics' limits raised first and the consumers' fetch
	// size (MaxBytes, 10 MiB in the projector and invoicer) to stay above it.
	MaxMessageBytes int

	// Projects restricts the relay to these projects' rows, with its own
	// leader lock. For tests; a production relay leaves it empty.
	Projects []string

	Registerer prometheus.Registerer // nil: metrics are not exported
	Logger     *slog.Logger          // nil: slog.Default()

	// table is the outbox table (tests use copies); default Table.
	table string
	sql   relaySQL
	// beforeMark runs after a successful publish and before the position is
	// stored; tests use it to simulate a crash.
	beforeMark func(n int) error
	// afterRead runs after every read of the outbox with the rows read
	// (also 0); tests count the relay's cycles with it.
	afterRead func(n int)

	m *relayMetrics
}

// DefaultMaxMessageBytes is Kafka's default message.max.bytes (1 MiB plus
// the 12 bytes of a record batch's offset and length fields), which kfake
// also uses.
const DefaultMaxMessageBytes = 1048588

// recordBatchOverhead is the header of a Kafka record batch (magic 2): what
// a batch of messages takes on the wire beyond its records.
const recordBatchOverhead = 61

// Bounds of the relay's external calls.
const (
	dbTimeout      = 15 * time.Second // one database statement or transaction
	publishTimeout = 30 * time.Second // one WriteMessages call (the writer's own attempts within)
)

type relayMetrics struct {
	published   *prometheus.CounterVec
	errors      prometheus.Counter
	deadLetters prometheus.Counter
	backlog     prometheus.Gauge
	oldest      prometheus.Gauge
	leader      prometheus.Gauge
	batch       prometheus.Histogram
}

func newRelayMetrics(reg prometheus.Registerer) *relayMetrics {
	m := &relayMetrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2i_outbox_published_total", Help: "Events the relay published to Kafka, by topic.",
		}, []string{"topic"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "o2i_outbox_publish_errors_total", Help: "Failed publish attempts of the relay (the batch is retried).",
		}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "o2i_outbox_dead_letters_total", Help: "Outbox rows the relay could never publish (too large for the broker), kept in outbox_dead_letters.",
		}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "o2i_outbox_backlog", Help: "Outbox rows waiting to be published, sampled by the leading relay.",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "o2i_outbox_oldest_seconds", Help: "Age of the oldest outbox row waiting to be published (0: none), sampled by the leading relay.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "o2i_outbox_relay_leader", Help: "1 while this process holds the relay leader lock.",
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "o2i_outbox_publish_seconds", Help: "Duration of one batch publish to Kafka.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	if reg != nil {
		m.published = register(reg, m.published)
		m.errors = register(reg, m.errors)
		m.deadLetters = register(reg, m.deadLetters)
		m.backlog = register(reg, m.backlog)
		m.oldest = register(reg, m.oldest)
		m.leader = register(reg, m.leader)
		m.batch = register(reg, m.batch)
	}
	return m
}

// register registers c, or returns the collector already registered under its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

func (r *Relay) defaults() {
	if r.BatchSize <= 0 {
		r.BatchSize = 1000
	}
	if r.Poll <= 0 {
		r.Poll = 10 * time.Millisecond
	}
	if r.StandbyPoll <= 0 {
		r.StandbyPoll = time.Second
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 5 * time.Second
	}
	if r.Retention <= 0 {
		r.Retention = time.Hour
	}
	if r.MaxMessageBytes <= recordBatchOverhead {
		r.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.m == nil {
		r.m = newRelayMetrics(r.Registerer)
	}
	if r.table == "" {
		r.table = Table
	}
	r.sql = newRelaySQL(r.table)
}

func (r *Relay) lockKey() int64 {
	if len(r.Projects) == 0 && r.table == Table {
		return leaderLock
	}
	ps := slices.Clone(r.Projects)
	slices.Sort(ps)
	h := sha256.Sum256([]byte("o2i-relay:" + r.table + ":" + strings.Join(ps, ",")))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// Run relays until ctx ends; it returns nil then. Database and Kafka
// failures are logged and retried with backoff, never returned.
func (r *Relay) Run(ctx context.Context) error {
	r.defaults()
	backoff := newBackoff(r.MaxBackoff)
	for ctx.Err() == nil {
		led, err := r.lead(ctx)
		r.m.leader.Set(0)
		if ctx.Err() != nil {
			break
		}
		switch {
		case err != nil:
			r.Logger.Warn("outbox relay: database", "err", err)
			sleep(ctx, backoff.next())
		case !led:
			backoff.reset()
			sleep(ctx, r.StandbyPoll)
		}
	}
	return nil
}

// lead takes the leader lock on a dedicated connection and publishes until
// ctx ends or the connection fails. It reports whether it got the lock.
func (r *Relay) lead(ctx context.Context) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	conn, err := r.Pool.Acquire(actx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	key := r.lockKey()
	var ok bool
	if err := conn.QueryRow(actx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	defer func() {
		// Unlock unless the connection is gone (then the lock went with it),
		// and give the pool the connection with the server's plan choice.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			conn.Conn().Close(uctx)
			return
		}
		if _, err := conn.Exec(uctx, `RESET plan_cache_mode`); err != nil {
			conn.Conn().Close(uctx)
		}
	}()
	// The leader's statements keep their generic plans. The read of the
	// next rows (a hundred a second while idle, LIMIT $1 after a position)
	// is otherwise planned anew at every execution: the generic plan,
	// knowing neither the limit nor the position, costs more than any
	// custom plan, though it is the same index scan. The purge, whose
	// plan depends on its cutoff, runs with the server's choice.
	if _, err := conn.Exec(actx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		return true, err
	}
	r.m.leader.Set(1)
	pos, err := r.loadPosition(ctx, conn.Conn())
	if err != nil {
		return true, err
	}
	r.Logger.Info("outbox relay: leading", "projects", len(r.Projects), "txId", pos.txID, "id", pos.id)

	w := r.newWriter()
	defer func() { w.Close() }()
	backoff := newBackoff(r.MaxBackoff)
	var lastBacklog, lastPurge, lastChunk time.Time
	var purged position // the last row the purge deleted
	purging := false    // a purge has more rows to delete
	behind := false     // the last batch was full: more rows wait to be published
	for ctx.Err() == nil {
		if time.Since(lastBacklog) > 5*time.Second {
			r.sampleBacklog(ctx, pos)
			lastBacklog = time.Now()
		}
		if len(r.Projects) == 0 && purgeDue(purging, behind, time.Since(lastChunk), time.Since(lastPurge)) {
			more, err := r.purge(ctx, conn.Conn(), pos, &purged)
			if err != nil {
				return true, err
			}
			lastChunk = time.Now()
			if purging = more; !more {
				lastPurge = lastChunk
			}
		}
		n, err := r.relayBatch(ctx, conn.Conn(), w, &pos)
		behind = err == nil && n >= r.BatchSize
		var pub *publishError
		switch {
		case errors.As(err, &pub):
			if ctx.Err() != nil {
				return true, nil
			}
			r.m.errors.Inc()
			wait := backoff.next()
			r.Logger.Warn("outbox relay: publish failed, retrying", "err", pub.err, "events", n, "retryIn", wait)
			w.Close()
			w = r.newWriter() // start over with fresh connections and metadata
			sleep(ctx, wait)
		case err != nil:
			return true, err
		case n < r.BatchSize:
			backoff.reset()
			sleep(ctx, r.Poll)
		default:
			backoff.reset()
		}
	}
	return true, nil
}

func (r *Relay) newWriter() *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(r.Brokers...),
		Balancer:     &kafka.Hash{}, // one key, one partition
		RequiredAcks: kafka.RequireAll,
		BatchSize:    r.BatchSize,
		// kafka-go counts each message as messageBytes does, an upper bound
		// of its record; with the batch header a batch stays within the limit.
		BatchBytes:      int64(r.batchBytes()),
		BatchTimeout:    2 * time.Millisecond, // the default 1s would add a second to every publish
		MaxAttempts:     3,
		WriteBackoffMin: 20 * time.Millisecond,
		WriteBackoffMax: 200 * time.Millisecond,
		WriteTimeout:    10 * time.Second, // one produce request
		ReadTimeout:     10 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			r.Logger.Warn("outbox relay: kafka writer: " + fmt.Sprintf(msg, args...))
		}),
		Transport: &kafka.Transport{
			DialTimeout: 3 * time.Second,
			MetadataTTL: 10 * time.Second,
		},
	}
}

// batchBytes is the most a batch's messages may count (see messageBytes)
// so that the batch fits the broker's limit.
func (r *Relay) batchBytes() int { return r.MaxMessageBytes - recordBatchOverhead }

// messageBytes is what m counts against the writer's BatchBytes, computed as
// kafka-go computes it (message.totalSize: 22 bytes of fixed fields, the key,
// the value and the varint-framed headers). It is at least the size of m's
// record in a batch on the wire (varint lengths, about 12 bytes of fields),
// so a message of at most batchBytes fits the broker's limit alone.
func messageBytes(m kafka.Message) int {
	n := 22 + len(m.Key) + len(m.Value) + varintLen(len(m.Headers))
	for _, h := range m.Headers {
		n += varintLen(len(h.Key)) + len(h.Key) + varintLen(len(h.Value)) + len(h.Value)
	}
	return n
}

// varintLen is the length of n as a zig-zag varint.
func varintLen(n int) int {
	u := uint64(n) << 1
	l := 1
	for u >= 0x80 {
		u >>= 7
		l++
	}
	return l
}

// tooLarge reports whether the writer or the broker refused a message for
// its size (for a WriteErrors: any of them).
func tooLarge(err error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		return slices.ContainsFunc(we, func(e error) bool { return e != nil && tooLarge(e) })
	}
	// kafka.MessageTooLargeError (the writer's own check) unwraps to MessageSizeTooLarge.
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge)
}

type publishError struct{ err error }

func (e *publishError) Error() string { return "publish: " + e.err.Error() }

// position is where a relay stands: the (tx_id, id) of the last row it
// published; tx_id as text (xid8 has no binary codec in pgx).
type position struct {
	txID string
	id   int64
}

type relaySQL struct {
	selectAll, selectProjects, savePosition, loadPosition, purge, backlog, backlogProjects, oldest, oldestProjects, deadLetter string
}

func newRelaySQL(table string) relaySQL {
	// The text of tx_id is read under another name: ORDER BY tx_id would
	// otherwise sort by the output column, the text, where "10" comes
	// before "9" and a batch would move the position past rows it skipped.
	cols := `SELECT o.id, o.tx_id::text AS tx_text, o.topic, o.msg_key, o.event_id, o.event_type, o.payload, o.traceparent, o.tracestate FROM ` + table + ` o`
	after := ` WHERE (o.tx_id, o.id) > ($2::text::xid8, $3::bigint) AND o.tx_id < pg_snapshot_xmin(pg_current_snapshot())`
	return relaySQL{
		selectAll:      cols + after + ` ORDER BY o.tx_id, o.id LIMIT $1`,
		selectProjects: cols + after + ` AND o.project_id = ANY($4::uuid[]) ORDER BY o.tx_id, o.id LIMIT $1`,
		savePosition: `INSERT INTO outbox_relay_positions (relay, tx_id, id) VALUES ($1, $2::text::xid8, $3)
  ON CONFLICT (relay) DO UPDATE SET tx_id = EXCLUDED.tx_id, id = EXCLUDED.id, updated_at = now()`,
		loadPosition: `SELECT tx_id::text, id FROM outbox_relay_positions WHERE relay = $1`,
		// The next chunk in position order after the purge's cursor, up to
		// the relay's position: its leading rows written before the cutoff
		// are deleted, up to the first newer one (where the purge stops).
		// The index range starts at the cursor, so the dead entries of the
		// chunks deleted before are not walked again.
		purge: `WITH chunk AS MATERIALIZED (
  SELECT ctid, tx_id, id, created_at < $1 AS old FROM ` + table + `
  WHERE (tx_id, id) > ($2::text::xid8, $3::bigint) AND (tx_id, id) <= ($4::text::xid8, $5::bigint)
  ORDER BY tx_id, id LIMIT ` + strconv.Itoa(purgeChunk) + `),
stop AS (SELECT tx_id, id FROM chunk WHERE NOT old ORDER BY tx_id, id LIMIT 1),
gone AS (
  DELETE FROM ` + table + ` o USING chunk c
  WHERE o.ctid = c.ctid AND c.old AND NOT EXISTS (SELECT 1 FROM stop s WHERE (c.tx_id, c.id) > (s.tx_id, s.id))
  RETURNING c.tx_id, c.id)
SELECT (SELECT count(*) FROM chunk), EXISTS (SELECT 1 FROM stop),
  coalesce((SELECT tx_id::text FROM gone ORDER BY tx_id DESC, id DESC LIMIT 1), ''),
  coalesce((SELECT id FROM gone ORDER BY tx_id DESC, id DESC LIMIT 1), 0)`,
		backlog:         `SELECT count(*) FROM (SELECT 1 FROM ` + table + ` WHERE (tx_id, id) > ($1::text::xid8, $2::bigint) LIMIT 10000000) o`,
		backlogProjects: `SELECT count(*) FROM ` + table + ` WHERE (tx_id, id) > ($1::text::xid8, $2::bigint) AND project_id = ANY($3::uuid[])`,
		// The next row to publish is about the oldest waiting (a late commit's row can be older; it is near).
		oldest: `SELECT coalesce((SELECT extract(epoch FROM now() - created_at)::float8 FROM ` + table +
			` WHERE (tx_id, id) > ($1::text::xid8, $2::bigint) ORDER BY tx_id, id LIMIT 1), 0)`,
		oldestProjects: `SELECT coalesce((SELECT extract(epoch FROM now() - created_at)::float8 FROM ` + table +
			` WHERE (tx_id, id) > ($1::text::xid8, $2::bigint) AND project_id = ANY($3::uuid[]) ORDER BY tx_id, id LIMIT 1), 0)`,
		// The payload is copied in the database rather than sent back.
		deadLetter: `INSERT INTO outbox_dead_letters (relay, outbox_id, tx_id, project_id, topic, msg_key, event_id, event_type,
    payload, payload_bytes, message_bytes, error)
  SELECT $1, id, tx_id, project_id, topic, msg_key, event_id, event_type, payload, octet_length(payload), $3, $4
  FROM ` + table + ` WHERE tx_id = $5::text::xid8 AND id = $2
  ON CONFLICT (relay, outbox_id) DO NOTHING`,
	}
}

// loadPosition reads the relay's stored position; a relay that never
// published starts before the first row.
func (r *Relay) loadPosition(ctx context.Context, conn *pgx.Conn) (position, error) {
	qctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	pos := position{txID: "0"}
	err := conn.QueryRow(qctx, r.sql.loadPosition, r.lockKey()).Scan(&pos.txID, &pos.id)
	if errors.Is(err, pgx.ErrNoRows) {
		return position{txID: "0"}, nil
	}
	if err != nil {
		return position{}, fmt.Errorf("read relay position: %w", err)
	}
	return pos, nil
}

// row is an outbox row as the message the relay publishes. span is the
// row's publish span, a child of the trace context the row was written
// with; the message's traceparent and tracestate headers carry it on.
type row struct {
	pos          position
	eventID, typ string
	msg          kafka.Message
	span         trace.Span
}

// relayBatch publishes the rows after pos and advances pos past them; it
// returns how many rows it read. A Kafka failure is a *publishError. A row
// too large for the broker is dead-lettered instead (see Relay).
func (r *Relay) relayBatch(ctx context.Context, conn *pgx.Conn, w *kafka.Writer, pos *position) (_ int, err error) {
	rows, err := r.read(ctx, conn, *pos)
	if err != nil {
		return 0, err
	}
	defer func() {
		for _, o := range rows {
			tracing.End(o.span, err)
		}
	}()
	if r.afterRead != nil {
		r.afterRead(len(rows))
	}
	if len(rows) == 0 {
		return 0, nil
	}
	// A row that cannot fit is never sent: the rows before it are published
	// now, and it is dead-lettered once it is the first row read.
	batch := rows
	if i := slices.IndexFunc(rows, func(o row) bool { return messageBytes(o.msg) > r.batchBytes() }); i == 0 {
		cause := fmt.Sprintf("message of %d bytes exceeds the relay's limit of %d bytes (MaxMessageBytes %d less the record batch header)",
			messageBytes(rows[0].msg), r.batchBytes(), r.MaxMessageBytes)
		return len(rows), r.deadLetter(ctx, conn, rows[0], pos, cause)
	} else if i > 0 {
		batch = rows[:i]
	}
	err = r.publish(ctx, w, batch)
	if err != nil && tooLarge(err) && ctx.Err() == nil {
		return len(rows), r.publishEach(ctx, conn, w, batch, pos, err)
	}
	if err != nil {
		return len(rows), &publishError{err: err}
	}
	if r.beforeMark != nil {
		if err := r.beforeMark(len(batch)); err != nil {
			return len(rows), err
		}
	}
	last := batch[len(batch)-1].pos
	if err := r.savePosition(ctx, conn, last); err != nil {
		return len(rows), err
	}
	*pos = last
	for _, o := range batch {
		r.m.published.WithLabelValues(o.msg.Topic).Inc()
	}
	return len(rows), nil
}

// read returns up to BatchSize rows after pos.
func (r *Relay) read(ctx context.Context, conn *pgx.Conn, pos position) ([]row, error) {
	qctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	var rows pgx.Rows
	var err error
	if len(r.Projects) == 0 {
		rows, err = conn.Query(qctx, r.sql.selectAll, r.BatchSize, pos.txID, pos.id)
	} else {
		rows, err = conn.Query(qctx, r.sql.selectProjects, r.BatchSize, pos.txID, pos.id, r.Projects)
	}
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	out := make([]row, 0, r.BatchSize)
	for rows.Next() {
		var o row
		var topic, key string
		var payload []byte
		var traceparent, tracestate *string
		if err := rows.Scan(&o.pos.id, &o.pos.txID, &topic, &key, &o.eventID, &o.typ, &payload, &traceparent, &tracestate); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		sctx, span := tracing.Produce(tracing.FromContext(ctx, deref(traceparent), deref(tracestate)), topic,
			tracing.EventID.String(o.eventID), tracing.EventType.String(o.typ))
		o.span = span
		o.msg = kafka.Message{
			Topic: topic, Key: []byte(key), Value: payload,
			Headers: append([]kafka.Header{{Key: "eventId", Value: []byte(o.eventID)}, {Key: "type", Value: []byte(o.typ)}},
				tracing.Headers(sctx)...),
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// publish writes the rows' messages and waits for the broker's acks.
func (r *Relay) publish(ctx context.Context, w *kafka.Writer, rows []row) error {
	msgs := make([]kafka.Message, len(rows))
	for i, o := range rows {
		msgs[i] = o.msg
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := w.WriteMessages(pctx, msgs...); err != nil {
		return err
	}
	r.m.batch.Observe(time.Since(start).Seconds())
	return nil
}

// publishEach publishes rows one at a time, in order, after the broker
// refused their batch (err) as too large: its limit is lower than
// MaxMessageBytes, or a batch of several messages did not fit. Rows the
// batch got through are not sent again; a row refused alone is
// dead-lettered. Any other error stops it with the position after the last
// row handled.
func (r *Relay) publishEach(ctx context.Context, conn *pgx.Conn, w *kafka.Writer, rows []row, pos *position, err error) error {
	var we kafka.WriteErrors
	sent := func(i int) bool { return errors.As(err, &we) && len(we) == len(rows) && we[i] == nil }
	var done *position // handled (published) but the position not stored yet
	store := func() error {
		if done == nil {
			return nil
		}
		if err := r.savePosition(ctx, conn, *done); err != nil {
			return err
		}
		*pos, done = *done, nil
		return nil
	}
	for i, o := range rows {
		var perr error
		if !sent(i) {
			perr = r.publish(ctx, w, []row{o})
		}
		switch {
		case perr != nil && tooLarge(perr) && ctx.Err() == nil:
			// Its transaction stores the position past the rows before it too.
			if err := r.deadLetter(ctx, conn, o, pos, "refused by Kafka: "+perr.Error()); err != nil {
				return err
			}
			done = nil
		case perr != nil:
			if err := store(); err != nil {
				return err
			}
			return &publishError{err: perr}
		default:
			done = &o.pos
			r.m.published.WithLabelValues(o.msg.Topic).Inc()
		}
	}
	return store()
}

func (r *Relay) savePosition(ctx context.Context, conn *pgx.Conn, p position) error {
	sctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := conn.Exec(sctx, r.sql.savePosition, r.lockKey(), p.txID, p.id); err != nil {
		return fmt.Errorf("store relay position: %w", err)
	}
	return nil
}

// deadLetter copies row o into outbox_dead_letters and moves the position
// past it, in one transaction.
func (r *Relay) deadLetter(ctx context.Context, conn *pgx.Conn, o row, pos *position, cause string) error {
	dctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	size := messageBytes(o.msg)
	err := pgx.BeginFunc(dctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(dctx, r.sql.deadLetter, r.lockKey(), o.pos.id, size, cause, o.pos.txID); err != nil {
			return err
		}
		_, err := tx.Exec(dctx, r.sql.savePosition, r.lockKey(), o.pos.txID, o.pos.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("dead-letter outbox row %d: %w", o.pos.id, err)
	}
	*pos = o.pos
	r.m.deadLetters.Inc()
	r.Logger.ErrorContext(trace.ContextWithSpan(ctx, o.span), "outbox relay: dead letter: the row can never be published, moved to outbox_dead_letters",
		"id", o.pos.id, "topic", o.msg.Topic, "key", string(o.msg.Key), "eventId", o.eventID, "type", o.typ,
		"bytes", size, "maxMessageBytes", r.MaxMessageBytes, "err", cause)
	return nil
}

// sampleBacklog sets the backlog and oldest-row gauges. It counts on a
// pooled connection: a slow count must not cost the leader its connection
// (and lock).
func (r *Relay) sampleBacklog(ctx context.Context, pos position) {
	bctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if n, err := r.backlog(bctx, r.Pool, pos); err == nil {
		r.m.backlog.Set(float64(n))
	}
	var age float64
	var err error
	if len(r.Projects) == 0 {
		err = r.Pool.QueryRow(bctx, r.sql.oldest, pos.txID, pos.id).Scan(&age)
	} else {
		err = r.Pool.QueryRow(bctx, r.sql.oldestProjects, pos.txID, pos.id, r.Projects).Scan(&age)
	}
	if err == nil {
		r.m.oldest.Set(max(age, 0))
	}
}

// backlog counts the rows after pos (committed or not yet visible).
func (r *Relay) backlog(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, pos position) (int64, error) {
	var n int64
	var err error
	if len(r.Projects) == 0 {
		err = q.QueryRow(ctx, r.sql.backlog, pos.txID, pos.id).Scan(&n)
	} else {
		err = q.QueryRow(ctx, r.sql.backlogProjects, pos.txID, pos.id, r.Projects).Scan(&n)
	}
	return n, err
}

type backoff struct {
	cur, max time.Duration
}

func newBackoff(max time.Duration) *backoff { return &backoff{max: max} }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = 100 * time.Millisecond
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// purge deletes the next chunk (at most 10,000) of the published (or
// dead-lettered) rows written longer than Retention ago, in position order
// from *cursor (the last row it deleted; the start when zero), and reports
// whether more may be left. The relay deletes a chunk per round between its
// publishing (see purgeDue), so a large purge (after a burst of millions of
// orders) never holds publishing back for longer than one chunk.
func (r *Relay) purge(ctx context.Context, conn *pgx.Conn, pos position, cursor *position) (more bool, err error) {
	cutoff := time.Now().Add(-r.Retention)
	from := *cursor
	if from.txID == "" {
		from = position{txID: "0"}
	}
	pctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	var chunk int
	var stopped bool
	var last position
	err = pgx.BeginFunc(pctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(pctx, `SET LOCAL plan_cache_mode = auto`); err != nil {
			return err
		}
		return tx.QueryRow(pctx, r.sql.purge, cutoff, from.txID, from.id, pos.txID, pos.id).Scan(&chunk, &stopped, &last.txID, &last.id)
	})
	if err != nil {
		return false, fmt.Errorf("purge sent outbox rows: %w", err)
	}
	if last.txID != "" {
		*cursor = last
	}
	return chunk == purgeChunk && !stopped, nil
}

// purgeChunk is the most rows one purge statement deletes.
const purgeChunk = 10000

// purgeDue decides whether the relay deletes a chunk of old rows before its
// next batch. A purge starts a minute after the last one ended; while it has
// more to delete, it takes a chunk each round once the relay has caught up
// (its last batch was not full), but at most one chunk a second while rows
// wait to be published. So a backlog of old rows (after a burst of millions
// of orders) never slows publishing under load by more than one chunk a
// second, and still shrinks faster than any sustained peak adds rows.
func purgeDue(purging, behind bool, sinceChunk, sincePurge time.Duration) bool {
	return (purging || sincePurge > time.Minute) && (!behind || sinceChunk > time.Second)
}

// Backlog counts the outbox rows the service's relay has not published yet.
func Backlog(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return backlogOf(ctx, pool, Table, leaderLock)
}

// backlogOf counts the rows of table after the stored position of the relay
// with lock key relay (all rows when it never published).
func backlogOf(ctx context.Context, pool *pgxpool.Pool, table string, relay int64) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `WITH p AS (
  SELECT coalesce(max(tx_id), '0') AS tx_id, coalesce(max(id), 0) AS id FROM outbox_relay_positions WHERE relay = $1)
SELECT count(*) FROM p JOIN `+table+` o ON (o.tx_id, o.id) > (p.tx_id, p.id)`, relay).Scan(&n)
	return n, err
}
