package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/store"
)

// Releases at pipeline speed. A task that holds orders for a cause of the
// project or a product (orders.HoldTx) holds them in held_orders. Fixing
// the cause (the project's settings, a product's revenue recognition, a
// recheck) reports it fixed in the same transaction (cause_fixes); every
// ReleaseEvery the invoicer looks for held orders last checked before their
// task's cause was reported fixed and evaluates them on Workers goroutines,
// through the same invoicing code as an order event (invoice): each is
// invoiced, or held again. Orders are claimed a page at a time FOR UPDATE
// SKIP LOCKED with a lease (claimLease): several replicas share the work,
// none evaluates an order another one is evaluating; an evaluation that
// failed is claimed again once its lease has run out. A shared task is
// resolved once it holds no order any more. ReleaseHolds (reconcile.go) is
// the safety net.

// releasePage is how many held orders one worker claims at once: small, so
// that the workers of all replicas share a release evenly.
const releasePage = 10

// claimLease is how long a claimed order is left to its worker; past it
// (the worker failed or stopped) another one claims it.
const claimLease = 2 * time.Minute

// Which held orders a claim takes.
type claimKind int

const (
	claimFixed claimKind = iota // last checked before their task's cause was reported fixed
	claimStale                  // not checked for a while (the sweep), least recently checked first
)

// heldOrder is a claimed held order.
type heldOrder struct {
	taskID, projectID, orderID, orderNo string
	claimedAt                           time.Time
}

// claimHeld claims up to limit held orders of kind, FOR UPDATE SKIP LOCKED
// under a lease; stale is the age of the last check the sweep looks for.
func (s *Service) claimHeld(ctx context.Context, kind claimKind, limit int, stale time.Duration) ([]heldOrder, error) {
	pick := `SELECT h.task_id, h.order_id FROM held_orders h JOIN cause_fixes f ON f.task_id = h.task_id
		WHERE h.released_at IS NULL AND h.checked_at < f.fixed_at AND (h.claimed_until IS NULL OR h.claimed_until < now())
		LIMIT $1 FOR UPDATE OF h SKIP LOCKED`
	if kind == claimStale {
		// One order per task, the least recently checked: a task of a cause
		// of the project holding 60,000 orders is probed with one of them
		// per round, not walked, and every other task gets its turn.
		pick = `WITH probe AS (
			SELECT DISTINCT ON (task_id) task_id, order_id, checked_at FROM held_orders
			WHERE released_at IS NULL AND checked_at < now() - make_interval(secs => $3) AND (claimed_until IS NULL OR claimed_until < now())
			ORDER BY task_id, checked_at, order_id)
		SELECT h.task_id, h.order_id FROM held_orders h JOIN probe p ON p.task_id = h.task_id AND p.order_id = h.order_id
		ORDER BY p.checked_at LIMIT $1 FOR UPDATE OF h SKIP LOCKED`
	}
	args := []any{limit, claimLease.Seconds()}
	if kind == claimStale {
		args = append(args, stale.Seconds())
	}
	rows, err := s.pool.Query(ctx, `WITH c AS (`+pick+`)
		UPDATE held_orders h SET claimed_until = now() + make_interval(secs => $2)
		FROM c WHERE h.task_id = c.task_id AND h.order_id = c.order_id
		RETURNING h.task_id::text, h.project_id::text, h.order_id::text, h.order_no, now()`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (heldOrder, error) {
		var h heldOrder
		err := r.Scan(&h.taskID, &h.projectID, &h.orderID, &h.orderNo, &h.claimedAt)
		return h, err
	})
}

// ReleaseFixed evaluates every held order whose task's cause was reported
// fixed after it was last checked, on Workers goroutines, until none is
// left to claim; then resolves the tasks that hold no order any more. It
// returns how many orders it evaluated.
func (iv *Invoicer) ReleaseFixed(ctx context.Context) (int, error) {
	first, err := iv.svc.claimHeld(ctx, claimFixed, releasePage, 0)
	if err != nil || len(first) == 0 {
		return 0, err
	}
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for w := range max(1, iv.Workers) {
		g.Go(func() error {
			var page []heldOrder
			if w == 0 {
				page = first
			}
			for {
				if page == nil {
					var err error
					if page, err = iv.svc.claimHeld(gctx, claimFixed, releasePage, 0); err != nil {
						return err
					}
					if len(page) == 0 {
						return nil
					}
				}
				for _, h := range page {
					iv.evaluateHeld(gctx, h, false)
					done.Add(1)
				}
				page = nil
			}
		})
	}
	err = g.Wait()
	if rerr := iv.svc.resolveReleased(ctx, true); err == nil {
		err = rerr
	}
	return int(done.Load()), err
}

// releaseFixed runs ReleaseFixed every ReleaseEvery until ctx ends.
func (iv *Invoicer) releaseFixed(ctx context.Context) {
	t := time.NewTicker(iv.ReleaseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := iv.ReleaseFixed(ctx)
		if err != nil && ctx.Err() == nil {
			slog.Warn("invoicer: releasing held orders", "err", err)
		}
		if n > 0 {
			slog.Info("invoicer: held orders evaluated after their cause was fixed", "orders", n)
		}
	}
}

