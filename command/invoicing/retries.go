package invoicing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// The retry workers: the items of the retry table (dead_letters.go) go back
// through the same invoicing code as the events, RetryWorkers at once, each
// claimed for itself (claimRetries: two invoicers never retry one item at
// once) and on its own schedule: an item that fails again waits its own
// backoff and never holds up the items behind it.

// Retry worker defaults (Invoicer fields).
const (
	DefaultRetryWorkers = 8
	DefaultRetryPoll    = 500 * time.Millisecond
)

// retryLease is how long a claimed item stays with its invoicer: longer
// than a try may take.
func (iv *Invoicer) retryLease() time.Duration {
	return max(time.Minute, 2*iv.AttemptTimeout)
}

func (iv *Invoicer) policy() retryPolicy {
	return retryPolicy{retriesBeforeTask: iv.RetriesBeforeTask, taskAfter: iv.TaskAfter}
}

// retryLoop retries due items until ctx ends: whenever a worker is free it
// claims due items for the free workers; with nothing due it looks again
// after RetryPoll.
func (iv *Invoicer) retryLoop(ctx context.Context) {
	workers := make(chan struct{}, max(1, iv.RetryWorkers))
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case workers <- struct{}{}: // one free worker held
		case <-ctx.Done():
			return
		}
		free := 1 + cap(workers) - len(workers)
		due, err := iv.svc.claimRetries(ctx, iv.group, free, iv.retryLease())
		if err != nil && ctx.Err() == nil {
			slog.Warn("invoicer: claiming retries", "err", err)
		}
		if len(due) == 0 {
			<-workers
			wait := iv.RetryPoll
			if err != nil {
				wait = max(wait, 5*time.Second) // the database is away: no busy loop
			}
			sleep(ctx, wait)
			continue
		}
		for i, d := range due {
			if i > 0 {
				workers <- struct{}{}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-workers }()
				if err := iv.retryOne(ctx, d); err != nil && ctx.Err() == nil {
					slog.Warn("invoicer: recording a retry", "orderNo", d.orderNo, "err", err)
				}
			}()
		}
		if len(due) < free {
			sleep(ctx, iv.RetryPoll)
		}
	}
}

// RetryDeadLetters retries every item of the retry table that is due now,
// RetryWorkers at once, and returns when all are done: one that succeeds
// is resolved with its task (its failed documents are archived under their
// numbers), one that fails waits its next backoff. The invoicer's retry
// workers do the same continuously; this is the one-round form.
func (iv *Invoicer) RetryDeadLetters(ctx context.Context) error {
	var errs []error
	var mu sync.Mutex
	for {
		due, err := iv.svc.claimRetries(ctx, iv.group, 100, iv.retryLease())
		if err != nil || len(due) == 0 {
			return errors.Join(append(errs, err)...)
		}
		workers := make(chan struct{}, max(1, iv.RetryWorkers))
		var wg sync.WaitGroup
		for _, d := range due {
			workers <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-workers }()
				if err := iv.retryOne(ctx, d); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(due) < 100 {
			return errors.Join(errs...)
		}
	}
}

// retryOne tries a claimed item once more (bounded by AttemptTimeout) and
// records the outcome.
func (iv *Invoicer) retryOne(ctx context.Context, d deadLetter) error {
	actx := ctx
	if iv.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, iv.AttemptTimeout)
		defer cancel()
	}
	cause := iv.retryDeadLetter(actx, d)
	if ctx.Err() != nil {
		return ctx.Err() // stopped: the lease runs out and it is due again
	}
	if cause == nil {
		iv.svc.deps.metrics.retried.WithLabelValues("handled").Inc()
		return iv.svc.resolveDeadLetter(ctx, d)
	}
	iv.svc.deps.metrics.retried.WithLabelValues("failed").Inc()
	slog.Info("invoicer: retry failed", "orderNo", d.orderNo, "retriedBefore", d.retries, "err", cause)
	return iv.svc.retryDeadLetterLater(ctx, d, cause, iv.policy())
}

// retryDeadLetter handles an item's event once more (an event the
// invoicer cannot read is not its own: nothing to do) and archives the
// order's documents that are failed still, also when the event fails.
func (iv *Invoicer) retryDeadLetter(ctx context.Context, d deadLetter) error {
	var err error
	if j, ok := parseOrderEvent(d.payload); ok {
		err = iv.invoice(ctx, j)
	}
	return errors.Join(err, iv.archiveFailedOf(ctx, d.projectID, d.orderID))
}
