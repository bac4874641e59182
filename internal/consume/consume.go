// Package consume is the one consumer loop of the service's Kafka roles
// (projector, invoicer): reader settings, batching, commits, restart and
// backoff. A role brings only its handler: a batch handler (Run, the
// projector's: each batch committed after it was handled) or a handler of
// one message (RunEach, the invoicer's: messages handled on a pool, each
// waiting only behind the messages of its key, and every partition
// committed up to its lowest message not yet handled). It imports only
// kafka-go.
package consume

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// Group is one role's consumer group.
type Group struct {
	Name     string // the role, for the logs
	Brokers  []string
	GroupID  string
	Topics   []string
	MaxBatch int // events handed to the handler at once (Run)

	// RunEach: Workers messages are handled at once (a handler waiting on
	// a dependency inside Waiting does not count); MaxInFlight bounds the
	// messages fetched and not yet handled (default 4 × Workers, at least
	// 100).
	Workers     int
	MaxInFlight int
}

// Handler handles a batch of events. It returns an error only when the
// batch must come again (nothing of it is committed); an event that can
// never be handled is the handler's to set aside (a dead letter).
type Handler func(ctx context.Context, batch []kafka.Message) error

const (
	commitTimeout = 10 * time.Second // handing offsets to the reader
	firstBackoff  = 100 * time.Millisecond
	maxBackoff    = 10 * time.Second
)

// Run consumes until ctx ends. Each batch is committed only after handle
// succeeded; the reader commits in the background every 100 ms, so a crash
// replays at most that much, which the handlers ignore (they are
// idempotent). A failed fetch, handler or commit recreates the reader after
// a backoff (doubling from 100 ms to 10 s, reset by a handled batch), and
// the batch is delivered again: never skipped.
func (g Group) Run(ctx context.Context, handle Handler) {
	g.loop(ctx, func(ctx context.Context) (bool, error) { return g.consume(ctx, handle) })
}

// loop runs one reader after the other until ctx ends, with the backoff of
// Run.
func (g Group) loop(ctx context.Context, consume func(context.Context) (bool, error)) {
	backoff := firstBackoff
	for ctx.Err() == nil {
		handled, err := consume(ctx)
		if ctx.Err() != nil {
			return
		}
		if handled {
			backoff = firstBackoff
		}
		slog.Error(g.Name+": restarting", "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(backoff*2, maxBackoff)
	}
}

// consume runs one reader until an error; handled reports whether it
// handled any batch.
func (g Group) consume(ctx context.Context, handle Handler) (handled bool, err error) {
	r := g.reader()
	defer r.Close()
	for {
		// Waiting for events is not bounded: the reader's fetch requests
		// are (MaxWait, its dial and read timeouts).
		batch, err := FetchBatch(ctx, r, g.MaxBatch)
		if err != nil {
			return handled, fmt.Errorf("fetch: %w", err)
		}
		if err := handle(ctx, batch); err != nil {
			return handled, err
		}
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		err = r.CommitMessages(cctx, batch...)
		cancel()
		if err != nil {
			return handled, fmt.Errorf("commit: %w", err)
		}
		handled = true
	}
}

// reader is the group's reader.
func (g Group) reader() *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:        g.Brokers,
		GroupID:        g.GroupID,
		GroupTopics:    g.Topics,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        100 * time.Millisecond,
		StartOffset:    kafka.FirstOffset,
		CommitInterval: 100 * time.Millisecond,
		QueueCapacity:  max(100, 2*g.MaxBatch, g.Workers),
		// A crashed member's partitions move to the others after 10 s (the
		// default 30 s would stall its orders that long).
		SessionTimeout:    10 * time.Second,
		HeartbeatInterval: time.Second,
	})
}

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
