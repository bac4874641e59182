package invoicing

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/store"
)

// TaskInvoicingFailed is the review task of an order whose invoice the
// invoicer could not issue or archive after its attempts. The order event
// is kept as a dead letter and retried with a growing delay; a document
// whose rendering or archiving failed is failed meanwhile and names the
// task. The task is resolved when a retry succeeds.
const TaskInvoicingFailed = "invoicing_failed"

// deadLetter is an order event the invoicer gave up on for now.
type deadLetter struct {
	id, projectID, orderID, orderNo string
	payload                         []byte
	retries                         int
}

// deadLetterRetryDelay is how long the reconciler waits before retrying a
// dead letter that has been retried n times: 1 minute, doubling, at most an
// hour.
func deadLetterRetryDelay(n int) time.Duration {
	return min(time.Minute<<min(n, 6), time.Hour)
}

// recordDeadLetter keeps an order event that failed with cause after
// attempts tries, opens its review task and marks the documents whose
// rendering or archiving failed as failed, in one transaction. A later
// failing event of the same order replaces the open dead letter's payload.
func (s *Service) recordDeadLetter(ctx context.Context, j orderJob, cause error, attempts int) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO invoicing_dead_letters (id, project_id, order_id, order_no, event_id, payload, error, attempts, next_retry_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + $9::bigint * interval '1 millisecond')
			ON CONFLICT (order_id) WHERE resolved_at IS NULL DO UPDATE
			SET event_id = EXCLUDED.event_id, payload = EXCLUDED.payload, error = EXCLUDED.error, attempts = EXCLUDED.attempts`,
			uuid.NewString(), j.projectID, j.order.ID, j.order.OrderNo, j.eventID, j.raw, cause.Error(), attempts,
			deadLetterRetryDelay(0).Milliseconds())
		if err != nil {
			return err
		}
		if err := orders.OpenTask(ctx, tx, j.projectID, TaskInvoicingFailed, j.order.OrderNo, map[string]any{
			"orderNo": j.order.OrderNo, "error": cause.Error(), "attempts": attempts,
		}); err != nil {
			return err
		}
		return failDocumentsTx(ctx, tx, j.projectID, j.order.OrderNo, failedDocuments(cause))
	})
}

// dueDeadLetters returns up to limit open dead letters whose retry is due.
func (s *Service) dueDeadLetters(ctx context.Context, limit int) ([]deadLetter, error) {
	rows, err := s.pool.Query(ctx, `SELECT id::text, project_id::text, order_id::text, order_no, payload, retries FROM invoicing_dead_letters
		WHERE resolved_at IS NULL AND next_retry_at <= now() ORDER BY next_retry_at LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (deadLetter, error) {
		var d deadLetter
		err := r.Scan(&d.id, &d.projectID, &d.orderID, &d.orderNo, &d.payload, &d.retries)
		return d, err
	})
}

// resolveDeadLetter marks a dead letter handled and resolves its task.
func (s *Service) resolveDeadLetter(ctx context.Context, d deadLetter) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE invoicing_dead_letters SET resolved_at = now() WHERE id = $1`, d.id); err != nil {
			return err
		}
		return orders.ResolveTask(ctx, tx, d.projectID, TaskInvoicingFailed, d.orderNo, "retried: handled")
	})
}

// retryDeadLetterLater records another failed retry and when to try again;
// the documents whose rendering or archiving failed in it are (still)
// failed, with this retry's reason.
func (s *Service) retryDeadLetterLater(ctx context.Context, d deadLetter, cause error) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE invoicing_dead_letters SET retries = retries + 1, error = $2, next_retry_at = now() + $3::bigint * interval '1 millisecond'
			WHERE id = $1`, d.id, cause.Error(), deadLetterRetryDelay(d.retries+1).Milliseconds())
		if err != nil {
			return err
		}
		return failDocumentsTx(ctx, tx, d.projectID, d.orderNo, failedDocuments(cause))
	})
}
