package invoicing

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// The invoicer's reconciler: no order depends on a later event arriving.
// Every ReconcileEvery it
//   - retries the dead letters whose retry is due (dead_letters.go), with
//     the failed documents of their orders (failed_invoices.go);
//   - sweeps the held orders (ReleaseHolds), the safety net of the
//     releases that follow a cause reported fixed (releases.go);
//   - archives documents issued but not archived a minute later, and failed
//     documents whose order has no open dead letter (left from an earlier
//     failure) at once.

// sweepPage is how many tasks one round of the sweep probes, one held order
// of each, not checked for ReconcileEvery.
const sweepPage = 200

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

// ReleaseHolds is the safety net of the releases (releases.go): it
// probes up to sweepPage tasks with one held order each that was not
// checked for ReconcileEvery (the least recently checked of the task),
// tasks least recently probed first, each claimed FOR UPDATE SKIP LOCKED so
// that replicas share the sweep. It never restarts from the beginning: an
// order checked (also one that could not be read, which is skipped, logged
// and counted) goes to the end of the line. A probe whose cause has cleared
// without being reported (the provider key got its rights) is invoiced and
// reports its task's cause fixed, so the task's other orders follow at
// pipeline speed; tasks left holding no order are resolved.
func (iv *Invoicer) ReleaseHolds(ctx context.Context) error {
	held, err := iv.svc.claimHeld(ctx, claimStale, sweepPage, iv.ReconcileEvery)
	if err != nil {
		return err
	}
	for _, h := range held {
		iv.evaluateHeld(ctx, h, true)
	}
	return iv.svc.resolveReleased(ctx, false)
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
