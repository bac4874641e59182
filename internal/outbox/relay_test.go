package outbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/internal/tracing"
)

// seq is the payload of the test events: which order and which step.
type seq struct {
	OrderNo string `json:"orderNo"`
	N       int64  `json:"n"`
}

// fixture is one relay test's own outbox table (a copy of the real one, so
// that a relay of a running service cannot take the test's rows) and topic.
type fixture struct {
	pool    *pgxpool.Pool
	project string
	table   string
	topic   string
	steps   int // steps enqueued so far
}

func newFixture(t *testing.T, topic string) *fixture {
	t.Helper()
	pool := testenv.Pool(t)
	f := &fixture{pool: pool, project: testenv.Project(t, pool, true), topic: topic,
		table: "outbox_test_" + strings.ReplaceAll(uuid.NewString()[:13], "-", "")}
	if _, err := pool.Exec(context.Background(), `CREATE TABLE `+f.table+` (LIKE outbox INCLUDING ALL)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP TABLE `+f.table) })
	keyOrderTrigger(t, pool, f.table)
	return f
}

// keyOrderTrigger gives a test's outbox table the outbox's trigger that keeps
// a key's rows in commit order: the production function, reading table.
func keyOrderTrigger(t *testing.T, pool *pgxpool.Pool, table string) {
	t.Helper()
	ctx := context.Background()
	var def string
	if err := pool.QueryRow(ctx, `SELECT pg_get_functiondef('outbox_key_order'::regproc)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	fn := table + "_key_order"
	def = regexp.MustCompile(`FUNCTION \S*outbox_key_order\(\)`).ReplaceAllString(def, "FUNCTION "+fn+"()")
	if !strings.Contains(def, "FROM outbox WHERE") {
		t.Fatalf("the outbox trigger function reads no outbox rows:\n%s", def)
	}
	def = strings.Replace(def, "FROM outbox WHERE", "FROM "+table+" WHERE", 1)
	if _, err := pool.Exec(ctx, def); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TRIGGER key_order BEFORE INSERT ON `+table+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP FUNCTION IF EXISTS `+fn+`() CASCADE`) })
}

// testTopic creates a fresh topic on the local broker.
func testTopic(t *testing.T) string {
	t.Helper()
	topic := "o2i.test." + uuid.NewString()[:8]
	conn, err := kafka.Dial("tcp", testenv.KafkaBrokers()[0])
	if err != nil {
		t.Fatalf("Kafka-protocol broker of the local stack is required: %v", err)
	}
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 6, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	return topic
}

func (f *fixture) relay(brokers []string) *Relay {
	return &Relay{Pool: f.pool, Brokers: brokers, Projects: []string{f.project}, Poll: 5 * time.Millisecond,
		StandbyPoll: 50 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, table: f.table}
}

// countReads counts r's reads of the outbox; r must not run yet.
func countReads(r *Relay) *atomic.Int64 {
	var reads atomic.Int64
	r.afterRead = func(int) { reads.Add(1) }
	return &reads
}

// enqueue commits one transaction per step: orders x steps events,
// interleaved across the orders. It returns the event ids in commit order.
func (f *fixture) enqueue(t *testing.T, orders, steps int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	first := f.steps + 1
	f.steps += steps
	for s := first; s <= f.steps; s++ {
		for o := 0; o < orders; o++ {
			no := fmt.Sprintf("ORD-%d", o)
			ev, err := event.New(event.OrderUpdated, f.project, "order", "", no, int64(s), time.Now(), seq{no, int64(s)})
			if err != nil {
				t.Fatal(err)
			}
			ev.Topic = f.topic
			if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error { return enqueueInto(ctx, tx, insertSQL(f.table), ev) }); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		}
	}
	return ids
}

func (f *fixture) unsent(t *testing.T) int {
	t.Helper()
	r := f.relay(nil)
	n, err := backlogOf(context.Background(), f.pool, f.table, r.lockKey())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// startRelay runs r until the test ends or the returned stop is called.
func startRelay(t *testing.T, r *Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			t.Errorf("relay: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// tail reads topic from the current end of every partition on.
type tail struct {
	readers []*kafka.Reader
}

func newTail(t *testing.T, brokers []string, topic string, fromStart bool) *tail {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers[0])
	if err != nil {
		t.Fatalf("Kafka-protocol broker %v is required: %v", brokers, err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tail{}
	for _, p := range parts {
		lc, err := kafka.DialLeader(context.Background(), "tcp", brokers[0], topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		end, err := lc.ReadLastOffset()
		lc.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p.ID, MaxWait: 50 * time.Millisecond})
		if fromStart {
			end = kafka.FirstOffset
		}
		if err := r.SetOffset(end); err != nil {
			t.Fatal(err)
		}
		tl.readers = append(tl.readers, r)
	}
	t.Cleanup(func() {
		for _, r := range tl.readers {
			r.Close()
		}
	})
	return tl
}

// got is one consumed event with its partition.
type got struct {
	ev        event.Event
	partition int
	key       string
	headers   []kafka.Header
}

// collect reads until every id in want was seen (duplicates are kept) or
// the deadline passes; only messages keyed with the project are returned.
func (tl *tail) collect(t *testing.T, project string, want []string, d time.Duration) []got {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var out []got
	seen := map[string]bool{}
	missing := func() int {
		n := 0
		for _, id := range want {
			if !seen[id] {
				n++
			}
		}
		return n
	}
	var wg sync.WaitGroup
	for _, r := range tl.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				if !strings.HasPrefix(string(m.Key), project+"/") {
					continue
				}
				ev, err := event.Decode(m.Value)
				if err != nil {
					t.Errorf("decode: %v", err)
					continue
				}
				mu.Lock()
				out = append(out, got{ev, m.Partition, string(m.Key), m.Headers})
				seen[ev.ID] = true
				if missing() == 0 {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n := missing(); n > 0 {
		t.Fatalf("%d of %d events not published within %v", n, len(want), d)
	}
	return out
}

// checkOrder asserts that each key's events came in commit order (after
// dropping redeliveries), all on one partition.
func checkOrder(t *testing.T, gs []got) {
	t.Helper()
	last := map[string]int64{}
	part := map[string]int{}
	dup := map[string]bool{}
	for _, g := range gs {
		if p, ok := part[g.key]; ok && p != g.partition {
			t.Errorf("key %s on partitions %d and %d", g.key, p, g.partition)
		}
		part[g.key] = g.partition
		if dup[g.ev.ID] {
			continue
		}
		dup[g.ev.ID] = true
		if g.ev.AggregateVersion <= last[g.key] {
			t.Errorf("key %s: version %d after %d", g.key, g.ev.AggregateVersion, last[g.key])
		}
		last[g.key] = g.ev.AggregateVersion
	}
}

func TestEnqueueIsTransactional(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	project := testenv.Project(t, pool, true)
	ctx := context.Background()
	rows := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE project_id = $1`, project).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ev, err := event.New(event.OrderCreated, project, "order", uuid.NewString(), "A-1", 1, time.Now(), seq{"A-1", 1})
	if err != nil {
		t.Fatal(err)
	}
	rolledBack := errors.New("business rule failed")
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := Enqueue(ctx, tx, ev); err != nil {
			return err
		}
		return rolledBack
	})
	if !errors.Is(err, rolledBack) {
		t.Fatal(err)
	}
	if n := rows(); n != 0 {
		t.Fatalf("a rolled-back transaction left %d outbox rows", n)
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return Enqueue(ctx, tx, ev) }); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Fatalf("a committed transaction left %d outbox rows, want 1", n)
	}
	var topic, key string
	var payload []byte
	if err := pool.QueryRow(ctx, `SELECT topic, msg_key, payload FROM outbox WHERE project_id = $1`, project).Scan(&topic, &key, &payload); err != nil {
		t.Fatal(err)
	}
	back, err := event.Decode(payload)
	if err != nil || topic != event.TopicOrders || key != project+"/A-1" || back.ID != ev.ID || back.AggregateVersion != 1 {
		t.Errorf("row topic %q key %q event %+v (%v)", topic, key, back, err)
	}
}

