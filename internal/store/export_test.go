package store

// Waiting is the number of statements waiting for a runner.
func (g *Group) Waiting() int {
	g.batches.mu.Lock()
	defer g.batches.mu.Unlock()
	return len(g.batches.pending)
}
