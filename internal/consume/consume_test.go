package consume_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/consume"
	"github.com/o2i-service/o2i/internal/testenv"
)

// fill creates a topic of 3 partitions on the local stack's broker with n
// messages "0".."n-1".
func fill(t *testing.T, n int) string {
	t.Helper()
	topic := "o2i.test.consume." + uuid.NewString()[:8]
	conn, err := kafka.Dial("tcp", testenv.KafkaBrokers()[0])
	if err != nil {
		t.Fatalf("Kafka-protocol broker of the local stack is required: %v", err)
	}
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(testenv.KafkaBrokers()...), Topic: topic, Balancer: &kafka.Hash{}, AllowAutoTopicCreation: false}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	return topic
}

// seen records what a handler was given.
type seen struct {
	mu    sync.Mutex
	count map[string]int
}

func (s *seen) add(batch []kafka.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range batch {
		s.count[string(m.Value)]++
	}
}

func (s *seen) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.count)
}

// TestGroupRedeliversFailedBatches: a batch whose handler fails is not
// committed and comes again (the loop restarts its reader), every message
// is handled, and what was committed is not delivered to the group again.
func TestGroupRedeliversFailedBatches(t *testing.T) {
	const n = 300
	topic := fill(t, n)
	g := consume.Group{Name: "test", Brokers: testenv.KafkaBrokers(), GroupID: "o2i-test-" + uuid.NewString()[:8], Topics: []string{topic}, MaxBatch: 50}

	handled := &seen{count: map[string]int{}}
	var failures int
	var failedOnce string // the message whose first batch failed
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx, func(_ context.Context, batch []kafka.Message) error {
			if failures < 2 { // the first two batches fail
				failures++
				if failedOnce == "" {
					failedOnce = string(batch[0].Value)
				}
				return fmt.Errorf("handler failure %d", failures)
			}
			handled.add(batch)
			return nil
		})
	}()
	testenv.Eventually(t, 60*time.Second, "every message handled", func() bool { return handled.distinct() == n })
	cancel()
	<-done
	if failures != 2 {
		t.Fatalf("%d failures, want 2", failures)
	}
	handled.mu.Lock()
	if handled.count[failedOnce] == 0 {
		t.Errorf("message %s of the failed batch was never handled", failedOnce)
	}
	handled.mu.Unlock()

	// Committed: the same group, started again, gets nothing of it.
	again := &seen{count: map[string]int{}}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	g.Run(ctx2, func(_ context.Context, batch []kafka.Message) error { again.add(batch); return nil })
	if d := again.distinct(); d > 0 {
		t.Errorf("%d committed messages delivered again to the group", d)
	}
}
