package invoicing

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/o2i-service/o2i/command/orders"
)

// The invoicer's reconciler: no order depends on a later event arriving.
// (The retry table has workers of its own: retries.go.) Every
// ReconcileEvery it
//   - re-evaluates orders held as a task (contact phone, revenue
//     recognition, not invoiceable, a document that would break the rules):
//     a hold whose cause has cleared (the phone, the product setting or the
//     seller data was set) is invoiced and its task resolved;
//   - archives documents issued but not archived a minute later, and failed
//     documents whose order has no open dead letter (left from an earlier
//     failure) at once, each on its own backoff (archive_repair.go).

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
			"held orders": iv.ReleaseHolds, "unarchived documents": iv.ArchiveStuck, "backlog metrics": iv.measureBacklog,
		} {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("invoicer: reconciling "+name, "err", err)
			}
		}
	}
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
