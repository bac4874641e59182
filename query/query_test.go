package query_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/projection"
	"github.com/o2i-service/o2i/query"
)

// env is an API with the read endpoints over the real read models, one
// project with a key, and a projector to feed the read models.
type env struct {
	t       *testing.T
	pool    *pgxpool.Pool
	rdb     *redis.Client
	c       *apitest.Client
	project string
	key     string
	proj    *projection.Projector
	archive *archive.Archive // the local stack's archive bucket
}

var (
	docOnce sync.Once
	doc     *apitest.Validator
)

func newEnv(t *testing.T, rdb *redis.Client) *env {
	t.Helper()
	docOnce.Do(func() {
		raw, err := os.ReadFile("../cmd/o2i/openapi.json")
		if err != nil {
			panic(err)
		}
		if doc, err = apitest.New(raw); err != nil {
			panic(err)
		}
	})
	pool := testenv.Pool(t)
	live := testenv.Redis(t)
	if rdb == nil {
		rdb = live
	}
	q := query.New(pool, rdb)
	a := archive.New(testenv.S3(t), testenv.Env("O2I_S3_BUCKET"))
	q.ServeDocumentsFrom(a)
	srv := &httpx.Server{Routes: q.Routes(), Auth: apikey.NewAuthenticator(pool)}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	e := &env{t: t, pool: pool, rdb: rdb, project: testenv.Project(t, pool, true), archive: a}
	e.key = testenv.Key(t, pool, e.project, "invoices:read")
	e.c = &apitest.Client{T: t, BaseURL: ts.URL, V: doc}
	e.proj = projection.New(pool, live, testenv.KafkaBrokers(), nil)
	return e
}

