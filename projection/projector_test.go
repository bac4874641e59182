package projection_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/projection"
)

// fixture is one test's own read-model tables, Redis database and topics,
// so that tests run beside each other and beside the service.
type fixture struct {
	t       *testing.T
	pool    *pgxpool.Pool
	rdb     *redis.Client
	tables  projection.Tables
	topics  []string
	group   string
	p       *projection.Projector
	project string
}

func newFixture(t *testing.T, redisDB int) *fixture {
	t.Helper()
	pool := testenv.Pool(t)
	suffix := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	f := &fixture{t: t, pool: pool,
		tables:  projection.Tables{Orders: "t_order_view_" + suffix, Invoices: "t_invoice_view_" + suffix},
		topics:  []string{"test.orders." + suffix, "test.invoices." + suffix},
		group:   "test-projector-" + suffix,
		project: uuid.NewString(),
	}
	ctx := context.Background()
	for _, stmt := range []string{
		`CREATE TABLE ` + f.tables.Orders + ` (LIKE order_view INCLUDING ALL)`,
		`CREATE TABLE ` + f.tables.Invoices + ` (LIKE invoice_view INCLUDING ALL)`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP TABLE IF EXISTS `+f.tables.Orders+`, `+f.tables.Invoices)
	})
	opt, err := redis.ParseURL(testenv.Env("O2I_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	opt.DB = redisDB
	f.rdb = redis.NewClient(opt)
	if err := f.rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis of the local stack is required: %v", err)
	}
	t.Cleanup(func() { f.rdb.Close() })
	f.p = projection.New(pool, f.rdb, testenv.KafkaBrokers(), nil).WithSource(f.topics, f.group, f.tables)
	return f
}

func orderEvent(t *testing.T, typ, project, orderNo, orderID string, version int64, status, fulfillment string) event.Event {
	t.Helper()
	o := event.Order{ID: orderID, ProjectID: project, Status: status, Version: version, FulfillmentStatus: fulfillment,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	o.OrderNo = orderNo
	o.Currency = "EUR"
	ev, err := event.New(typ, project, "order", orderID, orderNo, version, time.Now(), o)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func invoiceEvent(t *testing.T, typ, project, orderNo, id, number, status string, version int64, created time.Time) event.Event {
	t.Helper()
	inv := event.Invoice{ID: id, ProjectID: project, OrderNo: orderNo, Number: number, Status: status, Version: version,
		Type: "invoice", Format: "zugferd", IssueDate: "2026-11-22", Currency: "EUR",
		TotalNetCents: 1000, TotalTaxCents: 190, TotalGrossCents: 1190, TestMode: true, CreatedAt: created, PaymentRef: "pay-" + orderNo}
	if status == "archived" {
		at := created.Add(time.Second)
		inv.ArchivedAt = &at
	}
	ev, err := event.New(typ, project, "invoice", id, orderNo, version, time.Now(), inv)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func messages(t *testing.T, evs ...event.Event) []kafka.Message {
	t.Helper()
	var out []kafka.Message
	for i, ev := range evs {
		raw, err := event.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, kafka.Message{Topic: ev.Topic, Offset: int64(i), Key: []byte(ev.PartitionKey()), Value: raw})
	}
	return out
}

// publish writes events to the fixture's own topics (created on first use).
func (f *fixture) publish(evs ...event.Event) {
	f.t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(testenv.KafkaBrokers()...), Balancer: &kafka.Hash{}, BatchTimeout: 5 * time.Millisecond,
		RequiredAcks: kafka.RequireAll, AllowAutoTopicCreation: true}
	defer w.Close()
	var msgs []kafka.Message
	for _, ev := range evs {
		raw, err := event.Encode(ev)
		if err != nil {
			f.t.Fatal(err)
		}
		topic := f.topics[0]
		if ev.Topic == event.TopicInvoices {
			topic = f.topics[1]
		}
		msgs = append(msgs, kafka.Message{Topic: topic, Key: []byte(ev.PartitionKey()), Value: raw})
	}
	testenv.Eventually(f.t, 30*time.Second, "the events written (the topics are being created)", func() bool {
		return w.WriteMessages(context.Background(), msgs...) == nil
	})
}

func (f *fixture) apply(evs ...event.Event) {
	f.t.Helper()
	if err := f.p.Apply(context.Background(), messages(f.t, evs...)); err != nil {
		f.t.Fatal(err)
	}
}

// status reads an order's record from PostgreSQL and from Redis; both must agree.
func (f *fixture) status(orderNo string) (readmodel.OrderStatus, int64) {
	f.t.Helper()
	ctx := context.Background()
	var rev int64
	row := readmodel.Row{OrderNo: orderNo}
	err := f.pool.QueryRow(ctx, `SELECT rev, status, fulfillment_status, invoices, waiting_for, waiting_for_all, holds, payment FROM `+f.tables.Orders+`
		WHERE project_id = $1 AND order_no = $2`, f.project, orderNo).Scan(&rev, &row.Status, &row.FulfillmentStatus, &row.Invoices, &row.WaitingFor,
		&row.WaitingForAll, &row.Holds, &row.Payment)
	if err != nil {
		f.t.Fatalf("order_view %s: %v", orderNo, err)
	}
	want, err := readmodel.Encode(row)
	if err != nil {
		f.t.Fatal(err)
	}
	rrev, body, err := readmodel.Get(ctx, f.rdb, f.project, orderNo)
	if err != nil {
		f.t.Fatalf("redis %s: %v", orderNo, err)
	}
	if rrev != rev || string(body) != string(want) {
		f.t.Errorf("redis has rev %d %s, PostgreSQL rev %d %s", rrev, body, rev, want)
	}
	var out readmodel.OrderStatus
	if err := json.Unmarshal(want, &out); err != nil {
		f.t.Fatal(err)
	}
	return out, rev
}

func TestProjectsEachEventType(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	orderID, invID, stornoID := uuid.NewString(), uuid.NewString(), uuid.NewString()
	t0 := time.Now().UTC().Truncate(time.Microsecond)

	f.apply(orderEvent(t, event.OrderCreated, f.project, "A-1", orderID, 1, "created", "unfulfilled"))
	got, _ := f.status("A-1")
	want := readmodel.OrderStatus{OrderNo: "A-1", Status: "created", FulfillmentStatus: "unfulfilled", Invoices: []readmodel.InvoiceRef{}, WaitingFor: "payment",
		WaitingForAll: []readmodel.Waiting{"payment"}, Holds: []readmodel.Hold{}, Payment: "pending"} // no payment, no credit
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after order.created (-want +got):\n%s", diff)
	}

	f.apply(orderEvent(t, event.OrderFulfillmentUpdated, f.project, "A-1", orderID, 2, "created", "partial"))
	if got, _ := f.status("A-1"); got.FulfillmentStatus != "partial" {
		t.Fatalf("after order.fulfillment_updated: %+v", got)
	}
	f.apply(orderEvent(t, event.OrderFulfilled, f.project, "A-1", orderID, 3, "created", "fulfilled"))
	f.apply(orderEvent(t, event.OrderUpdated, f.project, "A-1", orderID, 4, "invoiced", "fulfilled"))
	f.apply(invoiceEvent(t, event.InvoiceCreated, f.project, "A-1", invID, "TEST-2026-1", "created", 1, t0))
	got, _ = f.status("A-1")
	want = readmodel.OrderStatus{OrderNo: "A-1", Status: "invoiced", FulfillmentStatus: "fulfilled", WaitingFor: "none", WaitingForAll: []readmodel.Waiting{},
		Holds: []readmodel.Hold{}, Payment: "pending", Invoices: []readmodel.InvoiceRef{
			{ID: invID, Number: "TEST-2026-1", Status: "created", URL: "/v1/invoices/" + invID, Type: "invoice"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after invoice.created (-want +got):\n%s", diff)
	}

	f.apply(invoiceEvent(t, event.InvoiceArchived, f.project, "A-1", invID, "TEST-2026-1", "archived", 2, t0),
		invoiceEvent(t, event.InvoiceFailed, f.project, "A-1", stornoID, "TEST-2026-2", "failed", 1, t0.Add(time.Second)))
	got, _ = f.status("A-1")
	want.Invoices = []readmodel.InvoiceRef{
		{ID: invID, Number: "TEST-2026-1", Status: "archived", URL: "/v1/invoices/" + invID, Type: "invoice"},
		{ID: stornoID, Number: "TEST-2026-2", Status: "failed", URL: "/v1/invoices/" + stornoID, Type: "invoice"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after invoice.archived and invoice.failed (-want +got):\n%s", diff)
	}
	var status string
	var archived *time.Time
	if err := f.pool.QueryRow(context.Background(), `SELECT status, archived_at FROM `+f.tables.Invoices+` WHERE id = $1`, invID).
		Scan(&status, &archived); err != nil || status != "archived" || archived == nil {
		t.Errorf("invoice_view: status %q archivedAt %v (%v)", status, archived, err)
	}
}

func TestDuplicateAndOutOfOrderDeliveryChangeNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	orderID, invID := uuid.NewString(), uuid.NewString()
	v1 := orderEvent(t, event.OrderCreated, f.project, "B-1", orderID, 1, "created", "unfulfilled")
	v2 := orderEvent(t, event.OrderFulfilled, f.project, "B-1", orderID, 2, "created", "fulfilled")
	inv1 := invoiceEvent(t, event.InvoiceCreated, f.project, "B-1", invID, "TEST-2026-9", "created", 1, time.Now())
	inv2 := invoiceEvent(t, event.InvoiceArchived, f.project, "B-1", invID, "TEST-2026-9", "archived", 2, time.Now())

	// The invoice arrives before its order, newer versions before older ones.
	f.apply(inv2, v2)
	want, rev := f.status("B-1")
	f.apply(inv1, v1, v2, inv2, v1) // stale and repeated deliveries in one batch
	got, rev2 := f.status("B-1")
	if diff := cmp.Diff(want, got); diff != "" || rev2 != rev {
		t.Errorf("stale/duplicate events changed the record (rev %d -> %d):\n%s", rev, rev2, diff)
	}
	if got.FulfillmentStatus != "fulfilled" || len(got.Invoices) != 1 || got.Invoices[0].Status != "archived" {
		t.Errorf("record %+v, want fulfilled with one archived invoice", got)
	}
	// Several events of one new order in one batch: the newest wins,
	// whatever their order in the batch.
	for i, batch := range [][]int64{{1, 2, 3}, {3, 1, 2}, {2, 3, 1}} {
		no := fmt.Sprintf("B-batch-%d", i)
		id := uuid.NewString()
		fs := map[int64]string{1: "unfulfilled", 2: "partial", 3: "fulfilled"}
		var evs []event.Event
		for _, v := range batch {
			evs = append(evs, orderEvent(t, event.OrderUpdated, f.project, no, id, v, "created", fs[v]))
		}
		f.apply(evs...)
		if got, _ := f.status(no); got.FulfillmentStatus != "fulfilled" {
			t.Errorf("versions %v in one batch: fulfillmentStatus %q, want the newest (fulfilled)", batch, got.FulfillmentStatus)
		}
	}
	// Documents in one batch: two of one order, one of another, a
	// document's created and archived events in either order (the newest
	// version of each document wins, each order lists all its documents).
	ctx := context.Background()
	for i, order := range [][]int{{0, 1, 2, 3}, {1, 0, 3, 2}, {3, 2, 1, 0}} {
		no, other := fmt.Sprintf("B-docs-%d", i), fmt.Sprintf("B-docs-%d-other", i)
		a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
		t0 := time.Now()
		evs := []event.Event{
			invoiceEvent(t, event.InvoiceCreated, f.project, no, a, "TEST-A-"+no, "created", 1, t0),
			invoiceEvent(t, event.InvoiceArchived, f.project, no, a, "TEST-A-"+no, "archived", 2, t0),
			invoiceEvent(t, event.InvoiceCreated, f.project, no, b, "TEST-B-"+no, "created", 1, t0.Add(time.Millisecond)),
			invoiceEvent(t, event.InvoiceCreated, f.project, other, c, "TEST-C-"+no, "created", 1, t0),
		}
		var batch []event.Event
		for _, j := range order {
			batch = append(batch, evs[j])
		}
		f.apply(batch...)
		got, _ := f.status(no)
		if len(got.Invoices) != 2 || got.Invoices[0].Number != "TEST-A-"+no || got.Invoices[0].Status != "archived" ||
			got.Invoices[1].Number != "TEST-B-"+no || got.Invoices[1].Status != "created" {
			t.Errorf("batch order %v: documents %+v, want A archived and B created", order, got.Invoices)
		}
		if got, _ := f.status(other); len(got.Invoices) != 1 || got.Invoices[0].Number != "TEST-C-"+no {
			t.Errorf("batch order %v: the other order's documents %+v, want C", order, got.Invoices)
		}
		var version int64
		var archivedAt *time.Time
		if err := f.pool.QueryRow(ctx, `SELECT version, archived_at FROM `+f.tables.Invoices+` WHERE project_id = $1 AND id = $2`,
			f.project, a).Scan(&version, &archivedAt); err != nil {
			t.Fatal(err)
		}
		if version != 2 || archivedAt == nil {
			t.Errorf("batch order %v: document A at version %d, archived_at %v; want version 2, archived", order, version, archivedAt)
		}
	}
	// A stale record never overwrites a newer one in Redis either.
	p := f.rdb.Pipeline()
	readmodel.Put(ctx, p, f.project, "B-1", rev-1, []byte(`{"stale":true}`))
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, body, _ := readmodel.Get(ctx, f.rdb, f.project, "B-1"); strings.Contains(string(body), "stale") {
		t.Error("a stale revision overwrote Redis")
	}
}

func TestPoisonMessagesGoToDeadLetters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	good := orderEvent(t, event.OrderCreated, f.project, "C-1", uuid.NewString(), 1, "created", "unfulfilled")
	msgs := messages(t, good)
	bad := kafka.Message{Topic: f.topics[0], Partition: 3, Offset: 77, Key: []byte("k"), Value: []byte(`{"not":"an event"`)}
	newer := good
	newer.Version = 9
	newer.ID = uuid.NewString()
	raw, _ := event.Encode(newer)
	future := kafka.Message{Topic: f.topics[0], Partition: 3, Offset: 78, Value: raw}
	if err := f.p.Apply(context.Background(), append(msgs, bad, future)); err != nil {
		t.Fatal(err)
	}
	f.status("C-1") // the good event is applied

	// Values PostgreSQL refuses (a date that is none) poison only their own
	// event: the rest of the batch is applied.
	badDate := invoiceEvent(t, event.InvoiceCreated, f.project, "C-2", uuid.NewString(), "TEST-C-2", "created", 1, time.Now())
	badDate.Data = []byte(strings.Replace(string(badDate.Data), `"issueDate":"2026-11-22"`, `"issueDate":"2026-13-45"`, 1))
	okAfter := orderEvent(t, event.OrderCreated, f.project, "C-3", uuid.NewString(), 1, "created", "unfulfilled")
	batch := messages(t, badDate, okAfter)
	batch[0].Offset = 79
	if err := f.p.Apply(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	f.status("C-3")
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM projection_dead_letters
		WHERE projector = $1 AND "offset" IN (77, 78, 79)`, f.group).Scan(&n); err != nil || n != 3 {
		t.Errorf("dead letters %d (%v), want 3", n, err)
	}
}

// TestConsumesFromKafka runs the consumer loop against the broker: events
// written to the topics become visible, and the offsets are committed.
func TestConsumesFromKafka(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var evs []event.Event
	for i := range 20 {
		orderNo := fmt.Sprintf("K-%d", i)
		evs = append(evs,
			orderEvent(t, event.OrderCreated, f.project, orderNo, uuid.NewString(), 1, "created", "unfulfilled"),
			invoiceEvent(t, event.InvoiceCreated, f.project, orderNo, uuid.NewString(), "TEST-2026-"+orderNo, "created", 1, time.Now()))
	}
	f.publish(evs...)
	testenv.Eventually(t, 30*time.Second, "20 orders projected with their invoices", func() bool {
		var n int
		if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+f.tables.Orders+`
			WHERE project_id = $1 AND jsonb_array_length(invoices) = 1 AND order_id IS NOT NULL`, f.project).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 20
	})
	// Redis is refreshed right after the read model's transaction commits.
	testenv.Eventually(t, 10*time.Second, "K-7 refreshed in Redis", func() bool {
		var rev int64
		if err := f.pool.QueryRow(context.Background(), `SELECT rev FROM `+f.tables.Orders+` WHERE project_id = $1 AND order_no = 'K-7'`, f.project).Scan(&rev); err != nil {
			t.Fatal(err)
		}
		rrev, _, err := readmodel.Get(context.Background(), f.rdb, f.project, "K-7")
		return err == nil && rrev == rev
	})
	f.status("K-7")
}

