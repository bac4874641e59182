package invoicing

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/store"
)

// Orders of one project issued at the same time share their transaction
// (group commit, store.Batcher): an order that finds none of its project's
// issuing transactions running is issued at once, alone; the orders that
// come while one runs wait for it and go together in the next (issueTx).
// A project's invoices take their numbers from one range, whose row lock
// is held from the numbers to the commit's WAL flush: issued one by one,
// they would each wait for a flush under that lock. Together they take
// their numbers in one statement and commit with one flush. Groups never
// mix projects, so no tenant waits for another's.
//
// A group that fails (a document breaks a rule, a statement fails, the
// database is gone) commits nothing; each of its orders is then issued
// alone by its caller, so one order's fault stays its own.
type issueGroups struct {
	mu        sync.Mutex
	byProject map[string]*store.Batcher[*issueCall] // each project that issued in this process: a few words each

	stall     time.Duration        // the batchers' Stall: issueGroupStall
	sizes     prometheus.Histogram // orders per group of several
	fallbacks prometheus.Counter   // groups that failed, their orders issued alone
}

func newIssueGroups() *issueGroups {
	return &issueGroups{stall: issueGroupStall,
		sizes: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "o2i_invoicer_issue_group_orders",
			Help: "Orders per issuing transaction of several orders of one project.", Buckets: []float64{2, 4, 8, 16}}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "o2i_invoicer_issue_group_fallbacks_total",
			Help: "Issuing transactions of several orders that failed; each of their orders was then issued alone."}),
	}
}

// issueGroupMax is the most orders of one issuing transaction, and
// issueGroupTimeout bounds its time (a transaction of orders of several
// callers does not end with the first caller's context).
const (
	issueGroupMax     = 16
	issueGroupTimeout = 30 * time.Second
)

// groupLockTimeout bounds the wait of a group of several orders for their
// locks (an order another transaction keeps locked fails the group, whose
// orders are then issued alone, each waiting only for its own).
const groupLockTimeout = "500ms"

// issueGroupStall is how long a project's issuing transaction may be in
// flight before the orders that come meanwhile get a second one beside it
// (store.Batcher.Stall): one stalled behind an order's lock then holds
// none of the others.
const issueGroupStall = 200 * time.Millisecond

// issueCall is one caller's order in its project's queue.
type issueCall struct {
	ctx     context.Context // the caller's: the group's trace (not its end)
	orderID string
	dates   IssueDates
	done    chan issueAnswer // buffered: the group never waits for a caller that gave up
}

// issueAnswer is what a group did with a call's order.
type issueAnswer struct {
	issued []Issued
	err    error
	alone  bool // not issued by the group: its caller issues it alone
}

// issueGrouped issues the order in the next issuing transaction of its
// project.
func (s *Service) issueGrouped(ctx context.Context, projectID, orderID string, d IssueDates) ([]Issued, error) {
	c := &issueCall{ctx: ctx, orderID: orderID, dates: d, done: make(chan issueAnswer, 1)}
	s.issues.of(projectID, s.issueGroup).Add(c)
	select {
	case a := <-c.done:
		if a.alone {
			return s.issueAlone(ctx, projectID, orderID, d)
		}
		return a.issued, a.err
	case <-ctx.Done():
		// Its group may still issue it: the next try finds it invoiced.
		return nil, ctx.Err()
	}
}

// of returns the project's batcher, writing its groups with write.
func (g *issueGroups) of(projectID string, write func(projectID string, calls []*issueCall)) *store.Batcher[*issueCall] {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.byProject[projectID]
	if !ok {
		if g.byProject == nil {
			g.byProject = map[string]*store.Batcher[*issueCall]{}
		}
		b = &store.Batcher[*issueCall]{Stall: g.stall, Take: takeIssueGroup,
			Write: func(calls []*issueCall) { write(projectID, calls) }}
		g.byProject[projectID] = b
	}
	return b
}

// waiting is how many of the project's calls wait for a group.
func (g *issueGroups) waiting(projectID string) int {
	g.mu.Lock()
	b := g.byProject[projectID]
	g.mu.Unlock()
	if b == nil {
		return 0
	}
	return b.Pending()
}

// takeIssueGroup takes the oldest calls waiting, at most issueGroupMax.
func takeIssueGroup(pending []*issueCall) (batch, rest []*issueCall) {
	n := min(len(pending), issueGroupMax)
	return slices.Clone(pending[:n]), append(pending[:0], pending[n:]...)
}

// issueGroup issues one group of a project's calls and answers each: a
// single call as IssueInvoices alone; several in one transaction, each
// answered alone when that transaction fails.
func (s *Service) issueGroup(projectID string, calls []*issueCall) {
	answers := make([]issueAnswer, len(calls))
	defer func() {
		if p := recover(); p != nil {
			for i := range answers {
				answers[i] = issueAnswer{err: fmt.Errorf("issuing group: panic: %v", p)}
			}
		}
		for i, c := range calls {
			c.done <- answers[i]
		}
	}()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), issueGroupTimeout)
	defer cancel()
	if len(calls) == 1 {
		c := calls[0]
		answers[0].issued, answers[0].err = s.issueAlone(ctx, projectID, c.orderID, c.dates)
		return
	}
	members := make([]*groupMember, len(calls))
	for i, c := range calls {
		members[i] = &groupMember{orderID: c.orderID, dates: c.dates}
	}
	s.issues.sizes.Observe(float64(len(calls)))
	if err := s.issueTx(ctx, projectID, members); err != nil {
		s.issues.fallbacks.Inc()
		for i := range answers {
			answers[i] = issueAnswer{alone: true}
		}
		return
	}
	for i, m := range members {
		switch {
		case m.alone:
			answers[i] = issueAnswer{alone: true}
		case m.held != nil:
			answers[i] = issueAnswer{err: m.held}
		default:
			answers[i] = issueAnswer{issued: m.out}
		}
	}
}
