// Package outbox is the transactional outbox: Enqueue records events in the
// transaction of the state change they describe, and the Relay publishes
// committed rows to Kafka. An event is published if and only if its
// transaction commits, at least once. It imports internal/event, pgx and
// kafka-go; nothing of the domain.
package outbox

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/event"
)

const insertSQL = `INSERT INTO outbox (project_id, topic, msg_key, event_id, event_type, payload)
VALUES ($1, $2, $3, $4, $5, $6)`

// Queue appends the inserts of evs to b, for callers that send their whole
// transaction as pipelined batches. The events are published if and only if
// the transaction the batch runs in commits.
func Queue(b *pgx.Batch, evs ...event.Event) error {
	for _, ev := range evs {
		payload, err := event.Encode(ev)
		if err != nil {
			return fmt.Errorf("outbox: encode %s: %w", ev.Type, err)
		}
		if ev.Topic == "" {
			return fmt.Errorf("outbox: event %s of type %s has no topic", ev.ID, ev.Type)
		}
		b.Queue(insertSQL, ev.ProjectID, ev.Topic, ev.PartitionKey(), ev.ID, ev.Type, payload)
	}
	return nil
}

// Enqueue records evs in tx: they are published if and only if tx commits.
func Enqueue(ctx context.Context, tx pgx.Tx, evs ...event.Event) error {
	var b pgx.Batch
	if err := Queue(&b, evs...); err != nil {
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
