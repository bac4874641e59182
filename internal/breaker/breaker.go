// Package breaker is a circuit breaker per key (a dependency of one project):
// after Failures failures in a row its calls are refused at once for
// OpenFor, then one call probes; its success closes the breaker, its failure
// opens it again. The caller passes the time, so every decision is a pure
// function of the state and the clock it is given, and table-tested.
//
// Why not a library (sony/gobreaker): the invoicer needs one breaker per
// (dependency, project), created on first use, decisions that name the time
// the next call is allowed (a refused event is scheduled for then), and a
// result of a call let in under an earlier state must not count (thirty calls
// that hung while the breaker was closed fail one after the other after it
// opened: they must not keep it open longer). That is sixty lines here.
//
// Pure: it imports only the standard library and never reads the clock.
package breaker

import (
	"fmt"
	"sync"
	"time"
)

// Policy is when a breaker opens and how long it stays open.
type Policy struct {
	Failures int           // failures in a row that open it (at least 1)
	OpenFor  time.Duration // how long it refuses calls before one probe
}

// State is a breaker's state.
type State int

// The states.
const (
	Closed   State = iota // calls go through
	Open                  // calls are refused until the probe time
	HalfOpen              // one probe is in flight; other calls are refused (for a period at most)
)

func (s State) String() string {
	return [...]string{"closed", "open", "half-open"}[s]
}

// Breaker is one key's state. The zero value is closed.
type Breaker struct {
	state      State
	failures   int
	openUntil  time.Time
	generation uint64 // changes with every change of state
}

// Ticket is what Allow gives a call it lets through; Record takes it back.
type Ticket struct{ generation uint64 }

// Allow decides whether a call may go out at now: ok with a ticket, or not
// with the time the next call may (the probe time).
func (b *Breaker) Allow(p Policy, now time.Time) (t Ticket, ok bool, retryAt time.Time) {
	switch b.state {
	case Open, HalfOpen:
		// Open: refused until the probe time. Half open: the probe decides;
		// one whose outcome never came (its caller stopped) is replaced by
		// another after a period.
		if now.Before(b.openUntil) {
			return Ticket{}, false, b.openUntil
		}
		b.set(HalfOpen)
		b.openUntil = now.Add(p.OpenFor)
		return Ticket{b.generation}, true, time.Time{}
	}
	return Ticket{b.generation}, true, time.Time{}
}

// Record counts the outcome of a call let through with t. A call let
// through under an earlier state counts nothing: its outcome says nothing
// about the dependency since.
func (b *Breaker) Record(p Policy, t Ticket, failed bool, now time.Time) {
	if t.generation != b.generation {
		return
	}
	switch {
	case !failed:
		b.failures = 0
		if b.state != Closed {
			b.set(Closed)
		}
	case b.state == HalfOpen:
		b.open(p, now)
	default:
		b.failures++
		if b.failures >= max(1, p.Failures) {
			b.open(p, now)
		}
	}
}

// State returns the breaker's state.
func (b *Breaker) State() State { return b.state }

func (b *Breaker) open(p Policy, now time.Time) {
	b.set(Open)
	b.openUntil = now.Add(p.OpenFor)
}

func (b *Breaker) set(s State) {
	b.state, b.failures = s, 0
	b.generation++
}

// OpenError is a call refused because its breaker is open: the dependency
// failed repeatedly; the next call may go out at Until.
type OpenError struct {
	Key   string
	Until time.Time
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("%s: circuit open after repeated failures, next try at %s", e.Key, e.Until.UTC().Format(time.RFC3339))
}

// Set holds one breaker per key, safe for concurrent use.
type Set struct {
	policy Policy
	mu     sync.Mutex
	m      map[string]*Breaker
}

// NewSet returns breakers of policy p, each created closed on first use.
func NewSet(p Policy) *Set {
	return &Set{policy: p, m: map[string]*Breaker{}}
}

// Allow is Breaker.Allow of key's breaker; a refusal is an *OpenError.
func (s *Set) Allow(key string, now time.Time) (Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[key]
	if !ok {
		b = &Breaker{}
		s.m[key] = b
	}
	t, ok, until := b.Allow(s.policy, now)
	if !ok {
		return t, &OpenError{Key: key, Until: until}
	}
	return t, nil
}

// Record is Breaker.Record of key's breaker.
func (s *Set) Record(key string, t Ticket, failed bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[key]; ok {
		b.Record(s.policy, t, failed, now)
	}
}

// State returns key's state (closed for a key never used).
func (s *Set) State(key string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.m[key]; ok {
		return b.state
	}
	return Closed
}
