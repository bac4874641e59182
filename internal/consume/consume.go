// Package consume holds what the service's Kafka consumers (projector,
// invoicer) share. It imports only kafka-go.
package consume

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
)

// FetchBatch blocks for one message, then takes what else the reader
// already has (waiting at most 2 ms for each), up to max, so that one
// round of work handles many events.
func FetchBatch(ctx context.Context, r *kafka.Reader, max int) ([]kafka.Message, error) {
	m, err := r.FetchMessage(ctx)
	if err != nil {
		return nil, err
	}
	msgs := []kafka.Message{m}
	for len(msgs) < max {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
		m, err := r.FetchMessage(qctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			break
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}
