package httpx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineCtx is a request's deadline that costs nothing until something
// waits for it. A request answered from memory (a cached status record, a
// cached key) never waits on its context, yet context.WithTimeout would
// give every request a timer, a child in the connection's context and
// their allocations. deadlineCtx reports its deadline at once (Deadline)
// and makes the real context.WithDeadline the first time anything needs
// more: Done, Err, a child context, AfterFunc, or a look-up of the
// context package's own cancellation state. From then on it is that
// context in every respect, so nothing ever sees a deadline that passed
// without its cancellation.
type deadlineCtx struct {
	parent context.Context
	at     time.Time

	mu      sync.Mutex
	armed   atomic.Pointer[armedDeadline]
	stopped bool
}

type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// setDeadline sets the deadline of a deadlineCtx made without one (the
// request's context, which the route gives its deadline): at, or parent's
// own if earlier. Until then the context is its parent in every respect;
// whatever waited on it before (nothing does in the server, which sets it
// before the route's handler runs) keeps waiting on the parent alone.
func (c *deadlineCtx) setDeadline(at time.Time) {
	if d, ok := c.parent.Deadline(); ok && d.Before(at) {
		at = d
	}
	c.at = at
}

// arm makes the deadline's context (once) and returns it; the parent while
// no deadline is set.
func (c *deadlineCtx) arm() context.Context {
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	if c.at.IsZero() {
		return c.parent
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.at)
	if c.stopped {
		cancel()
	}
	c.armed.Store(&armedDeadline{ctx: ctx, cancel: cancel})
	return ctx
}

// stop releases the deadline: a context armed before is cancelled, one
// armed afterwards is cancelled as it is made.
func (c *deadlineCtx) stop() {
	c.mu.Lock()
	c.stopped = true
	a := c.armed.Load()
	c.mu.Unlock()
	if a != nil {
		a.cancel()
	}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if c.at.IsZero() {
		return c.parent.Deadline()
	}
	return c.at, true
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.arm().Done() }

func (c *deadlineCtx) Err() error { return c.arm().Err() }

// Value looks key up in the parent while the deadline is not armed. The
// context package finds a context's cancellation state (for a child
// context, for context.Cause) under a key of type *int: such a look-up
// arms the deadline first, so that it finds the deadline's own.
func (c *deadlineCtx) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	if _, internal := key.(*int); internal {
		return c.arm().Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc lets context.AfterFunc and the children of this context wait
// on the armed context directly, without a goroutine of their own.
func (c *deadlineCtx) AfterFunc(f func()) func() bool { return context.AfterFunc(c.arm(), f) }

func (c *deadlineCtx) String() string { return "httpx.deadline(" + c.at.String() + ")" }