func (e *env) apply(evs ...event.Event) {
	e.t.Helper()
	var msgs []kafka.Message
	for _, ev := range evs {
		raw, err := event.Encode(ev)
		if err != nil {
			e.t.Fatal(err)
		}
		msgs = append(msgs, kafka.Message{Topic: ev.Topic, Value: raw})
	}
	if err := e.proj.Apply(context.Background(), msgs); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) order(orderNo string, version int64, status, fulfillment string) event.Event {
	o := event.Order{ID: uuid.NewString(), ProjectID: e.project, Status: status, Version: version, FulfillmentStatus: fulfillment}
	o.OrderNo = orderNo
	ev, err := event.New(event.OrderCreated, e.project, "order", o.ID, orderNo, version, time.Now(), o)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func (e *env) invoice(id, orderNo, number, status, paymentRef string, created time.Time) event.Event {
	inv := event.Invoice{ID: id, ProjectID: e.project, OrderNo: orderNo, Number: number, Status: status, Version: 1,
		Type: "invoice", Format: "zugferd", IssueDate: "2026-11-22", Currency: "EUR", PaymentRef: paymentRef,
		TotalNetCents: 10000, TotalTaxCents: 1900, TotalGrossCents: 11900, TestMode: true, CreatedAt: created}
	ev, err := event.New(event.InvoiceCreated, e.project, "invoice", id, orderNo, 1, time.Now(), inv)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func TestOrderStatusServedWithETagAnd304(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	inv := uuid.NewString()
	e.apply(e.order("S-1", 1, "invoiced", "fulfilled"), e.invoice(inv, "S-1", "TEST-2026-100", "archived", "", time.Now()))

	r := e.c.Do("GET", "/v1/orders/S-1", e.key, nil)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var body httpx.Envelope[readmodel.OrderStatus]
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := readmodel.OrderStatus{OrderNo: "S-1", Status: "invoiced", FulfillmentStatus: "fulfilled", WaitingFor: "none", WaitingForAll: []readmodel.Waiting{},
		Holds: []readmodel.Hold{}, Payment: "pending",
		Invoices: []readmodel.InvoiceRef{{ID: inv, Number: "TEST-2026-100", Status: "archived", URL: "/v1/invoices/" + inv, Type: "invoice"}}}
	if diff := cmp.Diff(want, body.Data); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	etag := r.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	r = e.c.Do("GET", "/v1/orders/S-1", e.key, nil, "If-None-Match", etag)
	if r.Status != http.StatusNotModified || len(r.Body) != 0 {
		t.Errorf("If-None-Match with the current ETag: %d %q, want 304 without body", r.Status, r.Body)
	}
	// Other orders' events, and a new version of this one that changes
	// nothing it shows, leave its ETag alone: it is derived from the
	// order's own record, never from a global revision.
	e.apply(e.order("S-2", 1, "created", "unfulfilled"), e.order("S-3", 1, "created", "unfulfilled"), e.order("S-1", 2, "invoiced", "fulfilled"))
	e.c.Do("GET", "/v1/orders/S-3", e.key, nil) // the events are applied
	if r = e.c.Do("GET", "/v1/orders/S-1", e.key, nil, "If-None-Match", etag); r.Status != http.StatusNotModified {
		t.Errorf("after other orders' events: %d, ETag %s (was %s), want 304", r.Status, r.Header.Get("ETag"), etag)
	}
	e.apply(e.order("S-1", 3, "invoiced", "partial"))
	r = e.c.Do("GET", "/v1/orders/S-1", e.key, nil, "If-None-Match", etag)
	if r.Status != 200 || r.Header.Get("ETag") == etag {
		t.Errorf("after a change: %d ETag %s (old %s), want 200 and a new ETag", r.Status, r.Header.Get("ETag"), etag)
	}
}

func TestOrderStatusFallsBackToPostgreSQL(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// Goods, not paid, partly shipped: waiting for both.
	f1 := e.order("F-1", 1, "created", "partial")
	var o event.Order
	if err := f1.DecodeData(&o); err != nil {
		t.Fatal(err)
	}
	o.RequiresShipping = true
	f1, err := event.New(event.OrderCreated, e.project, "order", o.ID, o.OrderNo, 1, time.Now(), o)
	if err != nil {
		t.Fatal(err)
	}
	e.apply(f1)
	fromRedis := e.c.Do("GET", "/v1/orders/F-1", e.key, nil)
	if d := fromRedis.JSON(t)["data"].(map[string]any); d["waitingFor"] != "payment" || !cmp.Equal(d["waitingForAll"], []any{"payment", "fulfillment"}) {
		t.Fatalf("from Redis: %s, want waitingFor payment, waitingForAll [payment fulfillment]", fromRedis.Body)
	}

	// Redis down: a client pointing where nothing listens.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { down.Close() })
	srv := &httpx.Server{Routes: query.New(e.pool, down).Routes(), Auth: apikey.NewAuthenticator(e.pool)}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c := &apitest.Client{T: t, BaseURL: ts.URL, V: doc}
	fromPG := c.Do("GET", "/v1/orders/F-1", e.key, nil)
	if fromPG.Status != 200 || fromPG.Header.Get("ETag") != fromRedis.Header.Get("ETag") {
		t.Fatalf("Redis down: %d ETag %s, want 200 and %s", fromPG.Status, fromPG.Header.Get("ETag"), fromRedis.Header.Get("ETag"))
	}
	if !cmp.Equal(fromPG.JSON(t)["data"], fromRedis.JSON(t)["data"]) {
		t.Errorf("PostgreSQL fallback %s differs from Redis %s", fromPG.Body, fromRedis.Body)
	}
	// Redis without the entry (for example after FLUSHALL): the same answer, never a 404.
	if err := e.rdb.Del(context.Background(), readmodel.OrderKey(e.project, "F-1")).Err(); err != nil {
		t.Fatal(err)
	}
	if r := e.c.Do("GET", "/v1/orders/F-1", e.key, nil); r.Status != 200 || !cmp.Equal(r.JSON(t)["data"], fromRedis.JSON(t)["data"]) {
		t.Errorf("Redis miss: %d %s", r.Status, r.Body)
	}
}

func TestUnknownOrderAndOtherProjectsOrders(t *testing.T) {
	t.Parallel()
	a := newEnv(t, nil)
	b := newEnv(t, nil)
	a.apply(a.order("X-1", 1, "created", "unfulfilled"), a.invoice(uuid.NewString(), "X-1", "TEST-X-1", "created", "pay-x", time.Now()))
	if r := a.c.Do("GET", "/v1/orders/X-1", a.key, nil); r.Status != 200 {
		t.Fatalf("own order: %d", r.Status)
	}
	for _, path := range []string{"/v1/orders/X-1", "/v1/orders/never-sent"} {
		r := b.c.Do("GET", path, b.key, nil)
		if code, _ := r.ErrorCode(t); r.Status != 404 || code != "order_not_found" {
			t.Errorf("%s with another project's key: %d %q, want 404 order_not_found", path, r.Status, code)
		}
	}
	for _, ref := range []string{"X-1", "TEST-X-1", "pay-x"} {
		r := b.c.Do("GET", "/v1/invoices/"+ref, b.key, nil)
		if code, _ := r.ErrorCode(t); r.Status != 404 || code != "invoice_not_found" {
			t.Errorf("invoice %s with another project's key: %d %q", ref, r.Status, code)
		}
	}
	if r := b.c.Do("GET", "/v1/invoices?orderNo=X-1", b.key, nil); len(r.JSON(t)["data"].([]any)) != 0 {
		t.Errorf("another project's listing shows %s", r.Body)
	}
}

func TestInvoiceByEveryReferenceKind(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	first, second, other := uuid.NewString(), uuid.NewString(), uuid.NewString()
	t0 := time.Now()
	e.apply(e.invoice(first, "R-1", "TEST-2026-201", "archived", "pay-r1", t0),
		e.invoice(second, "R-1", "TEST-2026-202", "created", "pay-r1", t0.Add(time.Second)),
		e.invoice(other, "R-2", "TEST-2026-203", "failed", "pay-r2", t0))
	tests := []struct{ ref, wantID string }{
		{first, first},           // UUID
		{"TEST-2026-201", first}, // number
		{"TEST-2026-203", other}, // number
		{"R-1", second},          // order number: the newest document
		{"pay-r2", other},        // payment reference
		{"pay-r1", second},       // payment reference: the newest document
		{url.PathEscape(other), other},
	}
	for _, tt := range tests {
		r := e.c.Do("GET", "/v1/invoices/"+tt.ref, e.key, nil)
		if r.Status != 200 {
			t.Errorf("%s: %d %s", tt.ref, r.Status, r.Body)
			continue
		}
		var body httpx.Envelope[query.Invoice]
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Data.ID != tt.wantID {
			t.Errorf("%s: got invoice %s, want %s", tt.ref, body.Data.ID, tt.wantID)
		}
	}
	r := e.c.Do("GET", "/v1/invoices/"+first, e.key, nil)
	var body httpx.Envelope[query.Invoice]
	_ = json.Unmarshal(r.Body, &body)
	want := query.Invoice{ID: first, Number: "TEST-2026-201", Status: "archived", URL: "/v1/invoices/" + first, OrderNo: "R-1",
		PaymentRef: ptr("pay-r1"), Type: "invoice", Format: "zugferd", IssueDate: "2026-11-22", Currency: "EUR",
		TotalNetCents: 10000, TotalTaxCents: 1900, TotalGrossCents: 11900, TestMode: true,
		PDFURL: "/v1/invoices/" + first + "/pdf", XMLURL: ptr("/v1/invoices/" + first + "/xml"),
		CreatedAt: t0.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)}
	if diff := cmp.Diff(want, body.Data); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if r2 := e.c.Do("GET", "/v1/invoices/"+first, e.key, nil, "If-None-Match", r.Header.Get("ETag")); r2.Status != 304 {
		t.Errorf("If-None-Match: %d, want 304", r2.Status)
	}
	r = e.c.Do("GET", "/v1/invoices/no-such-thing", e.key, nil)
	if code, _ := r.ErrorCode(t); r.Status != 404 || code != "invoice_not_found" {
		t.Errorf("unknown reference: %d %q", r.Status, code)
	}
}

func ptr(s string) *string { return &s }

type page struct {
	Data       []query.Invoice `json:"data"`
	NextCursor *string         `json:"nextCursor"`
	HasMore    bool            `json:"hasMore"`
}

func (e *env) list(q string) (page, apitest.Response) {
	e.t.Helper()
	r := e.c.Do("GET", "/v1/invoices"+q, e.key, nil)
	var p page
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &p); err != nil {
			e.t.Fatal(err)
		}
	}
	return p, r
}

func TestListFiltersAndParameterErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	t0 := time.Now()
	var evs []event.Event
	for i := range 9 {
		status := []string{"created", "archived", "failed"}[i%3]
		evs = append(evs, e.invoice(uuid.NewString(), fmt.Sprintf("L-%d", i%4), fmt.Sprintf("TEST-2026-3%02d", i), status, fmt.Sprintf("pay-%d", i%2), t0))
	}
	e.apply(evs...)
	count := func(q string) int {
		p, r := e.list(q)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		return len(p.Data)
	}
	tests := map[string]int{
		"":                             9,
		"?status=created":              3,
		"?status=archived":             3,
		"?status=failed":               3,
		"?number=TEST-2026-304":        1,
		"?orderNo=L-0":                 3,
		"?paymentRef=pay-1":            4,
		"?orderNo=L-1&status=archived": 1,
		"?limit=2":                     2,
	}
	for q, want := range tests {
		if got := count(q); got != want {
			t.Errorf("%s: %d invoices, want %d", q, got, want)
		}
	}
	first, _ := e.list("?limit=3&status=created")
	errs := []struct{ q, field string }{
		{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?limit=abc", "limit"}, {"?limit=2.5", "limit"}, {"?limit=-1", "limit"},
		{"?status=paid", "status"}, {"?status=", ""},
		{"?cursor=garbage", "cursor"},
		{"?cursor=" + tamper(*first.NextCursor) + "&status=created", "cursor"},
		{"?cursor=" + *first.NextCursor, "cursor"},                      // issued for other filters
		{"?cursor=" + *first.NextCursor + "&status=archived", "cursor"}, // issued for other filters
	}
	for _, tt := range errs {
		_, r := e.list(tt.q)
		if tt.field == "" {
			if r.Status != 200 {
				t.Errorf("%s: %d", tt.q, r.Status)
			}
			continue
		}
		code, field := r.ErrorCode(t)
		if r.Status != 422 || code != "validation_failed" || field != tt.field {
			t.Errorf("%s: %d %s %q, want 422 validation_failed %q", tt.q, r.Status, code, field, tt.field)
		}
	}
	// A cursor of another project is refused.
	other := newEnv(t, nil)
	r := other.c.Do("GET", "/v1/invoices?limit=3&status=created&cursor="+*first.NextCursor, other.key, nil)
	if _, field := r.ErrorCode(t); r.Status != 422 || field != "cursor" {
		t.Errorf("foreign cursor: %d field %q", r.Status, field)
	}
}