// TestRelayPublishesInOrder runs several replicas against the local broker:
// one leads, every committed event is published, each order's events in
// order on one partition; a leader that goes away is replaced.
// TestRelayPassesTheTraceContextOn: a row written in a span goes out with
// the span's traceparent and tracestate headers, also while this process
// records no spans (the trace context passes through unchanged); a row
// written without a span gets none.
func TestRelayPassesTheTraceContextOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	brokers := testenv.KafkaBrokers()
	stop := startRelay(t, f.relay(brokers))
	defer stop()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := context.Background()
	var ids []string
	for _, c := range []context.Context{tracing.FromContext(ctx, parent, "vendor=x"), ctx} {
		ev, err := event.New(event.OrderUpdated, f.project, "order", "", "ORD-T", int64(len(ids)+1), time.Now(), seq{"ORD-T", int64(len(ids) + 1)})
		if err != nil {
			t.Fatal(err)
		}
		ev.Topic = f.topic
		if err := pgx.BeginFunc(c, f.pool, func(tx pgx.Tx) error { return enqueueInto(c, tx, insertSQL(f.table), ev) }); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	header := func(hs []kafka.Header, k string) string {
		for _, h := range hs {
			if h.Key == k {
				return string(h.Value)
			}
		}
		return ""
	}
	for _, g := range newTail(t, brokers, f.topic, true).collect(t, f.project, ids, 30*time.Second) {
		tp, ts := header(g.headers, "traceparent"), header(g.headers, "tracestate")
		switch g.ev.ID {
		case ids[0]:
			if tp != parent || ts != "vendor=x" {
				t.Errorf("row written in a span: traceparent %q, tracestate %q; want %q, %q", tp, ts, parent, "vendor=x")
			}
		case ids[1]:
			if tp != "" || ts != "" {
				t.Errorf("row written without a span: traceparent %q, tracestate %q", tp, ts)
			}
		}
		if header(g.headers, "eventId") != g.ev.ID {
			t.Errorf("eventId header %q, want %q", header(g.headers, "eventId"), g.ev.ID)
		}
	}
}

func TestRelayPublishesInOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	brokers := testenv.KafkaBrokers()
	var stops []func()
	for range 3 {
		r := f.relay(brokers)
		r.BatchSize = 50
		stops = append(stops, startRelay(t, r))
	}
	ids := f.enqueue(t, 8, 25)
	testenv.Eventually(t, 30*time.Second, "some events sent", func() bool { return f.unsent(t) < len(ids) })
	for _, stop := range stops[:2] { // whichever leads, one is left
		stop()
	}
	ids = append(ids, f.enqueue(t, 8, 5)...)
	gs := newTail(t, brokers, f.topic, true).collect(t, f.project, ids, 60*time.Second)
	checkOrder(t, gs)
	testenv.Eventually(t, 10*time.Second, "position past every row", func() bool { return f.unsent(t) == 0 })
	for _, g := range gs {
		if g.ev.ProjectID != f.project || g.ev.Type != event.OrderUpdated {
			t.Fatalf("event %+v", g.ev)
		}
	}
}

// TestRelayKeepsAKeyInCommitOrder: a transaction that took its id before
// another one (it wrote first) but waited for it and commits after it still
// has its event of the same key published after the other one's.
func TestRelayKeepsAKeyInCommitOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	ctx := context.Background()
	event1 := func(version int64) event.Event {
		ev, err := event.New(event.OrderUpdated, f.project, "order", "", "ORD-X", version, time.Now(), seq{"ORD-X", version})
		if err != nil {
			t.Fatal(err)
		}
		ev.Topic = f.topic
		return ev
	}
	// The later change's transaction takes its id first.
	later, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Rollback(ctx)
	var laterID, earlierID string
	if err := later.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&laterID); err != nil {
		t.Fatal(err)
	}
	first, second := event1(1), event1(2)
	if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&earlierID); err != nil {
			return err
		}
		return enqueueInto(ctx, tx, insertSQL(f.table), first)
	}); err != nil {
		t.Fatal(err)
	}
	if err := enqueueInto(ctx, later, insertSQL(f.table), second); err != nil {
		t.Fatal(err)
	}
	if err := later.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var ordered bool
	if err := f.pool.QueryRow(ctx, `SELECT $1::text::xid8 < $2::text::xid8`, laterID, earlierID).Scan(&ordered); err != nil || !ordered {
		t.Fatalf("the later transaction's id %s is not below the earlier one's %s (%v)", laterID, earlierID, err)
	}
	startRelay(t, f.relay(testenv.KafkaBrokers()))
	gs := newTail(t, testenv.KafkaBrokers(), f.topic, true).collect(t, f.project, []string{first.ID, second.ID}, 30*time.Second)
	if len(gs) != 2 || gs[0].ev.ID != first.ID || gs[1].ev.ID != second.ID {
		var got []int64
		for _, g := range gs {
			got = append(got, g.ev.AggregateVersion)
		}
		t.Fatalf("published versions %v, want [1 2]", got)
	}
}