// evaluateHeld evaluates a claimed held order through the invoicing of an
// order event (bounded by AttemptTimeout): it is invoiced, or held again.
// Done, the order counts as checked at its claim (a cause reported fixed
// meanwhile has it evaluated again) and its lease ends; an order that is no
// longer waiting (invoiced or cancelled) is released. An order that cannot
// be read is skipped, logged and counted, and checked all the same; one
// whose evaluation failed keeps its lease and is claimed again after it.
// A probe of the sweep that is invoiced reports its task's cause fixed.
func (iv *Invoicer) evaluateHeld(ctx context.Context, h heldOrder, probe bool) {
	j, err := iv.svc.heldJob(ctx, h)
	if err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if !errors.As(err, &syntax) && !errors.As(err, &typ) {
			slog.Warn("invoicer: reading a held order", "orderNo", h.orderNo, "err", err)
			return
		}
		iv.Unreadable.Add(1)
		slog.Warn("invoicer: held order with unreadable content, skipped", "orderNo", h.orderNo, "orderId", h.orderID, "err", err)
	} else if err := iv.attempt(ctx, j); err != nil {
		if ctx.Err() == nil {
			slog.Warn("invoicer: evaluating a held order", "orderNo", h.orderNo, "err", err)
		}
		return
	}
	invoiced, err := iv.svc.checkedHeld(ctx, h)
	if err != nil {
		if ctx.Err() == nil {
			slog.Warn("invoicer: recording a held order as checked", "orderNo", h.orderNo, "err", err)
		}
		return
	}
	if invoiced && probe {
		// The sweep's probe went through: the cause has cleared without
		// being reported (rights granted at the provider). The task's other
		// orders follow through the releases.
		if err := iv.svc.reportFixed(ctx, h.projectID, h.taskID, "a held order was invoiced by the sweep"); err != nil && ctx.Err() == nil {
			slog.Warn("invoicer: reporting a cause fixed", "taskId", h.taskID, "err", err)
		}
	}
}

// reportFixed records the task's cause as fixed now.
func (s *Service) reportFixed(ctx context.Context, projectID, taskID, reason string) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error { return orders.ReportFixedTx(ctx, tx, projectID, taskID, reason) })
}

// heldJob is the job of a held order, built from its current state.
func (s *Service) heldJob(ctx context.Context, h heldOrder) (orderJob, error) {
	j := orderJob{eventID: "release", projectID: h.projectID}
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT id::text, status, fulfillment_status, correction_pending, content FROM orders WHERE id = $1`, h.orderID).
		Scan(&j.order.ID, &j.order.Status, &j.order.FulfillmentStatus, &j.order.CorrectionPending, &raw)
	if err != nil {
		return j, err
	}
	return j, json.Unmarshal(raw, &j.order.OrderContent)
}

// checkedHeld records the held order as checked at its claim and ends its
// lease; it is released when its order no longer waits (invoiced or
// cancelled by a path that did not release it). It reports whether the
// order is invoiced.
func (s *Service) checkedHeld(ctx context.Context, h heldOrder) (invoiced bool, err error) {
	err = s.pool.QueryRow(ctx, `UPDATE held_orders h SET checked_at = greatest(h.checked_at, $3), claimed_until = NULL,
			released_at = CASE WHEN h.released_at IS NULL AND o.status <> 'created' THEN now() ELSE h.released_at END
		FROM orders o WHERE o.id = h.order_id AND h.task_id = $1 AND h.order_id = $2
		RETURNING o.status = 'invoiced'`, h.taskID, h.orderID, h.claimedAt).Scan(&invoiced)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // gone with its order
	}
	return invoiced, err
}

// resolveReleased resolves the open hold tasks that held orders and hold
// none any more (each order invoiced, cancelled or held by another cause),
// and forgets their reported fixes; fixedOnly: only tasks whose cause was
// reported fixed (the releases), else all (the sweep).
func (s *Service) resolveReleased(ctx context.Context, fixedOnly bool) error {
	_, err := s.pool.Exec(ctx, `WITH r AS (
		UPDATE tasks t SET status = 'resolved', resolved_at = now(),
			resolution = 'released: the ' || (SELECT count(*) FROM held_orders h WHERE h.task_id = t.id) || ' orders it held were invoiced or are held no more'
		WHERE t.status = 'open' AND t.kind = ANY($1)
			AND (NOT $2 OR t.id IN (SELECT task_id FROM cause_fixes))
			AND EXISTS (SELECT 1 FROM held_orders h WHERE h.task_id = t.id)
			AND NOT EXISTS (SELECT 1 FROM held_orders h WHERE h.task_id = t.id AND h.released_at IS NULL)
		RETURNING t.id)
		DELETE FROM cause_fixes f USING r WHERE f.task_id = r.id`, orders.HoldKinds, fixedOnly)
	return err
}
