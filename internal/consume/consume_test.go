package consume_test

import (
	"context"
	"errors"
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
	// The broker may take a moment to know a topic it just created.
	for {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return topic
		}
		if !errors.Is(err, kafka.UnknownTopicOrPartition) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
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

// TestRunEachSlowKeyBlocksOnlyItself: one key's message hangs; every
// message of the other keys is handled meanwhile (also those on its
// partition, behind it), each key's messages in their order. Its partition
// is committed only up to the hanging message: the group, started again,
// gets it and what follows it on that partition, nothing of the others.
func TestRunEachSlowKeyBlocksOnlyItself(t *testing.T) {
	const n = 300
	topic := fill(t, n) // keys "0".."6"
	g := consume.Group{Name: "test", Brokers: testenv.KafkaBrokers(), GroupID: "o2i-test-" + uuid.NewString()[:8], Topics: []string{topic}, Workers: 4}

	var mu sync.Mutex
	last := map[string]int{}     // per key: the last value handled
	outOfOrder := []string{}     // keys whose messages came out of order
	handled := map[string]bool{} // values handled
	slowPartition := -1
	next := map[int]int64{} // per partition: the offset after the last message handled
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.RunEach(ctx, func(hctx context.Context, m kafka.Message) error {
			var v int
			fmt.Sscan(string(m.Value), &v)
			if string(m.Key) == "3" && v == 3 { // the first message of key 3 hangs until released or stopped
				mu.Lock()
				slowPartition = m.Partition
				mu.Unlock()
				select {
				case <-release:
				case <-hctx.Done():
					return hctx.Err()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if p, ok := last[string(m.Key)]; ok && p > v {
				outOfOrder = append(outOfOrder, string(m.Key))
			}
			last[string(m.Key)] = v
			handled[string(m.Value)] = true
			next[m.Partition] = max(next[m.Partition], m.Offset+1)
			return nil
		})
	}()
	// Every message but key 3's (43 of them, 3, 10, ..., 297) is handled while the head of key 3 hangs.
	others := 0
	for i := range n {
		if i%7 != 3 {
			others++
		}
	}
	testenv.Eventually(t, 60*time.Second, "the other keys' messages handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for v := range handled {
			var i int
			fmt.Sscan(v, &i)
			if i%7 != 3 {
				c++
			}
		}
		return c == others
	})
	mu.Lock()
	if len(handled) != others || len(outOfOrder) > 0 {
		t.Errorf("%d handled (want %d: key 3 waits behind its head), out of order: %v", len(handled), others, outOfOrder)
	}
	mu.Unlock()
	// The reader commits in the background: wait until every partition but
	// the hanging one is committed past its last message handled.
	client := &kafka.Client{Addr: kafka.TCP(testenv.KafkaBrokers()...), Timeout: 5 * time.Second}
	testenv.Eventually(t, 30*time.Second, "the other partitions committed", func() bool {
		mu.Lock()
		want := map[int]int64{}
		for p, o := range next {
			if p != slowPartition {
				want[p] = o
			}
		}
		mu.Unlock()
		parts := make([]int, 0, len(want))
		for p := range want {
			parts = append(parts, p)
		}
		r, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: g.GroupID, Topics: map[string][]int{topic: parts}})
		if err != nil {
			return false
		}
		for _, c := range r.Topics[topic] {
			if c.Error != nil || c.CommittedOffset < want[c.Partition] {
				return false
			}
		}
		return len(r.Topics[topic]) == len(want)
	})
	cancel()
	<-done

	// Started again, the group gets the hanging message and what is behind
	// it on its partition (at least once), nothing of the other partitions.
	again := &seen{count: map[string]int{}}
	var parts sync.Map
	ctx2, cancel2 := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel2()
	close(release)
	g.RunEach(ctx2, func(_ context.Context, m kafka.Message) error {
		again.add([]kafka.Message{m})
		parts.Store(m.Partition, true)
		return nil
	})
	if again.count["3"] != 1 {
		t.Errorf("the hanging message was not delivered again (%d)", again.count["3"])
	}
	for i := range n {
		if i%7 == 3 && again.count[fmt.Sprint(i)] == 0 {
			t.Errorf("message %d of key 3 (behind the hanging one) never handled", i)
		}
	}
	parts.Range(func(p, _ any) bool {
		if p.(int) != slowPartition {
			t.Errorf("partition %d delivered again although all of it was handled", p)
		}
		return true
	})
}

// TestRunEachWaitingGivesTheWorkerBack: with one worker, a message whose
// handler hangs inside Waiting (a dependency that never answers) does not
// hold the worker: every message of the other keys is handled meanwhile.
func TestRunEachWaitingGivesTheWorkerBack(t *testing.T) {
	const n = 100
	topic := fill(t, n)
	g := consume.Group{Name: "test", Brokers: testenv.KafkaBrokers(), GroupID: "o2i-test-" + uuid.NewString()[:8], Topics: []string{topic}, Workers: 1}
	handled := &seen{count: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.RunEach(ctx, func(hctx context.Context, m kafka.Message) error {
			if string(m.Value) == "3" {
				return consume.Waiting(hctx, func() error { <-hctx.Done(); return hctx.Err() })
			}
			handled.add([]kafka.Message{m})
			return nil
		})
	}()
	others := 0
	for i := range n {
		if i%7 != 3 {
			others++
		}
	}
	testenv.Eventually(t, 60*time.Second, "the other keys' messages handled by the one worker", func() bool {
		handled.mu.Lock()
		defer handled.mu.Unlock()
		c := 0
		for v := range handled.count {
			var i int
			fmt.Sscan(v, &i)
			if i%7 != 3 {
				c++
			}
		}
		return c == others
	})
	cancel()
	<-done
}
