package command_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestOrderReachesKafka: orders are accepted while the relay cannot reach
// Kafka, and their events arrive on o2i.orders once it can.
func TestOrderReachesKafka(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	brokers := testenv.KafkaBrokers()
	ends := endOffsets(t, brokers, event.TopicOrders)

	// A relay pointed at a port where nothing listens.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	stopDead := runRelay(t, &outbox.Relay{Pool: e.pool, Brokers: []string{dead}, Projects: []string{e.project}, MaxBackoff: 200 * time.Millisecond})

	var want []string
	for range 3 {
		no := uniqueNo("K")
		if r := e.postOrder(mustJSON(t, order(no))); r.status != 201 {
			t.Fatalf("order while Kafka is unreachable: %d %s", r.status, r.body)
		}
		want = append(want, no)
	}
	// Kafka is reachable (a relay that can reach it takes over): the events arrive.
	stopDead()
	runRelay(t, &outbox.Relay{Pool: e.pool, Brokers: brokers, Projects: []string{e.project}, Poll: 5 * time.Millisecond})
	got := map[string]event.Order{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p, off := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: event.TopicOrders, Partition: p, MaxWait: 50 * time.Millisecond})
			defer r.Close()
			r.SetOffset(off)
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				if !strings.HasPrefix(string(m.Key), e.project+"/") {
					continue
				}
				ev, err := event.Decode(m.Value)
				if err != nil || ev.Type != event.OrderCreated {
					t.Errorf("message %s: %v", m.Value, err)
					continue
				}
				var o event.Order
				json.Unmarshal(ev.Data, &o)
				mu.Lock()
				got[o.OrderNo] = o
				if len(got) == len(want) {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, no := range want {
		if o, ok := got[no]; !ok || o.ProjectID != e.project || len(o.Items) != 2 {
			t.Errorf("order %s: event %+v (found %v)", no, o, ok)
		}
	}
}

func runRelay(t *testing.T, r *outbox.Relay) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// endOffsets returns the current end offset of every partition of topic.
func endOffsets(t *testing.T, brokers []string, topic string) map[int]int64 {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers[0])
	if err != nil {
		t.Fatalf("Kafka-protocol broker of the local stack is required: %v", err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int]int64{}
	for _, p := range parts {
		lc, err := kafka.DialLeader(context.Background(), "tcp", brokers[0], topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		ends[p.ID], err = lc.ReadLastOffset()
		lc.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return ends
}
