package invoicing_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/banktransfer"
	"github.com/o2i-service/o2i/internal/breaker"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// blackHole is the payment provider's API as a project sees it when the
// provider hangs: connections are accepted and never answered. Healed, it
// passes every new connection on to the local stack's provider fake.
type blackHole struct {
	ln     net.Listener
	target string
	healed atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	u, err := url.Parse(testenv.Env("O2I_STRIPE_API_BASE"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln, target: u.Host}
	go b.serve()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.conns {
			c.Close()
		}
	})
	return b
}

func (b *blackHole) url() string { return "http://" + b.ln.Addr().String() }

func (b *blackHole) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		go func() {
			if !b.healed.Load() {
				_, _ = io.Copy(io.Discard, c) // read, never answer, until the caller gives up
				return
			}
			up, err := net.DialTimeout("tcp", b.target, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			_, _ = io.Copy(c, up)
			c.Close()
		}()
	}
}

// orderTopic creates a topic of 6 partitions for one test's order events.
func orderTopic(t *testing.T) string {
	t.Helper()
	topic := "o2i.test.orders." + uuid.NewString()[:8]
	conn, err := kafka.Dial("tcp", testenv.KafkaBrokers()[0])
	if err != nil {
		t.Fatalf("the Kafka-protocol broker of the local stack is required: %v", err)
	}
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 6, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	return topic
}

// publish writes the events to topic, keyed like the relay's (project and
// order number).
func publish(t *testing.T, topic string, msgs []kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(testenv.KafkaBrokers()...), Topic: topic, Balancer: &kafka.Hash{}, BatchSize: 500}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return
		}
		// The broker may take a moment to know a topic it just created.
		if !errors.Is(err, kafka.UnknownTopicOrPartition) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dueTransfer places a provider_transfer order of goods not shipped yet
// (its own events make nothing due, so no other invoicer acts on it) and
// returns its id with an event saying it is shipped: due, so the invoicer
// asks the provider for the payment order first.
func (v *invoicingEnv) dueTransfer(orderNo string) (string, []byte) {
	v.t.Helper()
	id := v.place(fmt.Sprintf(`{"orderNo":%q,"email":"kunde-%s@example.com","paymentGateway":"provider_transfer","requiresShipping":true,
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Tee","quantity":1,"unitNetCents":10000,"taxRate":19}]}`, orderNo, orderNo))
	now := time.Now().UTC()
	ev, err := event.New(event.OrderFulfilled, v.project, "order", id, orderNo, 2, now, event.Order{
		ID: id, ProjectID: v.project, Status: "created", Version: 2, FulfillmentStatus: "fulfilled", CreatedAt: now, UpdatedAt: now,
		OrderContent: event.OrderContent{OrderNo: orderNo, RequiresShipping: true, PaymentGateway: "provider_transfer"}})
	if err != nil {
		v.t.Fatal(err)
	}
	raw, err := event.Encode(ev)
	if err != nil {
		v.t.Fatal(err)
	}
	return id, raw
}

func (v *invoicingEnv) count(sql string, args ...any) int {
	v.t.Helper()
	var n int
	if err := v.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		v.t.Fatal(err)
	}
	return n
}