// goodsEvent is an order event of goods (requiresShipping), paid or not.
func goodsEvent(t *testing.T, typ, project, orderNo, orderID string, version int64, fulfillment string, paid bool) event.Event {
	t.Helper()
	o := event.Order{ID: orderID, ProjectID: project, Status: "created", Version: version, FulfillmentStatus: fulfillment,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	o.OrderNo, o.Currency, o.RequiresShipping, o.PaymentGateway = orderNo, "EUR", true, "stripe"
	if paid {
		at := time.Now().UTC()
		o.PaidAt = &at
	}
	ev, err := event.New(typ, project, "order", orderID, orderNo, version, time.Now(), o)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestWaitingForAll: the status record lists everything an order waits for,
// payment before fulfillment, and waitingFor names the first, in PostgreSQL
// and Redis alike (status compares them), and again after Redis is rebuilt
// from PostgreSQL and both are rebuilt from the events.
func TestWaitingForAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	ctx := context.Background()
	w := func(ws ...readmodel.Waiting) []readmodel.Waiting { return append([]readmodel.Waiting{}, ws...) }
	check := func(step, orderNo, first string, all []readmodel.Waiting) {
		t.Helper()
		got, _ := f.status(orderNo)
		if got.WaitingFor != first || !cmp.Equal(got.WaitingForAll, all) {
			t.Errorf("%s: %s waits for %q, all %v; want %q, %v", step, orderNo, got.WaitingFor, got.WaitingForAll, first, all)
		}
	}
	a, b := uuid.NewString(), uuid.NewString()
	evs := []event.Event{
		goodsEvent(t, event.OrderCreated, f.project, "W-1", a, 1, "unfulfilled", false),
		goodsEvent(t, event.OrderCreated, f.project, "W-2", b, 1, "partial", true),
	}
	f.apply(evs...)
	check("unpaid, unshipped", "W-1", "payment", w("payment", "fulfillment"))
	check("paid, partly shipped", "W-2", "fulfillment", w("fulfillment"))

	more := []event.Event{
		goodsEvent(t, event.OrderFulfilled, f.project, "W-1", a, 2, "fulfilled", false),
		goodsEvent(t, event.OrderUpdated, f.project, "W-2", b, 2, "partial", true),
	}
	f.apply(more...)
	check("unpaid, shipped", "W-1", "payment", w("payment"))
	check("paid, partly shipped, updated", "W-2", "fulfillment", w("fulfillment"))
	last := goodsEvent(t, event.OrderUpdated, f.project, "W-1", a, 3, "fulfilled", true)
	f.apply(last)
	check("paid and shipped", "W-1", "none", w())

	// A goods order that waits for both, for the rebuilds.
	c := uuid.NewString()
	both := goodsEvent(t, event.OrderCreated, f.project, "W-3", c, 1, "unfulfilled", false)
	f.apply(both)
	f.publish(append(append(evs, more...), last, both)...)
	forget := func() { // this test's records only: Redis is shared
		t.Helper()
		for _, no := range []string{"W-1", "W-2", "W-3"} {
			if err := f.rdb.Del(ctx, readmodel.OrderKey(f.project, no)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	forget()
	if err := f.p.RebuildRedisInto(ctx, nil); err != nil {
		t.Fatal(err)
	}
	check("Redis rebuilt", "W-3", "payment", w("payment", "fulfillment"))
	check("Redis rebuilt", "W-2", "fulfillment", w("fulfillment"))
	if _, err := f.pool.Exec(ctx, `DELETE FROM `+f.tables.Orders+` WHERE project_id = $1`, f.project); err != nil {
		t.Fatal(err)
	}
	forget()
	if err := f.p.RebuildFromEvents(ctx, func(string, int64, int64) {}); err != nil {
		t.Fatal(err)
	}
	check("rebuilt from the events", "W-3", "payment", w("payment", "fulfillment"))
	check("rebuilt from the events", "W-2", "fulfillment", w("fulfillment"))
	check("rebuilt from the events", "W-1", "none", w())
}

// TestRebuildRestoresIdenticalReadModels flushes Redis (its own database) and
// drops read-model rows, then rebuilds: first Redis from PostgreSQL, then
// everything from the events; the results equal what the projector built.
func TestRebuildRestoresIdenticalReadModels(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 7)
	ctx := context.Background()
	var evs []event.Event
	for i := range 30 {
		orderNo := fmt.Sprintf("R-%d", i)
		id, inv := uuid.NewString(), uuid.NewString()
		evs = append(evs,
			orderEvent(t, event.OrderCreated, f.project, orderNo, id, 1, "created", "unfulfilled"),
			orderEvent(t, event.OrderFulfilled, f.project, orderNo, id, 2, "created", "fulfilled"),
			invoiceEvent(t, event.InvoiceCreated, f.project, orderNo, inv, "TEST-2026-R"+fmt.Sprint(i), "created", 1, time.Now()))
	}
	f.publish(evs...)
	f.apply(evs...)
	snapshot := func() map[string]string {
		keys, err := f.rdb.Keys(ctx, "o2i:order:"+f.project+":*").Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, k := range keys {
			_, body, err := readmodel.Get(ctx, f.rdb, f.project, strings.TrimPrefix(k, "o2i:order:"+f.project+":"))
			if err != nil {
				t.Fatal(err)
			}
			out[k] = string(body)
		}
		return out
	}
	before := snapshot()
	if len(before) != 30 {
		t.Fatalf("%d records in Redis, want 30", len(before))
	}
	if err := f.rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.p.RebuildRedisInto(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("after FLUSHDB and rebuild (-before +after):\n%s", diff)
	}

	// Lose PostgreSQL rows and Redis, then rebuild from the events.
	if _, err := f.pool.Exec(ctx, `DELETE FROM `+f.tables.Orders+` WHERE order_no IN ('R-1', 'R-2')`); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.p.RebuildFromEvents(ctx, func(string, int64, int64) {}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("after rebuild from events (-before +after):\n%s", diff)
	}
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.tables.Invoices+` WHERE project_id = $1`, f.project).Scan(&n); err != nil || n != 30 {
		t.Errorf("%d invoices after rebuild (%v), want 30", n, err)
	}
}

// fresh reports whether Redis holds PostgreSQL's current status record of
// the order: every write of an order_view row takes a new rev, and Redis
// stores the rev of the row it copied (status compares the bodies too).
func (f *fixture) fresh(orderNo string) bool {
	f.t.Helper()
	ctx := context.Background()
	var rev int64
	if err := f.pool.QueryRow(ctx, `SELECT rev FROM `+f.tables.Orders+` WHERE project_id = $1 AND order_no = $2`,
		f.project, orderNo).Scan(&rev); err != nil {
		return false
	}
	rrev, _, err := readmodel.Get(ctx, f.rdb, f.project, orderNo)
	return err == nil && rrev == rev
}

// cached is the order's status record in Redis.
func (f *fixture) cached(orderNo string) readmodel.OrderStatus {
	f.t.Helper()
	var st readmodel.OrderStatus
	_, body, err := readmodel.Get(context.Background(), f.rdb, f.project, orderNo)
	if err == nil {
		err = json.Unmarshal(body, &st)
	}
	if err != nil {
		f.t.Fatalf("redis %s: %v", orderNo, err)
	}
	return st
}

// pgVersion is the order version of order_view (0 when absent).
func (f *fixture) pgVersion(orderNo string) int64 {
	f.t.Helper()
	var v *int64
	err := f.pool.QueryRow(context.Background(), `SELECT order_version FROM `+f.tables.Orders+`
		WHERE project_id = $1 AND order_no = $2`, f.project, orderNo).Scan(&v)
	if err != nil || v == nil {
		return 0
	}
	return *v
}

func (f *fixture) marks() int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM projection_redis_dirty WHERE orders_table = $1`,
		f.tables.Orders).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// switchableRedis is a real Redis client of the fixture's database whose
// connections go to addr: first a closed port, later the real Redis.
func (f *fixture) switchableRedis(addr *atomic.Pointer[string]) *redis.Client {
	f.t.Helper()
	opt := *f.rdb.Options() // a copy: the fixture's client keeps its own
	opt.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, *addr.Load())
	}
	opt.MaxRetries = -1 // fail fast; the projector retries
	c := redis.NewClient(&opt)
	f.t.Cleanup(func() { c.Close() })
	return c
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// run runs p until the test ends or the returned stop is called.
func run(t *testing.T, p *projection.Projector) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("projector: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestRedisFailureIsRepaired: while the projector cannot reach Redis, the
// events still reach PostgreSQL and the offsets move on; the orders are
// marked, and their Redis records become fresh once Redis answers (the same
// process) or when another projector runs (the marks are durable).
func TestRedisFailureIsRepaired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		restart bool // Redis comes back for a new projector, not the failing one
	}{
		{name: "redis comes back"},
		{name: "another projector repairs", restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 0)
			orderID := uuid.NewString()
			// A record in Redis that the failure would leave stale.
			f.apply(orderEvent(t, event.OrderCreated, f.project, "D-1", orderID, 1, "created", "unfulfilled"))
			staleRev, _, err := readmodel.Get(context.Background(), f.rdb, f.project, "D-1")
			if err != nil {
				t.Fatal(err)
			}

			var addr atomic.Pointer[string]
			dead, live := closedPort(t), f.rdb.Options().Addr
			addr.Store(&dead)
			failing := projection.New(f.pool, f.switchableRedis(&addr), testenv.KafkaBrokers(), nil).
				WithSource(f.topics, f.group, f.tables)
			stop := run(t, failing)
			f.publish(
				orderEvent(t, event.OrderFulfilled, f.project, "D-1", orderID, 2, "created", "fulfilled"),
				orderEvent(t, event.OrderCreated, f.project, "D-2", uuid.NewString(), 1, "created", "unfulfilled"))
			testenv.Eventually(t, 30*time.Second, "both events in PostgreSQL while Redis is unreachable", func() bool {
				return f.pgVersion("D-1") == 2 && f.pgVersion("D-2") == 1
			})
			testenv.Eventually(t, 10*time.Second, "both orders marked", func() bool { return f.marks() == 2 })
			if rev, _, err := readmodel.Get(context.Background(), f.rdb, f.project, "D-1"); err != nil || rev != staleRev {
				t.Fatalf("redis D-1 rev %d (%v), want the stale %d while Redis is unreachable", rev, err, staleRev)
			}
			if f.fresh("D-1") || f.fresh("D-2") {
				t.Fatal("Redis fresh while unreachable")
			}

			if tc.restart {
				stop()
				run(t, f.p) // reaches Redis
			} else {
				addr.Store(&live)
			}
			testenv.Eventually(t, 30*time.Second, "Redis fresh again", func() bool { return f.fresh("D-1") && f.fresh("D-2") })
			testenv.Eventually(t, 10*time.Second, "no marks left", func() bool { return f.marks() == 0 })
			if got := f.cached("D-1"); got.FulfillmentStatus != "fulfilled" {
				t.Errorf("redis D-1 %+v, want fulfilled", got)
			}

			// Redis answers again: a later event reaches it directly.
			f.publish(orderEvent(t, event.OrderUpdated, f.project, "D-1", orderID, 3, "invoiced", "fulfilled"))
			testenv.Eventually(t, 30*time.Second, "the later event in Redis", func() bool {
				return f.pgVersion("D-1") == 3 && f.fresh("D-1")
			})
		})
	}
}

// TestBatchesPostgreSQLCanNeverApply: a batch PostgreSQL refuses for one of
// its events (here an order number too long for the index: program limit
// exceeded, 54000) is applied event by event: the others are applied, the
// offending one is dead-lettered, instead of the batch being retried forever.
// One order spelt with two forms of its project id is one key of the batch.
func TestBatchesPostgreSQLCanNeverApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	var long string // 10800 characters that do not compress
	for range 300 {
		long += uuid.NewString()
	}
	id := uuid.NewString()
	batch := messages(t,
		orderEvent(t, event.OrderCreated, f.project, "E-1", uuid.NewString(), 1, "created", "unfulfilled"),
		orderEvent(t, event.OrderCreated, f.project, long, uuid.NewString(), 1, "created", "unfulfilled"),
		orderEvent(t, event.OrderCreated, f.project, "E-2", id, 1, "created", "unfulfilled"),
		orderEvent(t, event.OrderFulfilled, strings.ToUpper(f.project), "E-2", id, 2, "created", "fulfilled"))
	for i := range batch {
		batch[i].Offset = int64(900 + i)
	}
	if err := f.p.Apply(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if !f.fresh("E-1") || !f.fresh("E-2") {
		t.Error("E-1 or E-2 not projected to Redis")
	}
	if got := f.cached("E-2"); got.FulfillmentStatus != "fulfilled" {
		t.Errorf("E-2 %+v, want the newest event (fulfilled)", got)
	}
	var offsets []int64
	rows, err := f.pool.Query(context.Background(), `SELECT "offset" FROM projection_dead_letters WHERE projector = $1 ORDER BY 1`, f.group)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o int64
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, o)
	}
	if !slices.Equal(offsets, []int64{901}) {
		t.Errorf("dead letters at offsets %v, want [901] (the long order number)", offsets)
	}
}
