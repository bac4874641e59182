package store

import "time"

// Waiting is the number of statements waiting for a runner.
func (g *Group) Waiting() int {
	g.batches.mu.Lock()
	defer g.batches.mu.Unlock()
	return len(g.batches.pending)
}

// StartsRunner reports whether a statement added now would start a runner
// of its own: none runs, or every running one has stalled.
func (g *Group) StartsRunner() bool {
	g.batches.mu.Lock()
	defer g.batches.mu.Unlock()
	_, ok := g.batches.runners.spare(time.Now(), g.batches.Stall)
	return ok
}