// TestRelayCrashRepublishes: a relay that dies after Kafka acknowledged but
// before storing its position leaves them to the next relay: published again,
// never lost.
func TestRelayCrashRepublishes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	brokers := testenv.KafkaBrokers()
	ids := f.enqueue(t, 3, 4)

	// The first relay publishes, then "crashes" before storing its position.
	ctx1, kill := context.WithCancel(context.Background())
	defer kill()
	crashed := make(chan struct{})
	r1 := f.relay(brokers)
	r1.beforeMark = func(n int) error {
		if n < len(ids) {
			// Not every row was visible to this round yet (a transaction of
			// a parallel test held the snapshot back): fail before marking,
			// so the relay publishes them again with the rest.
			return errors.New("not yet: publish again")
		}
		kill()
		close(crashed)
		return errors.New("crash")
	}
	done := make(chan struct{})
	go func() { defer close(done); r1.Run(ctx1) }()
	<-crashed
	<-done
	tl := newTail(t, brokers, f.topic, true)
	first := tl.collect(t, f.project, ids, 30*time.Second)
	// Rounds that saw only some rows published those twice (at least once).
	distinct := map[string]bool{}
	for _, g := range first {
		distinct[g.ev.ID] = true
	}
	if len(distinct) != len(ids) {
		t.Fatalf("first publish: %d distinct events, want %d", len(distinct), len(ids))
	}
	if n := f.unsent(t); n != len(ids) {
		t.Fatalf("%d unsent rows after the crash, want %d", n, len(ids))
	}

	// The next relay publishes them again and marks them.
	startRelay(t, f.relay(brokers))
	again := tl.collect(t, f.project, ids, 30*time.Second)
	checkOrder(t, append(first, again...))
	testenv.Eventually(t, 10*time.Second, "position past every row", func() bool { return f.unsent(t) == 0 })
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startBroker(t *testing.T, port int) *kfake.Cluster {
	t.Helper()
	var c *kfake.Cluster
	var err error
	testenv.Eventually(t, 5*time.Second, fmt.Sprintf("a broker on port %d (it may linger briefly after a close)", port), func() bool {
		c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(6, event.TopicOrders))
		return err == nil
	})
	return c
}

// TestRelayKafkaDownAndBack: while the broker is unreachable, committed
// events wait in the outbox; when it is back, the relay drains them.
func TestRelayKafkaDownAndBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, event.TopicOrders)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	// Nothing listens yet: the relay retries, rows stay.
	r := f.relay([]string{addr})
	reads := countReads(r)
	startRelay(t, r)
	ids := f.enqueue(t, 4, 5)
	from := reads.Load()
	testenv.Eventually(t, 10*time.Second, "two publish attempts", func() bool { return reads.Load() >= from+2 })
	if n := f.unsent(t); n != len(ids) {
		t.Fatalf("%d of %d rows left while Kafka is down", n, len(ids))
	}

	// The broker comes up: everything is published.
	broker := startBroker(t, port)
	checkOrder(t, newTail(t, []string{addr}, f.topic, true).collect(t, f.project, ids, 30*time.Second))
	testenv.Eventually(t, 10*time.Second, "outbox drained", func() bool { return f.unsent(t) == 0 })

	// It goes down again: new events wait ...
	broker.Close()
	more := f.enqueue(t, 4, 3)
	from = reads.Load()
	testenv.Eventually(t, 10*time.Second, "two publish attempts", func() bool { return reads.Load() >= from+2 })
	if n := f.unsent(t); n != len(more) {
		t.Fatalf("%d of %d new rows left while Kafka is down again", n, len(more))
	}
	// ... and are published when it is back (a new, empty broker).
	broker = startBroker(t, port)
	defer broker.Close()
	gs := newTail(t, []string{addr}, f.topic, true).collect(t, f.project, more, 30*time.Second)
	checkOrder(t, gs)
	testenv.Eventually(t, 10*time.Second, "outbox drained again", func() bool { return f.unsent(t) == 0 })
	if slices.ContainsFunc(gs, func(g got) bool { return g.ev.ProjectID != f.project }) {
		t.Error("foreign event")
	}
}

