package consume

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
)

// MessageHandler handles one message. It returns an error only when the
// message must come again (it is then not committed, and the reader
// restarts); a message that can never be handled, or not now, is the
// handler's to set aside (a dead letter, a retry).
type MessageHandler func(ctx context.Context, m kafka.Message) error

// RunEach consumes until ctx ends without a batch-wide barrier: messages
// are handled on Workers goroutines as they arrive, the messages of one key
// in their order (each waits only behind the earlier ones of its key, never
// behind a slow message of another key), and each partition is committed
// up to its lowest message not handled yet (handled out of order, committed
// in order: a crash replays at most the unfinished messages and those
// after them, which the handlers ignore). A handler's error stops the
// reader: what is handled is committed, the failed message and those after
// it on its partition come again after the backoff of Run.
func (g Group) RunEach(ctx context.Context, handle MessageHandler) {
	g.loop(ctx, func(ctx context.Context) (bool, error) { return g.consumeEach(ctx, handle) })
}

// consumeEach runs one reader until an error; handled reports whether any
// message was handled.
func (g Group) consumeEach(parent context.Context, handle MessageHandler) (handled bool, err error) {
	r := g.reader()
	defer r.Close()
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	workers := max(1, g.Workers)
	inFlight := g.MaxInFlight
	if inFlight <= 0 {
		inFlight = max(100, 4*workers)
	}
	p := newPool(workers)
	fetched := make(chan struct{}, inFlight)
	tr := newTracker()
	var mu sync.Mutex
	var wg sync.WaitGroup
	finish := func(m kafka.Message, herr error) {
		defer func() { <-fetched }()
		if herr != nil {
			stop(fmt.Errorf("handle %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, herr))
			return
		}
		mu.Lock()
		handled = true
		mu.Unlock()
		if c, ok := tr.done(m); ok {
			cctx, cancel := context.WithTimeout(ctx, commitTimeout)
			err := r.CommitMessages(cctx, c)
			cancel()
			if err != nil {
				stop(fmt.Errorf("commit: %w", err))
			}
		}
	}
	for ctx.Err() == nil {
		select {
		case fetched <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		// Waiting for events is not bounded: the reader's fetch requests
		// are (MaxWait, its dial and read timeouts).
		m, ferr := r.FetchMessage(ctx)
		if ferr != nil {
			<-fetched
			if ctx.Err() == nil {
				stop(fmt.Errorf("fetch: %w", ferr))
			}
			break
		}
		tr.add(m)
		p.dispatch(ctx, &wg, m, handle, finish)
	}
	wg.Wait() // every handler is bounded in time by its own deadlines
	mu.Lock()
	defer mu.Unlock()
	if parent.Err() != nil {
		return handled, parent.Err()
	}
	return handled, context.Cause(ctx)
}

// pool runs the messages of each key in order, Workers at once.
type pool struct {
	slots  *slots
	mu     sync.Mutex
	queues map[string][]kafka.Message // the keys with a running chain, and what waits in it
	// idle hands a new chain to a goroutine whose chain ended lately and
	// that waits up to chainIdle for another (unbuffered: a send succeeds
	// only while one waits). A goroutine's stack has grown to what a
	// handler needs; a new goroutine for every chain grew its stack again
	// each time (a fifth of the invoicer's handling of an order event that
	// needed no invoice).
	idle    chan chain
	started atomic.Int64 // goroutines started, for the tests
}

func newPool(workers int) *pool {
	return &pool{slots: newSlots(workers), queues: map[string][]kafka.Message{}, idle: make(chan chain)}
}

// chain is the first message of a key with no running chain.
type chain struct {
	key string
	m   kafka.Message
}

// chainIdle is how long a goroutine whose chain ended waits for another.
const chainIdle = time.Second

// slots are the workers and the places of handlers waiting on a dependency
// without their worker (waiting: 4 × Workers, so that the waits given up
// never make the work unbounded: past them a handler waits holding its
// worker, as without Waiting).
type slots struct {
	workers *workers
	waiting chan struct{}
}

func newSlots(n int) *slots {
	return &slots{workers: &workers{h: handoff[chan struct{}]{free: n}}, waiting: make(chan struct{}, 4*n)}
}

// dispatch hands m to its key's chain, starting one when the key has none:
// on a goroutine whose chain ended lately, else on a new one.
func (p *pool) dispatch(ctx context.Context, wg *sync.WaitGroup, m kafka.Message, handle MessageHandler, finish func(kafka.Message, error)) {
	key := string(m.Key)
	if key == "" { // no key: ordered within its partition
		key = "\x00" + strconv.Itoa(m.Partition)
	}
	p.mu.Lock()
	if q, running := p.queues[key]; running {
		p.queues[key] = append(q, m)
		p.mu.Unlock()
		return
	}
	p.queues[key] = nil
	p.mu.Unlock()
	select {
	case p.idle <- chain{key, m}:
	default:
		p.started.Add(1)
		wg.Add(1)
		go p.runChains(ctx, wg, chain{key, m}, handle, finish)
	}
}

// runChains runs c's chain, then the chains handed to it while it waits up
// to chainIdle for one, until none comes or ctx ends.
func (p *pool) runChains(ctx context.Context, wg *sync.WaitGroup, c chain, handle MessageHandler, finish func(kafka.Message, error)) {
	defer wg.Done()
	idle := time.NewTimer(chainIdle)
	defer idle.Stop()
	for {
		p.runChain(ctx, c, handle, finish)
		idle.Reset(chainIdle)
		select {
		case c = <-p.idle:
		case <-idle.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// runChain handles c's message and then the messages queued behind it on
// its key, until the key's queue is empty.
func (p *pool) runChain(ctx context.Context, c chain, handle MessageHandler, finish func(kafka.Message, error)) {
	m := c.m
	for {
		finish(m, p.run(ctx, m, handle))
		p.mu.Lock()
		q := p.queues[c.key]
		if len(q) == 0 {
			delete(p.queues, c.key)
			p.mu.Unlock()
			return
		}
		m, p.queues[c.key] = q[0], q[1:]
		p.mu.Unlock()
	}
}

// run handles m holding a worker (given back while the handler waits
// inside Waiting).
func (p *pool) run(ctx context.Context, m kafka.Message, handle MessageHandler) error {
	if err := p.slots.workers.take(ctx); err != nil {
		return err
	}
	defer p.slots.workers.give()
	return handle(context.WithValue(ctx, slotsKey{}, p.slots), m)
}

type slotsKey struct{}

// Waiting runs f, a wait on a dependency outside the handler's own work
// (a remote API, an object store), without holding the handler's worker:
// while it waits, another message is handled (as long as fewer than
// 4 × Workers handlers wait so; beyond, f runs holding the worker). Back
// from f, the handler gets the next free worker before any message not
// started yet. Outside a RunEach handler it just runs f.
func Waiting(ctx context.Context, f func() error) error {
	s, ok := ctx.Value(slotsKey{}).(*slots)
	if !ok {
		return f()
	}
	select {
	case s.waiting <- struct{}{}:
	default:
		return f()
	}
	s.workers.give()
	err := f()
	// The place is given back before the worker is taken again: a handler
	// done waiting and queued for a worker waits on no dependency, and
	// holding the place would let such handlers fill them, so that the
	// next wait (another project's hanging provider) held its worker.
	<-s.waiting
	s.workers.takeBack()
	return err
}

// workers hands out the workers to goroutines, as handoff decides.
type workers struct {
	mu sync.Mutex
	h  handoff[chan struct{}]
}

// take waits for a worker for a message not started yet, or until ctx
// ends.
func (w *workers) take(ctx context.Context) error {
	ch := make(chan struct{})
	w.mu.Lock()
	now := w.h.take(ch, false)
	w.mu.Unlock()
	if now {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	queued := w.h.cancel(ch)
	w.mu.Unlock()
	if !queued { // handed over meanwhile: passed on
		w.give()
	}
	return ctx.Err()
}

// takeBack waits for a worker for a handler back from a wait. It does not
// end with the context: the handler is bounded in time, and the workers
// free up as the running handlers end.
func (w *workers) takeBack() {
	ch := make(chan struct{})
	w.mu.Lock()
	now := w.h.take(ch, true)
	w.mu.Unlock()
	if !now {
		<-ch
	}
}

// give frees a worker, handing it to the next in line.
func (w *workers) give() {
	w.mu.Lock()
	ch, ok := w.h.give()
	w.mu.Unlock()
	if ok {
		close(ch)
	}
}

// handoff decides who gets a worker: a free one at once; a freed one goes
// to the longest queued handler back from a wait, else to the longest
// queued message not started yet. Handlers back from a wait are half done
// (rows, leases, connections held): first come first served, they queued
// behind every message fetched meanwhile, and a backlog of 1,000 invoices
// was all issued before the first one was archived. Not safe for
// concurrent use (workers locks it).
type handoff[T comparable] struct {
	free  int
	back  []T // handlers back from a wait
	fresh []T // messages not started yet
}

// take gives t a worker now (true) or queues it (false).
func (h *handoff[T]) take(t T, back bool) bool {
	if h.free > 0 {
		h.free--
		return true
	}
	if back {
		h.back = append(h.back, t)
	} else {
		h.fresh = append(h.fresh, t)
	}
	return false
}

// give frees a worker: it returns whom it goes to, or false when none is
// queued (it is free then).
func (h *handoff[T]) give() (T, bool) {
	var t T
	switch {
	case len(h.back) > 0:
		t, h.back = h.back[0], h.back[1:]
	case len(h.fresh) > 0:
		t, h.fresh = h.fresh[0], h.fresh[1:]
	default:
		h.free++
		return t, false
	}
	return t, true
}

// cancel removes a queued message not started yet; false when t is not
// queued (it was given a worker).
func (h *handoff[T]) cancel(t T) bool {
	for i, q := range h.fresh {
		if q == t {
			h.fresh = append(h.fresh[:i], h.fresh[i+1:]...)
			return true
		}
	}
	return false
}

// tracker knows, per partition, the messages fetched and not handled yet,
// and the offset committed last.
type tracker struct {
	mu    sync.Mutex
	parts map[partitionKey]*partitionState
}

type partitionKey struct {
	topic     string
	partition int
}

type partitionState struct {
	open      map[int64]int // offset -> messages fetched with it and not handled yet
	maxDone   int64         // the highest offset handled
	committed int64         // the next offset committed (what the group resumes from)
}

func newTracker() *tracker { return &tracker{parts: map[partitionKey]*partitionState{}} }

// add notes a fetched message.
func (t *tracker) add(m kafka.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := partitionKey{m.Topic, m.Partition}
	s, ok := t.parts[k]
	if !ok {
		// The group resumed the partition at its first message.
		s = &partitionState{open: map[int64]int{}, maxDone: m.Offset - 1, committed: m.Offset}
		t.parts[k] = s
	}
	s.open[m.Offset]++
}

// done notes a handled message and returns the message to commit when the
// partition's committable position moved: every message before its lowest
// unfinished one is handled.
func (t *tracker) done(m kafka.Message) (kafka.Message, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.parts[partitionKey{m.Topic, m.Partition}]
	if s == nil {
		return kafka.Message{}, false
	}
	if s.open[m.Offset]--; s.open[m.Offset] <= 0 {
		delete(s.open, m.Offset)
	}
	s.maxDone = max(s.maxDone, m.Offset)
	next := s.maxDone + 1
	for o := range s.open {
		next = min(next, o)
	}
	if next <= s.committed {
		return kafka.Message{}, false
	}
	s.committed = next
	// CommitMessages commits the offset after the message's.
	return kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: next - 1}, true
}