// TestBlackHoledProviderOfOneProjectDelaysNoOtherProject: project A's
// payment provider accepts connections and never answers, and 30 of A's
// provider_transfer orders become due ahead of 200 orders of project B
// paid with store credit, on the same partitions. Every one of B's invoices
// is archived within a bound that the inline retries of A's events (five
// tries of a call hanging 5 s each, with a batch-wide barrier) could never
// meet: B's events never wait behind A's, and B's invoices are archived as
// they go, not after all of B's were issued. A's orders are in the retry
// table, without review tasks; once the provider answers again they are
// invoiced and their retries resolved.
func TestBlackHoledProviderOfOneProjectDelaysNoOtherProject(t *testing.T) {
	// Not parallel: the bound is about head-of-line blocking, not about the
	// other tests of the package sharing the cores.
	const nA, nB = 30, 200
	suffix := uuid.NewString()[:8]
	a := newInvoicing(t, true, func(s *project.Settings) { s.StripeAPIKey = "sk_test_hol_" + suffix })
	b := newInvoicing(t, true, nil)
	hole := newBlackHole(t)
	topic := orderTopic(t)

	var msgs []kafka.Message
	for i := range nA {
		no := fmt.Sprintf("A-%s-%d", suffix, i)
		_, raw := a.dueTransfer(no)
		msgs = append(msgs, kafka.Message{Key: []byte(a.project + "/" + no), Value: raw})
	}
	for i := range nB {
		no := fmt.Sprintf("B-%s-%d", suffix, i)
		_, raw := b.dueOrder(no)
		msgs = append(msgs, kafka.Message{Key: []byte(b.project + "/" + no), Value: raw})
	}
	publish(t, topic, msgs) // A's first on every partition

	svc := invoicing.New(a.pool)
	svc.SetBreaker(breaker.Policy{Failures: 5, OpenFor: 3 * time.Second}) // probes soon after the provider is back
	iv := invoicing.NewInvoicer(svc, workingArchive(t), testenv.KafkaBrokers())
	group := "o2i-invoicer-test-" + suffix
	iv.UseGroup(topic, group)
	iv.Transfers = banktransfer.New(hole.url(), 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- iv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	start := time.Now()
	archivedB := func() int {
		return b.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, b.project)
	}
	testenv.Eventually(t, 45*time.Second, fmt.Sprintf("all %d invoices of B archived while A's provider hangs", nB), func() bool {
		return archivedB() == nB
	})
	t.Logf("B's %d invoices archived in %s while A's provider hangs", nB, time.Since(start).Round(time.Millisecond))
	// Finished as they go: an invoice back from its object writes gets the
	// next worker before an event not started yet (with no more than 16
	// workers and 64 waits in progress, most of B's invoices are archived
	// before its last one is issued; first come first served, all of B's
	// were issued before the first one was archived).
	n := b.count(`SELECT count(*) FROM invoices WHERE project_id = $1
		AND archived_at < (SELECT max(created_at) FROM invoices WHERE project_id = $1)`, b.project)
	t.Logf("%d of B's invoices archived when its last one was issued", n)
	if n < nB/2 {
		t.Errorf("%d of B's %d invoices archived when its last one was issued, want at least half: finished work waited behind new events", n, nB)
	}

	// A's orders: in the retry table, no task, no document.
	testenv.Eventually(t, 30*time.Second, "A's orders in the retry table", func() bool {
		return a.count(`SELECT count(*) FROM invoicing_dead_letters WHERE project_id = $1 AND consumer_group = $2 AND resolved_at IS NULL`,
			a.project, group) == nA
	})
	if n := a.count(`SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = $2`, a.project, invoicing.TaskInvoicingFailed); n != 0 {
		t.Errorf("%d invoicing_failed tasks for A's orders after a short outage, want none", n)
	}
	if n := a.count(`SELECT count(*) FROM invoices WHERE project_id = $1`, a.project); n != 0 {
		t.Errorf("%d documents of A without the provider's payment order", n)
	}

	// The provider answers again: the retries invoice A's orders.
	hole.healed.Store(true)
	testenv.Eventually(t, 90*time.Second, "A's orders invoiced once the provider answers", func() bool {
		return a.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, a.project) == nA
	})
	testenv.Eventually(t, 30*time.Second, "A's retries resolved", func() bool {
		return a.count(`SELECT count(*) FROM invoicing_dead_letters WHERE project_id = $1 AND resolved_at IS NULL`, a.project) == 0
	})
	if n := a.count(`SELECT count(*) FROM provider_transfers WHERE project_id = $1`, a.project); n != nA {
		t.Errorf("%d payment orders of A, want %d", n, nA)
	}
}

// stallingStore is the object store in front of the local stack's MinIO
// that never answers a request for the documents of one project (their
// keys start with its id) until healed; every other request passes.
type stallingStore struct {
	srv     *httptest.Server
	project string
	healed  chan struct{}
	once    sync.Once
}