// TestRelayNeverSkipsALateCommit: a transaction that wrote its event first
// but commits after a later one was published is published too, and the
// relay's position never passes a transaction that is still running.
func TestRelayNeverSkipsALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, testTopic(t))
	brokers := testenv.KafkaBrokers()
	newEvent := func(no string) event.Event {
		ev, err := event.New(event.OrderUpdated, f.project, "order", "", no, 1, time.Now(), seq{no, 1})
		if err != nil {
			t.Fatal(err)
		}
		ev.Topic = f.topic
		return ev
	}
	late := newEvent("LATE")
	slow, err := f.pool.Begin(ctx) // writes first, commits last
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	if err := enqueueInto(ctx, slow, insertSQL(f.table), late); err != nil {
		t.Fatal(err)
	}
	early := newEvent("EARLY")
	if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error { return enqueueInto(ctx, tx, insertSQL(f.table), early) }); err != nil {
		t.Fatal(err)
	}
	r := f.relay(brokers)
	reads := countReads(r)
	startRelay(t, r)
	tl := newTail(t, brokers, f.topic, true)
	// While the slow transaction runs, nothing after it is published: the
	// committed event waits, so the position cannot pass the late one.
	testenv.Eventually(t, 10*time.Second, "three reads of the outbox", func() bool { return reads.Load() >= 3 })
	if n := f.unsent(t); n != 1 { // the running transaction's row is not visible yet
		var dump string
		f.pool.QueryRow(ctx, `SELECT string_agg(tx_id::text || '/' || id || '/' || msg_key, ' ') || ' pos ' || coalesce((SELECT string_agg(tx_id::text || '/' || id, ',') FROM outbox_relay_positions WHERE relay = $1), '-') || ' xmin ' || pg_snapshot_xmin(pg_current_snapshot())::text FROM `+f.table, f.relay(nil).lockKey()).Scan(&dump)
		t.Fatalf("%d rows waiting while an older transaction runs, want 1 (the committed one must wait): %s", n, dump)
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tl.collect(t, f.project, []string{late.ID, early.ID}, 30*time.Second)
	testenv.Eventually(t, 10*time.Second, "position past both", func() bool { return f.unsent(t) == 0 })
}

// padded is a test event's payload made as large as a test needs.
type padded struct {
	seq
	Pad string `json:"pad"`
}

// eventOfSize returns an event of order no at version v whose message, as
// the relay builds it, counts size bytes (messageBytes).
func (f *fixture) eventOfSize(t *testing.T, no string, v int64, size int) event.Event {
	t.Helper()
	build := func(pad int) (event.Event, int) {
		ev, err := event.New(event.OrderUpdated, f.project, "order", "", no, v, time.Now(), padded{seq{no, v}, strings.Repeat("x", pad)})
		if err != nil {
			t.Fatal(err)
		}
		ev.Topic = f.topic
		row, err := RowOf(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return ev, messageBytes(kafka.Message{Topic: row.Topic, Key: []byte(row.Key), Value: row.Payload, Headers: []kafka.Header{
			{Key: "eventId", Value: []byte(row.EventID)}, {Key: "type", Value: []byte(row.Type)}}})
	}
	// The padding is encoded byte for byte; other fields (a timestamp) may
	// vary by a byte or two between builds, so adjust until it is exact.
	pad := 0
	for range 10 {
		ev, got := build(pad)
		if got == size {
			return ev
		}
		pad += size - got
	}
	t.Fatalf("no event of exactly %d bytes", size)
	return event.Event{}
}

// commit commits each event in its own transaction, in order.
func (f *fixture) commit(t *testing.T, evs ...event.Event) {
	t.Helper()
	ctx := context.Background()
	for _, ev := range evs {
		if err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error { return enqueueInto(ctx, tx, insertSQL(f.table), ev) }); err != nil {
			t.Fatal(err)
		}
	}
}

// deadLetter is a row of outbox_dead_letters.
type deadLetter struct {
	eventID, topic, key, err   string
	payloadBytes, messageBytes int
	storedPayload              int
}

