package invoicing

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/breaker"
	"github.com/o2i-service/o2i/internal/store"
)

// The retry table (invoicing_dead_letters). An order event whose one try
// failed goes here at once, one row per order (a later failing event of the
// order replaces the row's event), and the invoicer's retry workers
// (retries.go) try it again through the same invoicing code: after 1 s,
// doubling, at most 30 s apart (retryDelay), and never before the failed
// dependency's breaker lets the next call out. Nothing waits inline.
//
// When the review task opens (escalate): at once for a failure that can
// never go away by trying again (permanent: the engine refuses the order,
// the stored data cannot be read, the archive holds another document under
// the key); for anything else (a dependency down or slow, the database)
// only when the event keeps failing: after RetriesBeforeTask retries (5) or
// TaskAfter (10 minutes) since its first failure, whichever comes first.
// Until then a failure is a retry, not a dead letter: no task, and the
// documents it issued stay created. From then on it is a dead letter as
// before: the invoicing_failed task is open and the documents whose
// rendering or archiving failed are failed and name it; it is still retried
// (at most 30 s apart), and the retry that succeeds resolves the task and
// archives the failed documents under their numbers.

// TaskInvoicingFailed is the review task of an order whose invoice the
// invoicer could not issue or archive and keeps failing (see above).
const TaskInvoicingFailed = "invoicing_failed"

// Retry defaults (Invoicer fields).
const (
	DefaultRetriesBeforeTask = 5
	DefaultTaskAfter         = 10 * time.Minute
	maxRetryDelay            = 30 * time.Second
)

// deadLetter is an order event in the retry table, as a retry claims it.
type deadLetter struct {
	id, projectID, orderID, orderNo, eventID string
	payload                                  []byte
	retries                                  int
	failingFor                               time.Duration // since its first failure
	taskOpen                                 bool
}

// retryPolicy is when a failing event's review task opens.
type retryPolicy struct {
	retriesBeforeTask int
	taskAfter         time.Duration
}

// retryDelay is the wait before the next retry of an event retried n times
// so far: 1 s, doubling, at most 30 s.
func retryDelay(n int) time.Duration {
	return min(time.Second<<min(max(n, 0), 5), maxRetryDelay)
}

// nextRetry is the wait after a failure with cause of an event retried n
// times: retryDelay, or longer while the breaker of the dependency that
// refused the call stays open (no call before it lets one out).
func nextRetry(n int, cause error, now time.Time) time.Duration {
	d := retryDelay(n)
	var open *breaker.OpenError
	if errors.As(cause, &open) {
		d = max(d, open.Until.Sub(now))
	}
	return d
}

// escalate reports whether a failure opens the review task: a permanent
// one at once, another after p.retriesBeforeTask retries or p.taskAfter of
// failing. A document that only waits for the one before it in its number
// range (waiting, ErrChainPending) opens none: that one's own failure has
// the task, and the wait ends when it is archived.
func escalate(p retryPolicy, permanent, waiting bool, retries int, failingFor time.Duration) bool {
	if waiting {
		return false
	}
	return permanent || retries >= p.retriesBeforeTask || failingFor >= p.taskAfter
}

// onlyWaiting reports whether every failure in cause is ErrChainPending (a
// joined failure of something else is not only a wait).
func onlyWaiting(cause error) bool {
	if joined, ok := cause.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		for _, e := range errs {
			if !onlyWaiting(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return errors.Is(cause, ErrChainPending)
}

// recordFailure puts an order event whose try failed with cause into the
// retry table of group, due after nextRetry (a row of the order that is
// open already takes the event, keeping its schedule and count), and opens
// the review task when escalate says so. It reports whether the task is
// open.
func (s *Service) recordFailure(ctx context.Context, j orderJob, cause error, group string, p retryPolicy) (taskOpen bool, err error) {
	perm := permanent(cause)
	delay := nextRetry(0, cause, time.Now())
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var d deadLetter
		var failingMillis int64
		err := tx.QueryRow(ctx, `INSERT INTO invoicing_dead_letters (id, project_id, order_id, order_no, event_id, payload, error, attempts,
				next_retry_at, consumer_group)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 1, now() + $8::bigint * interval '1 millisecond', $9)
			ON CONFLICT (order_id) WHERE resolved_at IS NULL DO UPDATE
			SET event_id = EXCLUDED.event_id, payload = EXCLUDED.payload, error = EXCLUDED.error,
				attempts = invoicing_dead_letters.attempts + 1
			RETURNING id::text, retries, (extract(epoch FROM now() - created_at) * 1000)::bigint, task_opened_at IS NOT NULL`,
			uuid.NewString(), j.projectID, j.order.ID, j.order.OrderNo, j.eventID, j.raw, cause.Error(), delay.Milliseconds(), group).
			Scan(&d.id, &d.retries, &failingMillis, &d.taskOpen)
		if err != nil {
			return err
		}
		d.projectID, d.orderNo = j.projectID, j.order.OrderNo
		if !d.taskOpen && !escalate(p, perm, onlyWaiting(cause), d.retries, time.Duration(failingMillis)*time.Millisecond) {
			return nil
		}
		taskOpen = true
		return openFailureTaskTx(ctx, tx, d, cause)
	})
	return taskOpen, err
}

