// Package tracing carries W3C trace context across the service's processes:
// from an API request through the outbox row and the Kafka headers to the
// relay, the invoicer, the archive writer and the projectors. Spans go to
// the global OpenTelemetry tracer provider, a no-op unless Setup installed
// an exporter, so that with tracing off a span costs one interface call and
// no allocation. A slog handler adds trace_id and span_id to every log line
// written with a context that carries a span. It imports the OpenTelemetry
// API and SDK and kafka-go (the message headers); nothing of the service.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of the service's spans.
const Name = "github.com/o2i-service/o2i"

// Attribute keys the service sets on its spans.
const (
	RequestID = attribute.Key("o2i.request_id") // the X-Request-Id of the API call that started the trace
	EventID   = attribute.Key("o2i.event_id")
	EventType = attribute.Key("o2i.event_type")
	OrderNo   = attribute.Key("o2i.order_no")
	InvoiceID = attribute.Key("o2i.invoice_id")
	ProjectID = attribute.Key("o2i.project_id")
	Roles     = attribute.Key("o2i.roles") // the roles of the process (resource)
)

// propagator is W3C trace context (traceparent, tracestate). It is fixed
// rather than taken from the global, so that the context travels even when
// tracing is off here and on in a process downstream.
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// tracer delegates to the global provider, also to one installed later.
var tracer = otel.Tracer(Name)

// enabled is set by Install: until then Start returns at once.
var enabled atomic.Bool

// Tracer returns the service's tracer from the global provider (a no-op
// until Setup or Install).
func Tracer() trace.Tracer { return tracer }

// Enabled reports whether spans are recorded (Setup or Install ran).
func Enabled() bool { return enabled.Load() }

// Start starts a span named name as a child of the span in ctx. With
// tracing off it returns ctx and the span in it, which is not recording:
// ending it does nothing, and the trace context in ctx goes on unchanged
// (what the no-op tracer does, without its allocations).
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	// A copy, so that attrs does not escape: the callers' slices stay on
	// the stack while tracing is off.
	return tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(slices.Clone(attrs)...))
}

// End records err on span (status error) and ends it.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Setup installs a tracer provider that exports spans over OTLP/HTTP to
// endpoint (a URL such as http://collector:4318), in batches, with service
// as the service name and attrs on the resource (the process's roles). An empty endpoint installs nothing: spans stay
// no-ops. The returned shutdown flushes the spans not yet exported; call it
// once at exit.
func Setup(ctx context.Context, endpoint, service string, attrs ...attribute.KeyValue) (shutdown func(context.Context) error, err error) {
	if endpoint == "" {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", endpoint, err)
	}
	tp := Install(sdktrace.NewBatchSpanProcessor(exp), service, attrs...)
	return tp.Shutdown, nil
}

// Install makes a tracer provider with processor p the global one and
// returns it; tests pass a simple processor over an in-memory exporter.
func Install(p sdktrace.SpanProcessor, service string, attrs ...attribute.KeyValue) *sdktrace.TracerProvider {
	res := resource.NewSchemaless(append([]attribute.KeyValue{semconv.ServiceName(service)}, attrs...)...)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	enabled.Store(true)
	return tp
}

// Context returns the W3C traceparent and tracestate of the span in ctx,
// empty when ctx carries no valid span context.
func Context(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	c := mapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// FromContext returns ctx with the remote span context of traceparent and
// tracestate; ctx unchanged when traceparent is empty or invalid.
func FromContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, mapCarrier{"traceparent": traceparent, "tracestate": tracestate})
}

type mapCarrier map[string]string

func (c mapCarrier) Get(k string) string { return c[k] }
func (c mapCarrier) Set(k, v string)     { c[k] = v }
func (c mapCarrier) Keys() []string {
	ks := make([]string, 0, len(c))
	for k := range c {
		ks = append(ks, k)
	}
	return ks
}

// HTTP returns ctx with the remote span context of h's traceparent and
// tracestate headers.
func HTTP(ctx context.Context, h interface{ Get(string) string }) context.Context {
	return FromContext(ctx, h.Get("Traceparent"), h.Get("Tracestate")) // canonical: no allocation
}

// Headers returns the Kafka headers traceparent and tracestate of the span
// in ctx (none without a valid span).
func Headers(ctx context.Context) []kafka.Header {
	tp, ts := Context(ctx)
	if tp == "" {
		return nil
	}
	hs := []kafka.Header{{Key: "traceparent", Value: []byte(tp)}}
	if ts != "" {
		hs = append(hs, kafka.Header{Key: "tracestate", Value: []byte(ts)})
	}
	return hs
}

// Message returns ctx with the remote span context of m's traceparent and
// tracestate headers.
func Message(ctx context.Context, m kafka.Message) context.Context {
	var tp, ts string
	for _, h := range m.Headers {
		switch h.Key {
		case "traceparent":
			tp = string(h.Value)
		case "tracestate":
			ts = string(h.Value)
		}
	}
	return FromContext(ctx, tp, ts)
}

// Produce starts the producer span of a message to topic, a child of the
// span in ctx; Headers of the returned context go on the message.
func Produce(ctx context.Context, topic string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !enabled.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracer.Start(ctx, "outbox publish "+topic, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(semconv.MessagingSystemKafka, semconv.MessagingDestinationName(topic)),
		trace.WithAttributes(slices.Clone(attrs)...))
}

// Consume starts a consumer span for message m, a child of the span its
// headers carry; name is the role, for instance "invoicer".
func Consume(ctx context.Context, name string, m kafka.Message) (context.Context, trace.Span) {
	ctx = Message(ctx, m)
	if !enabled.Load() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return tracer.Start(ctx, name+" "+m.Topic, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(semconv.MessagingSystemKafka, semconv.MessagingDestinationName(m.Topic),
			semconv.MessagingKafkaMessageOffset(int(m.Offset)), attribute.Int("messaging.kafka.partition", m.Partition)))
}

// LogHandler wraps h: a record written with a context that carries a valid
// span gets the attributes trace_id and span_id.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(as)}
}
func (l logHandler) WithGroup(name string) slog.Handler { return logHandler{l.Handler.WithGroup(name)} }
