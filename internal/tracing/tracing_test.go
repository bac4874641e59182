package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

var remote = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
	SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
	TraceFlags: trace.FlagsSampled,
	Remote:     true,
})

func TestContextRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		parent, state   string
		wantParent      string
		wantValidRemote bool
	}{
		{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"with tracestate", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"none", "", "", "", false},
		{"malformed", "00-nothex-00f067aa0ba902b7-01", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := FromContext(context.Background(), tc.parent, tc.state)
			if got := trace.SpanContextFromContext(ctx).IsValid(); got != tc.wantValidRemote {
				t.Fatalf("valid span context %v, want %v", got, tc.wantValidRemote)
			}
			p, s := Context(ctx)
			if p != tc.wantParent || (tc.wantValidRemote && s != tc.state) {
				t.Errorf("Context = %q, %q; want %q, %q", p, s, tc.wantParent, tc.state)
			}
		})
	}
}

func TestKafkaHeaders(t *testing.T) {
	t.Parallel()
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	hs := Headers(ctx)
	if len(hs) != 1 || hs[0].Key != "traceparent" {
		t.Fatalf("headers %v", hs)
	}
	m := kafka.Message{Headers: append([]kafka.Header{{Key: "eventId", Value: []byte("e")}}, hs...)}
	if got := trace.SpanContextFromContext(Message(context.Background(), m)); !got.Equal(remote) {
		t.Errorf("extracted %v, want %v", got, remote)
	}
	if hs := Headers(context.Background()); hs != nil {
		t.Errorf("headers without a span: %v", hs)
	}
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("role", "test")
	log.InfoContext(trace.ContextWithRemoteSpanContext(context.Background(), remote), "with span")
	log.InfoContext(context.Background(), "without")
	dec := json.NewDecoder(&buf)
	var with, without map[string]any
	if err := dec.Decode(&with); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&without); err != nil {
		t.Fatal(err)
	}
	if with["trace_id"] != remote.TraceID().String() || with["span_id"] != remote.SpanID().String() || with["role"] != "test" {
		t.Errorf("line with a span: %v", with)
	}
	if _, ok := without["trace_id"]; ok {
		t.Errorf("line without a span: %v", without)
	}
}

// BenchmarkStartNoop is the cost of the global no-op tracer, which Start
// avoids while tracing is off.
func BenchmarkStartNoop(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := Tracer().Start(ctx, "x", trace.WithSpanKind(trace.SpanKindInternal))
		span.End()
	}
}

// BenchmarkStartOff is the cost of a span with attributes while tracing is
// off, on a context without trace context (a request without traceparent).
func BenchmarkStartOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := Start(ctx, "x", trace.SpanKindInternal, EventID.String("e"), OrderNo.String("o"))
		End(span, nil)
	}
}

// BenchmarkRowContextOff is what the outbox pays per row while tracing is
// off: reading the (absent) trace context of the writer's span.
func BenchmarkRowContextOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if p, _ := Context(ctx); p != "" {
			b.Fatal(p)
		}
	}
}