func tamper(c string) string {
	b := []byte(c)
	if b[5] == 'A' {
		b[5] = 'B'
	} else {
		b[5] = 'A'
	}
	return string(b)
}

// TestPaginationUnderConcurrentInserts walks every page while new invoices
// arrive: each invoice that existed at the start comes exactly once, in a
// stable order.
func TestPaginationUnderConcurrentInserts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	existing := map[string]bool{}
	var evs []event.Event
	for i := range 120 {
		id := uuid.NewString()
		existing[id] = true
		evs = append(evs, e.invoice(id, fmt.Sprintf("P-%d", i), fmt.Sprintf("TEST-P-%d", i), "created", "", time.Now()))
	}
	e.apply(evs...)

	stop := make(chan struct{})
	var added atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.apply(e.invoice(uuid.NewString(), fmt.Sprintf("N-%d", i), fmt.Sprintf("TEST-N-%d", i), "created", "", time.Now()))
			added.Add(1)
		}
	}()
	seen := map[string]int{}
	cursor := ""
	pages := 0
	for {
		q := "?limit=7"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p, r := e.list(q)
		if r.Status != 200 {
			t.Fatalf("page %d: %d %s", pages, r.Status, r.Body)
		}
		pages++
		for _, inv := range p.Data {
			seen[inv.ID]++
		}
		cursor = *p.NextCursor
		if !p.HasMore || pages > 200 {
			break
		}
		if pages == 5 { // the writer adds invoices mid-walk
			n := added.Load()
			testenv.Eventually(t, 10*time.Second, "invoices added mid-walk", func() bool { return added.Load() >= n+2 })
		}
	}
	close(stop)
	wg.Wait()
	for id := range existing {
		if seen[id] != 1 {
			t.Errorf("invoice %s seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("invoice %s seen %d times", id, n)
		}
	}
	// The last cursor returns only invoices recorded after the walk.
	e.apply(e.invoice(uuid.NewString(), "LATE", "TEST-LATE", "created", "", time.Now()))
	p, _ := e.list("?limit=100&cursor=" + cursor)
	if len(p.Data) == 0 || p.Data[len(p.Data)-1].Number != "TEST-LATE" {
		t.Errorf("tail after the last page: %d invoices", len(p.Data))
	}
	for _, inv := range p.Data {
		if existing[inv.ID] || seen[inv.ID] > 0 {
			t.Errorf("tail repeats invoice %s", inv.Number)
		}
	}
}

