package query_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/projection"
	"github.com/o2i-service/o2i/query"
)

// BenchmarkOrderStatus measures GET /v1/orders/{orderNo} through the whole
// handler stack (request id, span, auth, scope, rate limit, near cache,
// response) without the network, over 1,000 projected orders read from the
// process's near cache after a first pass. Its allocations per request are
// what the profiles of `make bench` compare; its time is no performance
// check (the benchmark's ratio to the ceiling is).
func BenchmarkOrderStatus(b *testing.B) {
	pool, rdb := testenv.Pool(b), testenv.Redis(b)
	project := testenv.Project(b, pool, true)
	key := testenv.Key(b, pool, project, "invoices:read")
	p := projection.New(pool, rdb, testenv.KafkaBrokers(), nil)
	const n = 1000
	var msgs []kafka.Message
	for i := range n {
		orderNo := fmt.Sprintf("B-%d", i)
		o := event.Order{ID: uuid.NewString(), ProjectID: project, Status: "created", Version: 1, FulfillmentStatus: "unfulfilled"}
		o.OrderNo = orderNo
		ev, err := event.New(event.OrderCreated, project, "order", o.ID, orderNo, 1, time.Now(), o)
		if err != nil {
			b.Fatal(err)
		}
		raw, err := event.Encode(ev)
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, kafka.Message{Topic: ev.Topic, Value: raw})
	}
	if err := p.Apply(context.Background(), msgs); err != nil {
		b.Fatal(err)
	}
	svc := query.New(pool, rdb)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go func() { _ = svc.Run(ctx) }()
	h := (&httpx.Server{Routes: svc.Routes(), Auth: apikey.NewAuthenticator(pool)}).Handler()
	get := func(i int) {
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/v1/orders/B-%d", i%n), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	time.Sleep(200 * time.Millisecond) // the near cache's subscription
	for i := range n {
		get(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		get(i)
		i++
	}
}