func (f *fixture) deadLetters(t *testing.T, r *Relay) []deadLetter {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT event_id::text, topic, msg_key, error, payload_bytes, message_bytes,
		octet_length(payload) FROM outbox_dead_letters WHERE relay = $1 ORDER BY outbox_id`, r.lockKey())
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (deadLetter, error) {
		var d deadLetter
		err := row.Scan(&d.eventID, &d.topic, &d.key, &d.err, &d.payloadBytes, &d.messageBytes, &d.storedPayload)
		return d, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRelayDeadLettersWhatKafkaRefuses runs the relay against the local
// broker (kfake, max.message.bytes 1048588 like Kafka) with a row that does
// not fit between normal rows of the same order and of another order: the
// normal rows are published in order, the large one is moved to
// outbox_dead_letters with its payload, and the relay goes on.
func TestRelayDeadLettersWhatKafkaRefuses(t *testing.T) {
	t.Parallel()
	limit := DefaultMaxMessageBytes - recordBatchOverhead // the largest message that fits alone
	for _, tc := range []struct {
		name     string
		relayMax int // the relay's MaxMessageBytes (0: the default, the broker's limit)
		size     int // of the large row's message
		dead     bool
		errLike  string
	}{
		{name: "too large, never sent", size: 2 << 20, dead: true, errLike: "exceeds the relay's limit"},
		{name: "one byte over the limit, never sent", size: limit + 1, dead: true, errLike: "exceeds the relay's limit"},
		{name: "exactly at the limit, published", size: limit},
		// A relay configured above the broker's real limit sends it; the
		// broker refuses the batch, the rows go one by one.
		{name: "refused by the broker", relayMax: 8 << 20, size: 2 << 20, dead: true, errLike: "refused by Kafka"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, testTopic(t))
			brokers := testenv.KafkaBrokers()
			small := func(no string, v int64) event.Event {
				ev, err := event.New(event.OrderUpdated, f.project, "order", "", no, v, time.Now(), seq{no, v})
				if err != nil {
					t.Fatal(err)
				}
				ev.Topic = f.topic
				return ev
			}
			large := f.eventOfSize(t, "ORD-0", 2, tc.size)
			evs := []event.Event{small("ORD-0", 1), large, small("ORD-1", 1), small("ORD-0", 3), small("ORD-1", 2)}
			f.commit(t, evs...)
			r := f.relay(brokers)
			r.MaxMessageBytes = tc.relayMax
			t.Cleanup(func() {
				f.pool.Exec(context.Background(), `DELETE FROM outbox_dead_letters WHERE relay = $1`, r.lockKey())
			})
			startRelay(t, r)

			var want []string
			for _, ev := range evs {
				if ev.ID != large.ID || !tc.dead {
					want = append(want, ev.ID)
				}
			}
			tl := newTail(t, brokers, f.topic, true)
			gs := tl.collect(t, f.project, want, 60*time.Second)
			checkOrder(t, gs)
			testenv.Eventually(t, 20*time.Second, "position past every row", func() bool { return f.unsent(t) == 0 })
			if slices.ContainsFunc(gs, func(g got) bool { return tc.dead && g.ev.ID == large.ID }) {
				t.Error("the dead-lettered event was published")
			}
			dead := f.deadLetters(t, r)
			if !tc.dead {
				if len(dead) != 0 {
					t.Fatalf("dead letters %+v, want none", dead)
				}
			} else {
				row, err := RowOf(context.Background(), large)
				if err != nil {
					t.Fatal(err)
				}
				if len(dead) != 1 || dead[0].eventID != large.ID || dead[0].topic != f.topic || dead[0].key != row.Key ||
					dead[0].payloadBytes != len(row.Payload) || dead[0].storedPayload != len(row.Payload) ||
					dead[0].messageBytes != tc.size || !strings.Contains(dead[0].err, tc.errLike) {
					t.Fatalf("dead letters %+v, want the large event (%d bytes) with an error like %q", dead, tc.size, tc.errLike)
				}
				if n := counterValue(t, r.m.deadLetters); n != 1 {
					t.Errorf("o2i_outbox_dead_letters_total %v, want 1", n)
				}
			}

			// The relay is still running: a later event is published.
			next := small("ORD-0", 4)
			f.commit(t, next)
			checkOrder(t, append(gs, tl.collect(t, f.project, []string{next.ID}, 30*time.Second)...))
			testenv.Eventually(t, 10*time.Second, "position past the later row", func() bool { return f.unsent(t) == 0 })
		})
	}
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the writer's own check", kafka.MessageTooLargeError{}, true},
		{"the broker's error code", fmt.Errorf("%w: The message is too large.", kafka.MessageSizeTooLarge), true},
		{"record list too large", kafka.RecordListTooLarge, true},
		{"one of a batch's write errors", kafka.WriteErrors{nil, kafka.MessageSizeTooLarge, nil}, true},
		{"write errors without a size error", kafka.WriteErrors{nil, kafka.NotLeaderForPartition}, false},
		{"broker down", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"timeout", context.DeadlineExceeded, false},
	} {
		if got := tooLarge(tc.err); got != tc.want {
			t.Errorf("%s: tooLarge(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestRelayOrdersTransactionIDsAsNumbers: positions are ordered by the
// transaction id as a number, never as its text. Ordered as text, "10"
// sorts before "9": a first batch ending at transaction 10 would move the
// position past transaction 9's rows, and they would never be published
// (whenever the ids cross a power of ten with events waiting).
func TestRelayOrdersTransactionIDsAsNumbers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	ids := f.enqueue(t, 1, 4)
	// The four transactions in commit order get ids 9, 10, 99 and 100.
	if _, err := f.pool.Exec(context.Background(), `UPDATE `+f.table+` o SET tx_id = (ARRAY['9','10','99','100'])[n.rn]::xid8
		FROM (SELECT id, row_number() OVER (ORDER BY tx_id, id) AS rn FROM `+f.table+`) n WHERE n.id = o.id`); err != nil {
		t.Fatal(err)
	}
	r := f.relay(testenv.KafkaBrokers())
	r.BatchSize = 1
	startRelay(t, r)
	gs := newTail(t, testenv.KafkaBrokers(), f.topic, true).collect(t, f.project, ids, 30*time.Second)
	checkOrder(t, gs)
	testenv.Eventually(t, 10*time.Second, "position past every row", func() bool { return f.unsent(t) == 0 })
}

// TestRelayReportsTheOldestWaitingRow: the leading relay samples the age of
// the oldest row waiting (o2i_outbox_oldest_seconds) and 0 once none waits.
func TestRelayReportsTheOldestWaitingRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	f.enqueue(t, 2, 2)
	if _, err := f.pool.Exec(context.Background(), `UPDATE `+f.table+` SET created_at = now() - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r := f.relay(testenv.KafkaBrokers())
	r.Registerer = reg
	oldest := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "o2i_outbox_oldest_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	startRelay(t, r)
	// The first sample is taken before the first batch: the hour-old row.
	testenv.Eventually(t, 10*time.Second, "the oldest row's age sampled", func() bool { return oldest() >= 3600 })
	testenv.Eventually(t, 10*time.Second, "position past every row", func() bool { return f.unsent(t) == 0 })
	testenv.Eventually(t, 15*time.Second, "age 0 once nothing waits", func() bool { return oldest() == 0 })
}

