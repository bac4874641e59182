package consume

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestChainsReuseTheirGoroutines: a goroutine whose chain ended waits for
// another key's chain and runs it; the messages of each key are still
// handled in their order, one at a time; the waiting goroutines end with
// the context.
func TestChainsReuseTheirGoroutines(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := newPool(2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	handled := map[string][]int64{}
	running := map[string]bool{}
	gate := make(chan struct{}) // handlers of the second part wait for it
	close(gate)
	done := make(chan kafka.Message, 100)
	handle := func(ctx context.Context, m kafka.Message) error {
		k := string(m.Key)
		mu.Lock()
		if running[k] {
			t.Errorf("key %s: two messages at once", k)
		}
		running[k] = true
		g := gate
		mu.Unlock()
		<-g
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

	// One chain after the other: the first starts a goroutine, which then
	// takes each next one as its key's chain is handed over (the test
	// hands them as dispatch would, waiting at most 5 s for a taker).
	p.dispatch(ctx, &wg, kafka.Message{Key: []byte("solo-0")}, handle, finish)
	<-done
	for i := 1; i < 20; i++ {
		key := fmt.Sprintf("solo-%d", i)
		p.mu.Lock()
		p.queues[key] = nil
		p.mu.Unlock()
		select {
		case p.idle <- chain{key, kafka.Message{Key: []byte(key), Offset: int64(i)}}:
		case <-time.After(5 * time.Second):
			t.Fatalf("chain %d: no goroutine waited for it", i)
		}
		<-done
	}
	if n := p.started.Load(); n != 1 {
		t.Errorf("20 chains one after the other started %d goroutines, want 1", n)
	}

	// Three keys at once, four messages each, all dispatched while the
	// first of each is still handled: their order is kept, one message of
	// a key at a time.
	mu.Lock()
	gate = make(chan struct{})
	mu.Unlock()
	for i := range 12 {
		p.dispatch(ctx, &wg, kafka.Message{Key: fmt.Appendf(nil, "k%d", i%3), Offset: int64(100 + i)}, handle, finish)
	}
	mu.Lock()
	close(gate)
	mu.Unlock()
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
	// One goroutine per chain running at once (three); the one that waited
	// takes one of them unless it was not back to waiting yet.
	if n := p.started.Load(); n > 4 {
		t.Errorf("three keys at once started %d goroutines in all, want at most 4", n)
	}

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
