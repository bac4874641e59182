package invoicing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
)

// Failed documents. A failure before a number is taken is a hold (no number,
// no document). Once a document is issued its number is taken for good; when
// rendering or archiving it still fails after the invoicer's attempts, the
// order's event becomes a dead letter with an invoicing_failed task and the
// document becomes failed, with the reason and the task. The reconciler's
// retry archives that same document under the same number: created ->
// failed -> archived (or created -> archived when archiving succeeds in
// time). Documents that earlier versions recorded as failed because they
// broke rules (failed_rules not empty) are never archived.

// archiveError is the failure to render or archive one issued document.
type archiveError struct {
	invoiceID string
	err       error
}

func (e *archiveError) Error() string { return e.err.Error() }
func (e *archiveError) Unwrap() error { return e.err }

// docFailure is a document whose rendering or archiving failed, and why.
type docFailure struct {
	invoiceID, reason string
}

// failedDocuments returns the documents that count as failed when an
// event's last try ended with err: each one whose rendering or archiving
// failed in that try, once, in the order of err. A failure of anything else
// (issuing, the database, a hold) names no document.
func failedDocuments(err error) []docFailure {
	var out []docFailure
	seen := map[string]bool{}
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *archiveError:
			if !seen[e.invoiceID] {
				seen[e.invoiceID] = true
				out = append(out, docFailure{e.invoiceID, e.err.Error()})
			}
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// awaitsArchive reports whether a document of that status is still to be
// archived: a created one, or a failed one (its retry); not an archived one,
// nor one that broke rules (failedRules, recorded by earlier versions).
func awaitsArchive(status string, failedRules []string) bool {
	switch status {
	case "created":
		return true
	case "failed":
		return len(failedRules) == 0
	}
	return false
}

// awaitsArchiveSQL is awaitsArchive as a condition on the invoices row
// named alias.
func awaitsArchiveSQL(alias string) string {
	return "(" + alias + ".status = 'created' OR " + alias + ".status = 'failed' AND " + alias + ".failed_rules = '{}')"
}

// failDocumentsTx marks the documents of fs failed with their reasons and
// the order's open invoicing_failed task, and publishes invoice.failed for
// each one that changed: a created one, or a failed one whose reason or task
// changed. An archived document (a concurrent try completed it) stays
// archived.
func failDocumentsTx(ctx context.Context, tx pgx.Tx, projectID, orderNo string, fs []docFailure) error {
	if len(fs) == 0 {
		return nil
	}
	var taskID *string
	err := tx.QueryRow(ctx, `SELECT id::text FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`,
		projectID, TaskInvoicingFailed, orderNo).Scan(&taskID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	ids, reasons := make([]string, len(fs)), make([]string, len(fs))
	for i, f := range fs {
		ids[i], reasons[i] = f.invoiceID, f.reason
	}
	rows, err := tx.Query(ctx, `UPDATE invoices i SET status = 'failed', failure_reason = f.reason, failure_task_id = $4::uuid,
			version = i.version + 1
		FROM unnest($2::uuid[], $3::text[]) AS f(id, reason)
		WHERE i.project_id = $1 AND i.id = f.id AND i.failed_rules = '{}'
			AND (i.status = 'created' OR i.status = 'failed'
				AND (i.failure_reason IS DISTINCT FROM f.reason OR i.failure_task_id IS DISTINCT FROM $4::uuid))
		RETURNING i.id::text, i.project_id::text, i.order_id::text, i.order_no, i.payment_ref, i.number, i.version, i.type, i.format,
			i.issue_date, i.currency, i.total_net_cents, i.total_tax_cents, i.total_gross_cents, i.test_mode, i.created_at, f.reason`,
		projectID, ids, reasons, taskID)
	if err != nil {
		return err
	}
	failed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event.Invoice, error) {
		var inv event.Invoice
		var paymentRef *string
		var issue time.Time
		err := r.Scan(&inv.ID, &inv.ProjectID, &inv.OrderID, &inv.OrderNo, &paymentRef, &inv.Number, &inv.Version, &inv.Type,
			&inv.Format, &issue, &inv.Currency, &inv.TotalNetCents, &inv.TotalTaxCents, &inv.TotalGrossCents, &inv.TestMode,
			&inv.CreatedAt, &inv.FailureReason)
		if paymentRef != nil {
			inv.PaymentRef = *paymentRef
		}
		if taskID != nil {
			inv.TaskID = *taskID
		}
		inv.Status, inv.IssueDate = "failed", issue.Format(time.DateOnly)
		return inv, err
	})
	if err != nil {
		return fmt.Errorf("mark documents failed: %w", err)
	}
	now := time.Now().UTC()
	evs := make([]event.Event, 0, len(failed))
	for _, inv := range failed {
		ev, err := event.New(event.InvoiceFailed, projectID, "invoice", inv.ID, inv.OrderNo, inv.Version, now, inv)
		if err != nil {
			return fmt.Errorf("event: %w", err)
		}
		evs = append(evs, ev)
	}
	return outbox.Enqueue(ctx, tx, evs...)
}

// archiveFailedOf archives the order's failed documents: the retry that
// completes them under their numbers.
func (iv *Invoicer) archiveFailedOf(ctx context.Context, projectID, orderID string) error {
	rows, err := iv.svc.pool.Query(ctx, `SELECT id::text, number, status, failed_rules FROM invoices
		WHERE project_id = $1 AND order_id = $2 AND status = 'failed' AND failed_rules = '{}' ORDER BY created_at, seq`, projectID, orderID)
	if err != nil {
		return err
	}
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Issued, error) {
		var d Issued
		err := r.Scan(&d.ID, &d.Number, &d.Status, &d.FailedRules)
		return d, err
	})
	if err != nil {
		return err
	}
	return iv.archiveAll(ctx, projectID, docs)
}
