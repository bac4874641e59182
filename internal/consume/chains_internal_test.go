package consume

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestChainsReuseTheirGoroutines: a key's chain runs on a goroutine whose
// chain ended before, if one waits, and the messages of each key are still
// handled in their order, one at a time.
func TestChainsReuseTheirGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pool{slots: newSlots(2), queues: map[string][]kafka.Message{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	handled := map[string][]int64{}
	running := map[string]bool{}
	done := make(chan kafka.Message, 100)
	handle := func(ctx context.Context, m kafka.Message) error {
		k := string(m.Key)
		mu.Lock()
		if running[k] {
			t.Errorf("key %s: two messages at once", k)
		}
		running[k] = true
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running[k] = false
		handled[k] = append(handled[k], m.Offset)
		mu.Unlock()
		return nil
	}
	finish := func(m kafka.Message, err error) {
		if err != nil {
			t.Errorf("offset %d: %v", m.Offset, err)
		}
		done <- m
	}

	// One chain after the other, each dispatched once the goroutine of the
	// one before waits for another: one goroutine runs them all.
	idle := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.idle) > 0
	}
	for i := range 20 {
		p.dispatch(ctx, &wg, kafka.Message{Key: fmt.Appendf(nil, "solo-%d", i), Offset: int64(i)}, handle, finish)
		<-done
		for deadline := time.Now().Add(5 * time.Second); !idle(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				t.Fatalf("chain %d: its goroutine never waited for another", i)
			}
		}
	}
	p.mu.Lock()
	if p.started != 1 {
		t.Errorf("20 chains one after the other started %d goroutines, want 1", p.started)
	}
	p.mu.Unlock()

	// Three keys at once, four messages each: their order is kept, one
	// message of a key at a time.
	for i := range 12 {
		p.dispatch(ctx, &wg, kafka.Message{Key: fmt.Appendf(nil, "k%d", i%3), Offset: int64(100 + i)}, handle, finish)
	}
	for range 12 {
		<-done
	}
	for k := range 3 {
		key := fmt.Sprintf("k%d", k)
		want := []int64{int64(100 + k), int64(103 + k), int64(106 + k), int64(109 + k)}
		mu.Lock()
		got := handled[key]
		mu.Unlock()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("key %s handled %v, want %v", key, got, want)
		}
	}
	// At most one goroutine per chain running at once (three), and the one
	// that waited is among them; one more only when a chain ended just as
	// another message of its key came, before its goroutine waited again.
	p.mu.Lock()
	if p.started > 4 {
		t.Errorf("three keys at once started %d goroutines in all, want at most 4", p.started)
	}
	p.mu.Unlock()

	// When the reader stops, the waiting goroutines end.
	cancel()
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("goroutines still waiting for chains after the context ended")
	}
}
