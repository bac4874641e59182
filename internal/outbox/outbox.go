// Package outbox is the transactional outbox: Enqueue records events in the
// transaction of the state change they describe, and the Relay publishes
// committed rows to Kafka. An event is published if and only if its
// transaction commits, at least once. It imports internal/event,
// internal/tracing (the trace context a row carries to the message
// headers), pgx, kafka-go and the OpenTelemetry trace API; nothing of the
// domain.
package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/tracing"
)

// Table is the outbox table.
const Table = "outbox"

func insertSQL(table string) string {
	return `INSERT INTO ` + table + ` (` + Columns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
}

var insertOutbox = insertSQL(Table)

// Columns are the columns an event fills, in the order of Values, for
// callers that write the outbox row inside a larger statement.
const Columns = "project_id, topic, msg_key, event_id, event_type, payload, traceparent, tracestate"

// Row is an event's outbox row. Traceparent and Tracestate are the W3C
// trace context of the span that wrote it, empty without one (stored as
// NULL).
type Row struct {
	ProjectID, Topic, Key, EventID, Type string
	Payload                              []byte
	Traceparent, Tracestate              string
}

// RowOf returns ev's outbox row, with the trace context of the span in ctx.
func RowOf(ctx context.Context, ev event.Event) (Row, error) {
	payload, err := event.Encode(ev)
	if err != nil {
		return Row{}, fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
	}
	if ev.Topic == "" {
		return Row{}, fmt.Errorf("outbox: event %s of type %s has no topic", ev.ID, ev.Type)
	}
	tp, ts := tracing.Context(ctx)
	return Row{ProjectID: ev.ProjectID, Topic: ev.Topic, Key: ev.PartitionKey(), EventID: ev.ID, Type: ev.Type, Payload: payload,
		Traceparent: tp, Tracestate: ts}, nil
}

// Values returns the column values of ev's outbox row (see Columns), with
// the trace context of the span in ctx.
func Values(ctx context.Context, ev event.Event) ([]any, error) {
	r, err := RowOf(ctx, ev)
	if err != nil {
		return nil, err
	}
	return []any{r.ProjectID, r.Topic, r.Key, r.EventID, r.Type, r.Payload, Null(r.Traceparent), Null(r.Tracestate)}, nil
}

// Null returns s, or nil (SQL NULL) when s is empty.
func Null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Queue appends the inserts of evs to b, for callers that send their whole
// transaction as pipelined batches. The events are published if and only if
// the transaction the batch runs in commits; they carry the trace context
// of the span in ctx.
func Queue(ctx context.Context, b *pgx.Batch, evs ...event.Event) error {
	return queueInto(ctx, b, insertOutbox, evs...)
}

func queueInto(ctx context.Context, b *pgx.Batch, insert string, evs ...event.Event) error {
	for _, ev := range evs {
		vals, err := Values(ctx, ev)
		if err != nil {
			return err
		}
		b.Queue(insert, vals...)
	}
	return nil
}

// Enqueue records evs in tx: they are published if and only if tx commits.
// They carry the trace context of the span in ctx to the consumers.
func Enqueue(ctx context.Context, tx pgx.Tx, evs ...event.Event) error {
	return enqueueInto(ctx, tx, insertOutbox, evs...)
}

func enqueueInto(ctx context.Context, tx pgx.Tx, insert string, evs ...event.Event) error {
	var b pgx.Batch
	if err := queueInto(ctx, &b, insert, evs...); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("outbox: insert: %w", err)
	}
	return nil
}