func newStallingStore(t *testing.T, projectID string) *stallingStore {
	t.Helper()
	target, err := url.Parse("http://" + testenv.Env("O2I_S3_ENDPOINT"))
	if err != nil {
		t.Fatal(err)
	}
	s := &stallingStore{project: projectID, healed: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the Host header the request was signed for
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/"+s.project+"/") {
			select {
			case <-s.healed:
			case <-r.Context().Done(): // the caller gave up: never answered
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { s.heal(); s.srv.Close() })
	return s
}

func (s *stallingStore) heal() { s.once.Do(func() { close(s.healed) }) }

// archive is the service's archive (live and test buckets) through s.
func (s *stallingStore) archive(t *testing.T) *archive.Archive {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(s.srv.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(testenv.Env("O2I_S3_ACCESS_KEY"), testenv.Env("O2I_S3_SECRET_KEY"), ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return archive.New(c, testenv.Env("O2I_S3_BUCKET")).WithTest(archive.NewTest(c, testenv.Env("O2I_S3_TEST_BUCKET")))
}

// TestStalledDocumentsOfOneProjectDelayNoOtherProject: the object store
// never answers for project A's documents (its connection accepted, the
// request never answered), and 30 of A's orders become due ahead of 200 of
// B's on the same partitions. B's invoices are all archived within a bound
// that the inline retries (five tries of 30 s writes behind a batch
// barrier) could never meet; A's are issued (numbers taken), stay created
// without a task while their events wait in the retry table, and are
// archived once the store answers for them again.
func TestStalledDocumentsOfOneProjectDelayNoOtherProject(t *testing.T) {
	// Not parallel: the bound is about head-of-line blocking, not about the
	// other tests of the package sharing the cores.
	const nA, nB = 30, 200
	suffix := uuid.NewString()[:8]
	a := newInvoicing(t, true, nil)
	b := newInvoicing(t, true, nil)
	store := newStallingStore(t, a.project)
	topic := orderTopic(t)
	var msgs []kafka.Message
	for i := range nA {
		no := fmt.Sprintf("SA-%s-%d", suffix, i)
		_, raw := a.dueOrder(no)
		msgs = append(msgs, kafka.Message{Key: []byte(a.project + "/" + no), Value: raw})
	}
	for i := range nB {
		no := fmt.Sprintf("SB-%s-%d", suffix, i)
		_, raw := b.dueOrder(no)
		msgs = append(msgs, kafka.Message{Key: []byte(b.project + "/" + no), Value: raw})
	}
	publish(t, topic, msgs)

	svc := invoicing.New(a.pool)
	svc.SetArchiveTimeout(3 * time.Second)
	svc.SetBreaker(breaker.Policy{Failures: 5, OpenFor: 3 * time.Second})
	iv := invoicing.NewInvoicer(svc, store.archive(t), testenv.KafkaBrokers())
	group := "o2i-invoicer-test-" + suffix
	iv.UseGroup(topic, group)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- iv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	start := time.Now()
	testenv.Eventually(t, 45*time.Second, fmt.Sprintf("all %d invoices of B archived while A's documents stall", nB), func() bool {
		return b.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, b.project) == nB
	})
	t.Logf("B's %d invoices archived in %s while A's documents stall", nB, time.Since(start).Round(time.Millisecond))
	testenv.Eventually(t, 30*time.Second, "A's orders in the retry table", func() bool {
		return a.count(`SELECT count(*) FROM invoicing_dead_letters WHERE project_id = $1 AND consumer_group = $2 AND resolved_at IS NULL`,
			a.project, group) == nA
	})
	if n := a.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'created'`, a.project); n != nA {
		t.Errorf("%d of A's documents created (issued, waiting for the archive), want %d", n, nA)
	}
	if n := a.count(`SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = $2`, a.project, invoicing.TaskInvoicingFailed); n != 0 {
		t.Errorf("%d invoicing_failed tasks for A after a short outage, want none", n)
	}

	store.heal()
	testenv.Eventually(t, 90*time.Second, "A's documents archived once the store answers", func() bool {
		return a.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, a.project) == nA
	})
	testenv.Eventually(t, 30*time.Second, "A's retries resolved", func() bool {
		return a.count(`SELECT count(*) FROM invoicing_dead_letters WHERE project_id = $1 AND resolved_at IS NULL`, a.project) == 0
	})
}
