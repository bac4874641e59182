package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/internal/tracing"
)

// traces records the spans of the traces a test registered in an in-memory
// exporter; TestMain installs it as the service's tracer provider, so that
// every test runs with tracing on, and the spans of other tests' traces are
// dropped.
var traces = &traceRecorder{exp: tracetest.NewInMemoryExporter(), ids: map[trace.TraceID]bool{}}

type traceRecorder struct {
	exp *tracetest.InMemoryExporter
	mu  sync.Mutex
	ids map[trace.TraceID]bool
}

func (r *traceRecorder) watch(id trace.TraceID) {
	r.mu.Lock()
	r.ids[id] = true
	r.mu.Unlock()
}

func (r *traceRecorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *traceRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	ok := r.ids[s.SpanContext().TraceID()]
	r.mu.Unlock()
	if ok {
		_ = r.exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{s})
	}
}
func (r *traceRecorder) Shutdown(context.Context) error   { return nil }
func (r *traceRecorder) ForceFlush(context.Context) error { return nil }

// spans returns the recorded spans of trace id.
func (r *traceRecorder) spans(id trace.TraceID) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range r.exp.GetSpans() {
		if s.SpanContext.TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

// TestOneTraceFromRequestToArchive: the trace of an order's API call runs
// through the relay, the invoicer, the archive writer and, with the
// invoice.archived event, through the relay again to the projector: one
// trace id, each hop's span a child of the one before, and the request id
// of the API call on it.
func TestOneTraceFromRequestToArchive(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)

	// The caller (a gateway, say) started the trace.
	tid := trace.TraceID(uuid.New())
	caller := trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}
	traces.watch(tid)
	no := "TR-" + uuid.NewString()[:8]
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":4900,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":4900,"externalRef":"ref-1"}],"grossTotalCents":4900}`, no, "pay-"+no)),
		"Idempotency-Key", no, "traceparent", fmt.Sprintf("00-%s-%s-01", tid, caller))
	if r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	reqID := r.Header.Get("X-Request-Id")
	waitStatus(t, c, key, no, func(d map[string]any) bool {
		invs := d["invoices"].([]any)
		return len(invs) == 1 && invs[0].(map[string]any)["status"] == "archived"
	})

	// The hops, each found by its parent.
	var spans tracetest.SpanStubs
	find := func(parent trace.SpanID, kind trace.SpanKind, name string) (tracetest.SpanStub, bool) {
		for _, s := range spans {
			if s.Parent.SpanID() == parent && s.SpanKind == kind && strings.HasPrefix(s.Name, name) {
				return s, true
			}
		}
		return tracetest.SpanStub{}, false
	}
	var missing string
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range spans {
				t.Logf("span %q %s parent %s kind %s", s.Name, s.SpanContext.SpanID(), s.Parent.SpanID(), s.SpanKind)
			}
			t.Logf("missing: %s", missing)
		}
	})
	testenv.Eventually(t, 30*time.Second, "the order's trace from the API to the projector", func() bool {
		spans = traces.spans(tid)
		api, ok := find(caller, trace.SpanKindServer, "POST /v1/orders")
		if missing = "API span"; !ok {
			return false
		}
		if missing = "request id on the API span"; !hasAttr(api, string(tracing.RequestID), reqID) {
			return false
		}
		relay, ok := find(api.SpanContext.SpanID(), trace.SpanKindProducer, "outbox publish o2i.orders")
		if missing = "relay span of order.created"; !ok {
			return false
		}
		inv, ok := find(relay.SpanContext.SpanID(), trace.SpanKindConsumer, "invoicer o2i.orders")
		if missing = "invoicer span"; !ok {
			return false
		}
		if missing = "order number on the invoicer span"; !hasAttr(inv, string(tracing.OrderNo), no) {
			return false
		}
		if _, ok := find(relay.SpanContext.SpanID(), trace.SpanKindConsumer, "projector"); !ok {
			missing = "projector span of order.created"
			return false
		}
		arc, ok := find(inv.SpanContext.SpanID(), trace.SpanKindInternal, "archive invoice")
		if missing = "archive span"; !ok {
			return false
		}
		archived, ok := find(arc.SpanContext.SpanID(), trace.SpanKindProducer, "outbox publish o2i.invoices")
		if missing = "relay span of invoice.archived"; !ok {
			return false
		}
		_, ok = find(archived.SpanContext.SpanID(), trace.SpanKindConsumer, "projector")
		missing = "projector span of invoice.archived"
		return ok
	})
}

func hasAttr(s tracetest.SpanStub, key, value string) bool {
	for _, a := range s.Attributes {
		if string(a.Key) == key && a.Value.AsString() == value {
			return true
		}
	}
	return false
}
