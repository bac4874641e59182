package consume

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/testenv"
)

// A handler done waiting and queued for its worker again holds no place of
// the waiting ones: the next wait still gives its worker back. (With the
// place held, the second wait below would run holding the only worker, the
// first handler could never take it back, and the test would never end.)
func TestWaitingDoneGivesBackItsPlace(t *testing.T) {
	s := &slots{workers: &workers{h: handoff[chan struct{}]{free: 1}}, waiting: make(chan struct{}, 1)}
	ctx := context.WithValue(context.Background(), slotsKey{}, s)

	if err := s.workers.take(ctx); err != nil { // the first handler's worker
		t.Fatal(err)
	}
	taken := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- Waiting(ctx, func() error {
			<-taken // another handler took the worker meanwhile
			return nil
		})
		s.workers.give()
	}()
	if err := s.workers.take(ctx); err != nil { // the second handler's worker, free while the first waits
		t.Fatal(err)
	}
	close(taken)
	for len(s.waiting) != 0 { // the first is done waiting, queued for the worker
		runtime.Gosched()
	}
	if err := Waiting(ctx, func() error {
		return <-first // the first takes the worker back and ends
	}); err != nil {
		t.Fatal(err)
	}
	s.workers.give()
}

// TestHandoff: who gets a worker. Free ones go at once; a freed one goes to
// the longest queued handler back from a wait before any message not
// started yet, each queue first come first served.
func TestHandoff(t *testing.T) {
	t.Parallel()
	type op struct {
		do   string // "new X" (a message not started), "back X" (a handler back from a wait), "give", "cancel X"
		want string // take: "now" or "queued"; give: who gets it, or "free"; cancel: "removed" or "not queued"
	}
	tests := []struct {
		name    string
		workers int
		ops     []op
	}{
		{"free workers go at once, then messages queue", 2, []op{
			{"new a", "now"}, {"new b", "now"}, {"new c", "queued"}, {"give", "c"}, {"give", "free"}, {"new d", "now"}}},
		{"a handler back from a wait goes before the messages queued earlier", 1, []op{
			{"new a", "now"}, {"new b", "queued"}, {"new c", "queued"}, {"back w", "queued"}, {"give", "w"}, {"give", "b"}, {"give", "c"}, {"give", "free"}}},
		{"handlers back from a wait in their order", 1, []op{
			{"new a", "now"}, {"back v", "queued"}, {"new b", "queued"}, {"back w", "queued"}, {"give", "v"}, {"give", "w"}, {"give", "b"}}},
		{"a handler back from a wait takes a free worker at once", 1, []op{
			{"back w", "now"}, {"new a", "queued"}, {"give", "a"}}},
		{"a cancelled message is not handed a worker", 1, []op{
			{"new a", "now"}, {"new b", "queued"}, {"new c", "queued"}, {"cancel b", "removed"}, {"give", "c"}, {"cancel c", "not queued"}, {"give", "free"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := handoff[string]{free: tt.workers}
			for i, o := range tt.ops {
				var got string
				switch verb, who, _ := strings.Cut(o.do, " "); verb {
				case "new", "back":
					got = map[bool]string{true: "now", false: "queued"}[h.take(who, verb == "back")]
				case "give":
					got = "free"
					if w, ok := h.give(); ok {
						got = w
					}
				case "cancel":
					got = map[bool]string{true: "removed", false: "not queued"}[h.cancel(who)]
				}
				if got != o.want {
					t.Fatalf("step %d (%s): %s, want %s", i, o.do, got, o.want)
				}
			}
		})
	}
}

// TestReturningWaiterGoesBeforeNewMessages: with one worker, a handler
// back from a wait on a dependency gets the worker as soon as it is freed,
// before the messages dispatched (and queued for a worker) while it
// waited. First come first served, it would finish only after all of them:
// a backlog would be started entirely before any of it was finished.
func TestReturningWaiterGoesBeforeNewMessages(t *testing.T) {
	p := newPool(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	waiting, back, running, gate := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	handle := func(hctx context.Context, m kafka.Message) error {
		switch v := string(m.Value); v {
		case "waiter":
			err := Waiting(hctx, func() error { close(waiting); <-back; return nil })
			record("waiter done")
			return err
		case "busy": // holds the one worker until the gate opens
			close(running)
			<-gate
			record(v)
		default:
			record(v)
		}
		return nil
	}
	var wg sync.WaitGroup
	dispatch := func(v string) {
		p.dispatch(ctx, &wg, kafka.Message{Key: []byte(v), Value: []byte(v)}, handle, func(kafka.Message, error) {})
	}
	queued := func(n int) func() bool { // handlers queued for the worker
		return func() bool {
			p.slots.workers.mu.Lock()
			defer p.slots.workers.mu.Unlock()
			return len(p.slots.workers.h.fresh)+len(p.slots.workers.h.back) == n
		}
	}
	dispatch("waiter")
	<-waiting // it gave its worker back
	dispatch("busy")
	<-running
	for i, v := range []string{"new 1", "new 2", "new 3"} {
		dispatch(v)
		testenv.Eventually(t, 10*time.Second, v+" queued for the worker", queued(i+1))
	}
	close(back)
	testenv.Eventually(t, 10*time.Second, "the waiter back from its wait, queued for the worker", queued(4))
	close(gate)
	wg.Wait()
	if want := []string{"busy", "waiter done", "new 1", "new 2", "new 3"}; !slices.Equal(order, want) {
		t.Errorf("handled in the order %q, want %q", order, want)
	}
}