func TestDocumentsAreServedOnlyWhenArchived(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	created, failed := uuid.NewString(), uuid.NewString()
	e.apply(e.invoice(created, "D-1", "TEST-D-1", "created", "", time.Now()), e.invoice(failed, "D-2", "TEST-D-2", "failed", "", time.Now()))
	for _, path := range []string{"/v1/invoices/" + created + "/xml", "/v1/invoices/TEST-D-1/pdf", "/v1/invoices/D-2/xml"} {
		r := e.c.Do("GET", path, e.key, nil)
		if code, _ := r.ErrorCode(t); r.Status != http.StatusConflict || code != "document_not_archived" {
			t.Errorf("%s: %d %q, want 409 document_not_archived", path, r.Status, code)
		}
	}
	r := e.c.Do("GET", "/v1/invoices/nothing/xml", e.key, nil)
	if code, _ := r.ErrorCode(t); r.Status != http.StatusNotFound || code != "invoice_not_found" {
		t.Errorf("unknown: %d %q", r.Status, code)
	}
}

// TestUnanchoredDocumentsAreServedReadOnly: an invoice archived before the
// archive was anchored in the database is served as stored; a PDF that was
// never rendered is 409 document_not_archived, and the read side writes
// nothing to the archive (rendering it is `o2i archive backfill`).
func TestUnanchoredDocumentsAreServedReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	xml, err := os.ReadFile("../render/testdata/test-mode.xml")
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	until := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	if _, err := e.archive.Put(ctx, archive.InvoiceXMLKey(e.project, id), xml, "application/xml", until); err != nil {
		t.Fatal(err)
	}
	e.apply(e.invoice(id, "A-1", "TEST-A-1", "archived", "", time.Now()))

	r := e.c.Do("GET", "/v1/invoices/TEST-A-1/xml", e.key, nil)
	if r.Status != 200 || string(r.Body) != string(xml) || r.Header.Get("Content-Disposition") != `attachment; filename="TEST-A-1.xml"` {
		t.Fatalf("xml: %d %s", r.Status, r.Header)
	}
	r = e.c.Do("GET", "/v1/invoices/"+id+"/pdf", e.key, nil)
	if code, _ := r.ErrorCode(t); r.Status != http.StatusConflict || code != "document_not_archived" {
		t.Fatalf("pdf never rendered: %d %q, want 409 document_not_archived", r.Status, code)
	}
	if _, _, err := e.archive.Get(ctx, archive.InvoicePDFKey(e.project, id)); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("the read side wrote a PDF to the archive: %v", err)
	}
}

// TestNearCacheFollowsProjectedChanges: with the announcements followed, a
// status record read once (and cached in the process) shows the next change
// at once, not after the cache entry's lifetime.
func TestNearCacheFollowsProjectedChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	svc := query.New(e.pool, e.rdb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	srv := httptest.NewServer((&httpx.Server{Routes: svc.Routes(), Auth: apikey.NewAuthenticator(e.pool)}).Handler())
	t.Cleanup(srv.Close)
	c := &apitest.Client{T: t, BaseURL: srv.URL, V: doc}

	e.apply(e.order("N-1", 1, "created", "unfulfilled"))
	ctx2 := context.Background()
	rev, real, err := readmodel.Get(ctx2, e.rdb, e.project, "N-1")
	if err != nil {
		t.Fatal(err)
	}
	status := func() any {
		return c.Do("GET", "/v1/orders/N-1", e.key, nil).JSON(t)["data"].(map[string]any)["fulfillmentStatus"]
	}
	// Once the subscription stands, a read is cached: a record changed in
	// Redis behind the projectors' back (same revision, no announcement) is
	// then not what the process serves. Poll until that is so.
	fake := `{"orderNo":"N-1","status":"created","fulfillmentStatus":"partial","invoices":[]}`
	testenv.Eventually(t, 5*time.Second, "order status records served from the process cache", func() bool {
		if err := e.rdb.HSet(ctx2, readmodel.OrderKey(e.project, "N-1"), "rev", rev, "body", real).Err(); err != nil {
			t.Fatal(err)
		}
		status() // cached when the subscription stands
		if err := e.rdb.HSet(ctx2, readmodel.OrderKey(e.project, "N-1"), "rev", rev, "body", fake).Err(); err != nil {
			t.Fatal(err)
		}
		return status() == "unfulfilled"
	})
	e.apply(e.order("N-1", 2, "created", "fulfilled"))
	testenv.Eventually(t, 3*time.Second, "the change visible", func() bool { return status() == "fulfilled" })
}