// TestLeaderPurgesSentRows: a relay that becomes leader deletes the rows it
// sent longer than Retention ago (the purge runs with the server's own plan
// choice, the reads with generic plans).
func TestLeaderPurgesSentRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	ctx := context.Background()
	ids := f.enqueue(t, 2, 3)
	newRelay := func() *Relay {
		r := f.relay(testenv.KafkaBrokers())
		r.Projects = nil // the purge is the unfiltered relay's
		r.Retention = time.Millisecond
		return r
	}
	r := newRelay()
	stop := startRelay(t, r)
	testenv.Eventually(t, 30*time.Second, "every row sent", func() bool {
		n, err := backlogOf(ctx, f.pool, f.table, r.lockKey())
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	stop()
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.table).Scan(&n); err != nil || n != len(ids) {
		t.Fatalf("%d rows before the purge (%v), want %d", n, err, len(ids))
	}
	startRelay(t, newRelay())
	testenv.Eventually(t, 30*time.Second, "the sent rows purged", func() bool {
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// TestPurgeLeavesPublishingBetweenChunks: a purge of more rows than one
// chunk deletes a chunk per round and publishes in between, so an event
// written while millions of old rows wait to be purged is not held back
// until all of them are gone.
func TestPurgeLeavesPublishingBetweenChunks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	ctx := context.Background()
	f.enqueue(t, 1, 1)
	r := f.relay(testenv.KafkaBrokers())
	r.Projects = nil // the purge is the unfiltered relay's
	r.Retention = time.Millisecond
	// Three chunks of rows the relay has sent already (its position is past
	// them), then one it has not.
	if _, err := f.pool.Exec(ctx, `INSERT INTO `+f.table+` (`+Columns+`)
		SELECT project_id, topic, msg_key || '-' || g, gen_random_uuid(), event_type, payload, traceparent, tracestate
		FROM `+f.table+`, generate_series(1, $1) AS g`, 3*purgeChunk); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `INSERT INTO outbox_relay_positions (relay, tx_id, id)
		SELECT $1, max(tx_id), max(id) FROM `+f.table+` WHERE tx_id = (SELECT max(tx_id) FROM `+f.table+`)
		ON CONFLICT (relay) DO UPDATE SET tx_id = EXCLUDED.tx_id, id = EXCLUDED.id`, r.lockKey()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.pool.Exec(context.Background(), `DELETE FROM outbox_relay_positions WHERE relay = $1`, r.lockKey())
	})
	newIDs := f.enqueue(t, 1, 1)
	// The relay reads a row once no transaction older than it is open;
	// the relay starts when the new event is readable.
	testenv.Eventually(t, 30*time.Second, "the new event readable", func() bool {
		var ok bool
		if err := f.pool.QueryRow(ctx, `SELECT tx_id < pg_snapshot_xmin(pg_current_snapshot()) FROM `+f.table+` WHERE event_id = $1`,
			newIDs[0]).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	// The rows left when the relay reads the new event (on its own
	// goroutine, before its next round).
	var left atomic.Int64
	left.Store(-1)
	r.afterRead = func(n int) {
		if n == 0 || left.Load() >= 0 {
			return
		}
		var c int64
		if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+f.table).Scan(&c); err == nil {
			left.Store(c)
		}
	}
	startRelay(t, r)
	testenv.Eventually(t, 30*time.Second, "the new event read", func() bool { return left.Load() >= 0 })
	if left := left.Load(); left <= purgeChunk {
		t.Errorf("%d rows left when the new event was published, want more than a chunk (%d): the purge held publishing back", left, purgeChunk)
	}
	testenv.Eventually(t, 60*time.Second, "every sent row purged", func() bool {
		var n int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// TestPurgeDue: a purge starts a minute after the last one ended and goes on
// chunk by chunk, at most one chunk a second while the relay is behind.
func TestPurgeDue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                  string
		purging, behind       bool
		sinceChunk, sincePurg time.Duration
		want                  bool
	}{
		{"idle, purged a minute ago", false, false, 2 * time.Minute, 61 * time.Second, true},
		{"idle, purged just now", false, false, 2 * time.Minute, 30 * time.Second, false},
		{"behind, a minute since the purge, a chunk long ago", false, true, 2 * time.Minute, 61 * time.Second, true},
		{"purging, caught up", true, false, time.Millisecond, time.Hour, true},
		{"purging, behind, chunk just now", true, true, 100 * time.Millisecond, time.Hour, false},
		{"purging, behind, chunk a second ago", true, true, 1100 * time.Millisecond, time.Hour, true},
		{"not purging, behind, chunk just now", false, true, 100 * time.Millisecond, time.Hour, false},
	} {
		if got := purgeDue(c.purging, c.behind, c.sinceChunk, c.sincePurg); got != c.want {
			t.Errorf("%s: purgeDue = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPurgeDeletesOldRowsInPositionOrder: a purge deletes the published rows
// written before the cutoff in position order from its cursor, stops at the
// first newer row (the rows after it wait for a later purge, even when they
// are old), and never deletes a row past the relay's position.
func TestPurgeDeletesOldRowsInPositionOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testTopic(t))
	ctx := context.Background()
	ids := f.enqueue(t, 6, 1) // six rows, in position order
	age := func(i int) {
		if _, err := f.pool.Exec(ctx, `UPDATE `+f.table+` SET created_at = now() - interval '2 hours' WHERE event_id = $1`, ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		rows, err := f.pool.Query(ctx, `SELECT event_id::text FROM `+f.table+` ORDER BY tx_id, id`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, i := range []int{0, 1, 3, 4, 5} {
		age(i)
	}
	// The relay's position: the fifth row (the sixth is not published).
	var pos position
	if err := f.pool.QueryRow(ctx, `SELECT tx_id::text, id FROM `+f.table+` WHERE event_id = $1`, ids[4]).Scan(&pos.txID, &pos.id); err != nil {
		t.Fatal(err)
	}
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	r := f.relay(nil)
	r.Retention = time.Hour
	r.sql = newRelaySQL(f.table)
	var cursor position
	more, err := r.purge(ctx, conn.Conn(), pos, &cursor)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := left(), ids[2:]; more || !slices.Equal(got, want) {
		t.Fatalf("first purge: more %v, left %v, want %v (stopped at the third row, the newer one)", more, got, want)
	}
	age(2)
	if more, err = r.purge(ctx, conn.Conn(), pos, &cursor); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), ids[5:]; more || !slices.Equal(got, want) {
		t.Fatalf("second purge: more %v, left %v, want %v (the unpublished row stays)", more, got, want)
	}
	if cursor != pos {
		t.Errorf("cursor %+v, want the last row deleted %+v", cursor, pos)
	}
}

// TestKeyOrderTriggerSkipsNewOrders: the outbox's trigger raises a row's
// tx_id to its key's largest, except for an order.created row, the first
// event of its key (migration 00205). All in a transaction rolled back.
func TestKeyOrderTriggerSkipsNewOrders(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	key := "trigger-test/" + uuid.NewString()
	insert := func(typ, txID string) string {
		var got string
		// coalesce: the column's default when no tx_id is given.
		if err := tx.QueryRow(ctx, `INSERT INTO outbox (topic, msg_key, event_id, event_type, payload, tx_id)
			VALUES ('t', $1, gen_random_uuid(), $2, '{}', coalesce(nullif($3, '')::xid8, pg_current_xact_id())) RETURNING tx_id::text`,
			key, typ, txID).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	var own string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	// A row of the key with a larger tx_id than this transaction's.
	larger := insert("order.updated", "999999999999")
	if got := insert("order.created", ""); got != own {
		t.Errorf("order.created row's tx_id %s, want its own transaction's %s (not raised)", got, own)
	}
	if got := insert("order.updated", ""); got != larger {
		t.Errorf("order.updated row's tx_id %s, want the key's largest %s (raised)", got, larger)
	}
}