// openFailureTaskTx opens (or keeps open) the order's invoicing_failed task
// and marks the documents whose rendering or archiving failed with cause as
// failed, naming it.
func openFailureTaskTx(ctx context.Context, tx pgx.Tx, d deadLetter, cause error) error {
	if _, err := tx.Exec(ctx, `UPDATE invoicing_dead_letters SET task_opened_at = coalesce(task_opened_at, now()) WHERE id = $1`, d.id); err != nil {
		return err
	}
	if err := orders.OpenTask(ctx, tx, d.projectID, TaskInvoicingFailed, d.orderNo, map[string]any{
		"orderNo": d.orderNo, "error": cause.Error(), "retries": d.retries,
	}); err != nil {
		return err
	}
	return failDocumentsTx(ctx, tx, d.projectID, d.orderNo, failedDocuments(cause))
}

// claimRetries claims up to limit due items of group's retry table for one
// retry each: FOR UPDATE SKIP LOCKED, and their next retry is moved lease
// ahead, so no other invoicer claims them while this one works on them (a
// crashed one's items are due again when the lease runs out).
func (s *Service) claimRetries(ctx context.Context, group string, limit int, lease time.Duration) ([]deadLetter, error) {
	rows, err := s.pool.Query(ctx, `UPDATE invoicing_dead_letters d SET next_retry_at = now() + $3::bigint * interval '1 millisecond'
		FROM (SELECT id FROM invoicing_dead_letters WHERE consumer_group = $1 AND resolved_at IS NULL AND next_retry_at <= now()
			ORDER BY next_retry_at LIMIT $2 FOR UPDATE SKIP LOCKED) due
		WHERE d.id = due.id
		RETURNING d.id::text, d.project_id::text, d.order_id::text, d.order_no, d.event_id, d.payload, d.retries,
			(extract(epoch FROM now() - d.created_at) * 1000)::bigint, d.task_opened_at IS NOT NULL`, group, limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (deadLetter, error) {
		var d deadLetter
		var millis int64
		err := r.Scan(&d.id, &d.projectID, &d.orderID, &d.orderNo, &d.eventID, &d.payload, &d.retries, &millis, &d.taskOpen)
		d.failingFor = time.Duration(millis) * time.Millisecond
		return d, err
	})
}

// resolveDeadLetter marks an item handled and resolves its task. When a
// newer event of the order failed meanwhile (the row holds another event),
// that one is due at once instead.
func (s *Service) resolveDeadLetter(ctx context.Context, d deadLetter) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE invoicing_dead_letters SET resolved_at = now() WHERE id = $1 AND event_id = $2 AND resolved_at IS NULL`,
			d.id, d.eventID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			_, err := tx.Exec(ctx, `UPDATE invoicing_dead_letters SET next_retry_at = now() WHERE id = $1 AND resolved_at IS NULL`, d.id)
			return err
		}
		return orders.ResolveTask(ctx, tx, d.projectID, TaskInvoicingFailed, d.orderNo, "retried: handled")
	})
}

// retryDeadLetterLater records another failed retry and when to try again
// (nextRetry), and opens the task when escalate says so; once it is open,
// the documents whose rendering or archiving failed in this retry are
// (still) failed, with its reason. A retry the dependency's open breaker
// refused made no call: it is not counted as a retry (the time since the
// first failure still escalates a long outage).
func (s *Service) retryDeadLetterLater(ctx context.Context, d deadLetter, cause error, p retryPolicy) error {
	tried := 1
	var open *breaker.OpenError
	if errors.As(cause, &open) {
		tried = 0
	}
	delay := nextRetry(d.retries+tried, cause, time.Now())
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var failingMillis int64
		err := tx.QueryRow(ctx, `UPDATE invoicing_dead_letters SET retries = retries + $4, error = $2,
				next_retry_at = now() + $3::bigint * interval '1 millisecond'
			WHERE id = $1 RETURNING retries, (extract(epoch FROM now() - created_at) * 1000)::bigint, task_opened_at IS NOT NULL`,
			d.id, cause.Error(), delay.Milliseconds(), tried).Scan(&d.retries, &failingMillis, &d.taskOpen)
		if err != nil {
			return err
		}
		if !d.taskOpen && !escalate(p, permanent(cause), onlyWaiting(cause), d.retries, time.Duration(failingMillis)*time.Millisecond) {
			return nil
		}
		return openFailureTaskTx(ctx, tx, d, cause)
	})
}
