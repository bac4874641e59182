package store

import (
	"log/slog"
	"sync"
	"time"
)

// Batcher is the engine of a group commit: items added by concurrent
// callers that arrive while a batch is being written wait for the next one
// and are written together, so the database's work per statement and per
// commit (executor start, commit, WAL flush, the round trip) is shared.
//
//   - An item that finds no batch in flight is written at once, alone;
//     batches form only while one is written, so an idle service adds no
//     delay.
//   - One runner writes batch after batch while items wait, and a second
//     only while the first's batch has been in flight for Stall or longer
//     (a backend waiting for a core or a lock, a slow flush), so that a
//     stalled batch does not hold every item behind it. More runners would
//     split the batches and share less (docs/performance.md, round 8).
//
// Take and Write are the user's: Take splits the waiting items (oldest
// first) into the next batch (a slice of its own) and the rest (kept at
// the front of pending: the slots after it are cleared), Write writes a batch and answers
// each of its items. Both run in the runner's goroutine, Take under the
// batcher's lock. The zero value with Take and Write set is ready.
type Batcher[T any] struct {
	Stall time.Duration
	Take  func(pending []T) (batch, rest []T)
	Write func(batch []T)
	// OnStallRunner, when set, is called when a second runner starts
	// beside a stalled one (a metric).
	OnStallRunner func()

	mu      sync.Mutex
	pending []T
	runners runners
}

// Add queues it for the next batch, starting a runner when none can take
// it. The item's answer comes from Write.
func (b *Batcher[T]) Add(it T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, it)
	if slot, ok := b.runners.spare(time.Now(), b.Stall); ok {
		if b.runners.busy() && b.OnStallRunner != nil {
			b.OnStallRunner()
		}
		b.runners.active[slot] = true
		go b.run(slot)
	}
}

// Pending is how many items wait for a batch (not the ones being written).
func (b *Batcher[T]) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// run writes batches in its slot until nothing waits, or until another
// runner that is not stalled can take the rest.
func (b *Batcher[T]) run(slot int) {
	for {
		b.mu.Lock()
		var batch []T
		now := time.Now()
		b.runners.since[slot] = time.Time{}
		if !b.runners.redundant(slot, now, b.Stall) && len(b.pending) > 0 {
			var rest []T
			batch, rest = b.Take(b.pending)
			clear(b.pending[len(rest):])
			b.pending = rest
		}
		if len(batch) == 0 {
			b.runners.active[slot] = false
			b.mu.Unlock()
			return
		}
		b.runners.since[slot] = now
		b.mu.Unlock()
		b.write(batch)
	}
}

// write is Write, which must answer every item: a panic is logged and the
// runner goes on (Write's own recovery answers the items it held).
func (b *Batcher[T]) write(batch []T) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("group commit: panic in a batch's write", "panic", p)
		}
	}()
	b.Write(batch)
}

// batchRunners is the most runners of a Batcher.
const batchRunners = 2

// runners are a group commit's runner slots: whether each runs, and since
// when its batch has been in flight (zero between batches).
type runners struct {
	active [batchRunners]bool
	since  [batchRunners]time.Time
}

// busy reports whether a runner runs.
func (r *runners) busy() bool { return r.active[0] || r.active[1] }

// spare returns a free slot for another runner: the first when none runs, a
// further one only while every running runner's batch has been in flight
// for stall or longer.
func (r *runners) spare(now time.Time, stall time.Duration) (int, bool) {
	free := -1
	for i, on := range r.active {
		switch {
		case !on:
			if free < 0 {
				free = i
			}
		case r.since[i].IsZero() || now.Sub(r.since[i]) < stall:
			return 0, false // a runner is not stalled: it takes the item
		}
	}
	return free, free >= 0
}

// redundant reports whether the runner in slot may stop though items wait:
// another runner runs whose batch is not stalled, and it takes them (every
// runner looks at the waiting items before it stops).
func (r *runners) redundant(slot int, now time.Time, stall time.Duration) bool {
	for i, on := range r.active {
		if i != slot && on && (r.since[i].IsZero() || now.Sub(r.since[i]) < stall) {
			return true
		}
	}
	return false
}
