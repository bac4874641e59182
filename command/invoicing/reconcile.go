package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
)

// The invoicer's reconciler: no order depends on a later event arriving.
// Every ReconcileEvery it
//   - retries the dead letters whose retry is due (dead_letters.go), with
//     the failed documents of their orders (failed_invoices.go);
//   - re-evaluates orders held as a task (contact phone, revenue
//     recognition, not invoiceable, a document that would break the rules):
//     a hold whose cause has cleared (the phone, the product setting or the
//     seller data was set) is invoiced and its task resolved;
//   - archives documents issued but not archived a minute later, and failed
//     documents whose order has no open dead letter (left from an earlier
//     failure) at once.

// heldPage is how many held orders one round re-evaluates; the walk goes on
// where it stopped in the next round, so every held order gets its turn.
const heldPage = 200

// heldCursor is a position in the open tasks, by (created_at, id).
type heldCursor struct {
	at time.Time
	id string
}

// reconcile runs the reconciler every ReconcileEvery until ctx ends.
func (iv *Invoicer) reconcile(ctx context.Context) {
	t := time.NewTicker(iv.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for name, step := range map[string]func(context.Context) error{
			"dead letters": iv.RetryDeadLetters, "held orders": iv.ReleaseHolds, "unarchived documents": iv.ArchiveStuck,
		} {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("invoicer: reconciling "+name, "err", err)
			}
		}
	}
}

// RetryDeadLetters tries every due dead letter once more, and archives the
// failed documents of its order: one that succeeds is resolved with its task
// (its documents are archived under their numbers), one that fails waits
// longer (its documents whose archiving failed again stay failed).
func (iv *Invoicer) RetryDeadLetters(ctx context.Context) error {
	due, err := iv.svc.dueDeadLetters(ctx, 100)
	if err != nil {
		return err
	}
	for _, d := range due {
		if cause := iv.retryDeadLetter(ctx, d); cause != nil {
			err = iv.svc.retryDeadLetterLater(ctx, d, cause)
		} else {
			err = iv.svc.resolveDeadLetter(ctx, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// retryDeadLetter handles a dead letter's event once more (an event the
// invoicer cannot read is not its own: nothing to do) and archives the
// order's documents that are failed still, also when the event fails.
func (iv *Invoicer) retryDeadLetter(ctx context.Context, d deadLetter) error {
	var err error
	if j, ok := parseOrderEvent(d.payload); ok {
		err = iv.invoice(ctx, j)
	}
	return errors.Join(err, iv.archiveFailedOf(ctx, d.projectID, d.orderID))
}

// ReleaseHolds re-evaluates the next page of held orders: each is invoiced
// when its cause has cleared (issuing resolves its hold tasks), and stays
// held otherwise.
func (iv *Invoicer) ReleaseHolds(ctx context.Context) error {
	jobs, next, err := iv.svc.heldOrders(ctx, iv.held, heldPage)
	if err != nil {
		return err
	}
	iv.held = next
	for _, j := range jobs {
		if err := iv.invoice(ctx, j); err != nil {
			slog.Warn("invoicer: re-evaluating a held order", "orderNo", j.order.OrderNo, "err", err)
		}
	}
	return nil
}

// ArchiveStuck archives documents issued more than a minute ago and not
// archived yet (the invoicer stopped between issuing and archiving), and
// failed documents whose order has no open dead letter to retry them.
func (iv *Invoicer) ArchiveStuck(ctx context.Context) error {
	rows, err := iv.svc.pool.Query(ctx, `SELECT project_id::text, id::text FROM invoices i
		WHERE i.status = 'created' AND i.created_at < now() - interval '1 minute'
			OR i.status = 'failed' AND i.failed_rules = '{}' AND NOT EXISTS (
				SELECT 1 FROM invoicing_dead_letters d WHERE d.order_id = i.order_id AND d.resolved_at IS NULL)
		ORDER BY created_at LIMIT 100`)
	if err != nil {
		return err
	}
	type doc struct{ projectID, id string }
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (doc, error) {
		var d doc
		err := r.Scan(&d.projectID, &d.id)
		return d, err
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range docs {
		errs = append(errs, iv.svc.ArchiveInvoice(ctx, iv.archive, d.projectID, d.id))
	}
	return errors.Join(errs...)
}

// heldOrders returns the orders of up to limit open hold tasks after c, as
// jobs built from their current state, and the position to go on from
// (the start again when the walk reached the end).
func (s *Service) heldOrders(ctx context.Context, c heldCursor, limit int) ([]orderJob, heldCursor, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.created_at, t.id::text, o.project_id::text, o.id::text, o.status, o.fulfillment_status,
			o.correction_pending, o.content
		FROM tasks t JOIN orders o ON o.project_id = t.project_id AND o.order_no = t.subject
		WHERE t.status = 'open' AND t.kind = ANY($1) AND (t.created_at, t.id) > ($2, $3::uuid)
		ORDER BY t.created_at, t.id LIMIT $4`, orders.HoldKinds, c.at, nullUUID(c.id), limit)
	if err != nil {
		return nil, c, err
	}
	defer rows.Close()
	var jobs []orderJob
	var next heldCursor
	for rows.Next() {
		var j orderJob
		var raw []byte
		if err := rows.Scan(&next.at, &next.id, &j.projectID, &j.order.ID, &j.order.Status, &j.order.FulfillmentStatus,
			&j.order.CorrectionPending, &raw); err != nil {
			return nil, c, err
		}
		if err := json.Unmarshal(raw, &j.order.OrderContent); err != nil {
			slog.Warn("invoicer: held order with unreadable content", "orderId", j.order.ID, "err", err)
			continue
		}
		j.eventID = "reconcile"
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, c, err
	}
	if len(jobs) < limit {
		next = heldCursor{}
	}
	return jobs, next, nil
}

// nullUUID is the smallest uuid when id is empty.
func nullUUID(id string) string {
	if id == "" {
		return "00000000-0000-0000-0000-000000000000"
	}
	return id
}
