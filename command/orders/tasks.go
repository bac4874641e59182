package orders

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/lifecycle"
	"github.com/o2i-service/o2i/internal/project"
)

// Hold kinds: the order waits as a review task, no invoice number is taken.
const (
	HoldContactPhone       = lifecycle.HoldContactPhone       // Leitweg-ID, but no telephone on the invoice contact (BR-DE-6)
	HoldRevenueRecognition = lifecycle.HoldRevenueRecognition // accrual accounting, a service without period or product default
	HoldNotInvoiceable     = "order_not_invoiceable"          // the engine rejects the order (for example a rate not allowed at the place of supply)
)

// Review tasks that both roles open.
const (
	TaskValidationFailed      = "invoice_validation_failed" // a document would break EN 16931 / XRechnung rules: held, no number taken, issued once the cause is fixed
	TaskPaymentAmountMismatch = "payment_amount_mismatch"   // the provider's payment is not the amount due; the invoice is issued
)

// TaskPaymentWithoutOrder: a payment arrived for a paymentRef no order has (yet).
const TaskPaymentWithoutOrder = "payment_without_order"

// TaskProviderRightsMissing holds a provider_transfer order whose payment
// order the provider refused for missing rights of the API key.
const TaskProviderRightsMissing = "provider_rights_missing"

// TaskSellerDataIncomplete holds every due order of a project whose seller
// data lacks what an invoice needs: one task per project.
const TaskSellerDataIncomplete = project.CauseSellerData

// HoldKinds are the tasks that hold an order back without an invoice number.
var HoldKinds = []string{HoldContactPhone, HoldRevenueRecognition, HoldNotInvoiceable, TaskValidationFailed, TaskProviderRightsMissing,
	TaskSellerDataIncomplete}

// urgentTasks are mailed to the project's invoice contact when opened.
var urgentTasks = map[string]bool{TaskValidationFailed: true, TaskProviderRightsMissing: true, TaskSellerDataIncomplete: true}

// IsHold reports whether a task of kind holds orders back.
func IsHold(kind string) bool { return slices.Contains(HoldKinds, kind) }

// OpenTask records a review task unless the same one is open already; an
// urgent one is mailed to the project's invoice contact.
func OpenTask(ctx context.Context, tx pgx.Tx, projectID, kind, subject string, details map[string]any) error {
	_, err := openTaskTx(ctx, tx, projectID, kind, subject, subject, details)
	return err
}

// openTaskTx opens the task of kind about subject unless it is open
// already, and returns the open task's id. A task it opens that is urgent
// is mailed to the invoice contact once (naming orderNo, the order that
// opened it), however many orders it comes to hold.
func openTaskTx(ctx context.Context, tx pgx.Tx, projectID, kind, subject, orderNo string, details map[string]any) (string, error) {
	raw, err := json.Marshal(details)
	if err != nil {
		return "", err
	}
	for range 3 {
		id := uuid.NewString()
		// At most one open task per cause: the partial unique index decides
		// between concurrent writers (check-then-insert let both insert).
		tag, err := tx.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (project_id, kind, subject) WHERE status = 'open' DO NOTHING`,
			id, projectID, kind, subject, raw)
		if err != nil {
			return "", err
		}
		if tag.RowsAffected() == 1 {
			if !urgentTasks[kind] {
				return id, nil
			}
			// An urgent task is mailed to the invoice contact (mail_queue.go;
			// the mailer in command/invoicing sends it).
			return id, enqueueTaskMailTx(ctx, tx, projectID, id, orderNo)
		}
		// Open already: its id (resolved in between: try again).
		err = tx.QueryRow(ctx, `SELECT id::text FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`,
			projectID, kind, subject).Scan(&id)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return "", err
		}
	}
	return "", fmt.Errorf("task %s of %s: resolved while being opened, three times", kind, subject)
}

// HoldTx holds the locked order o by the open task of kind about subject
// (opened with details when none is open): the order's own number for a
// cause of the order, project.SharedSubject for a cause of the project,
// catalog.HoldSubject for a product's. It records the order under the task
// (held_orders), releases it from a task that held it for another cause,
// and publishes its holds. It returns the task's id.
func HoldTx(ctx context.Context, tx pgx.Tx, projectID string, o *Locked, kind, subject string, details map[string]any) (string, error) {
	id, err := openTaskTx(ctx, tx, projectID, kind, subject, o.OrderNo, details)
	if err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `UPDATE held_orders SET released_at = now(), claimed_until = NULL
		WHERE order_id = $1 AND released_at IS NULL AND task_id <> $2`, o.ID, id); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO held_orders (task_id, order_id, project_id, order_no) VALUES ($1, $2, $3, $4)
		ON CONFLICT (task_id, order_id) DO UPDATE SET checked_at = now(), claimed_until = NULL, released_at = NULL,
			held_at = CASE WHEN held_orders.released_at IS NULL THEN held_orders.held_at ELSE now() END`,
		id, o.ID, projectID, o.OrderNo); err != nil {
		return "", err
	}
	return id, NoteHoldsTx(ctx, tx, projectID, o)
}

// ReleaseHeldTx releases the order from every task that holds it (it is
// invoiced or cancelled). A task of a cause of the order is resolved by
// its caller; a shared one once it holds no order any more (ResolveReleased).
func ReleaseHeldTx(ctx context.Context, tx pgx.Tx, orderID string) error {
	_, err := tx.Exec(ctx, releaseHeldSQL, orderID)
	return err
}

const releaseHeldSQL = `UPDATE held_orders SET released_at = now(), claimed_until = NULL WHERE order_id = $1 AND released_at IS NULL`

// QueueReleaseHeld adds ReleaseHeldTx to b, sent by the caller in its
// transaction.
func QueueReleaseHeld(b *pgx.Batch, orderID string) { b.Queue(releaseHeldSQL, orderID) }

// MayBeHeld reports whether a task may hold the order whose holds column
// (JSON [{type, taskId}], read with the order locked) is holds, so that
// releasing it and resolving its hold tasks can change anything. Every
// hold records its task there in the transaction that holds the order
// (HoldTx, NoteHoldsTx), and only the transactions that release the order
// from all its tasks (invoicing, cancelling) empty it; what the list names
// is not checked (a task resolved since still counts as a hold: the release
// then runs and changes nothing). The invoicer's sweep releases the rows of
// any order that is no longer waiting, a safety net for rows this misses.
func MayBeHeld(holds []byte) bool {
	h := bytes.TrimSpace(holds)
	return len(h) > 0 && !bytes.Equal(h, []byte("[]")) && !bytes.Equal(h, []byte("null"))
}

// ReportFixedTx records the cause of the task as reported fixed now (a
// recheck): the invoicer evaluates every order it holds again.
func ReportFixedTx(ctx context.Context, tx pgx.Tx, projectID, taskID, reason string) error {
	_, err := tx.Exec(ctx, `INSERT INTO cause_fixes (task_id, project_id, reason) VALUES ($1, $2, $3)
		ON CONFLICT (task_id) DO UPDATE SET fixed_at = now(), reason = excluded.reason`, taskID, projectID, reason)
	return err
}

// ResolveTasks resolves the open tasks of kinds about subject.
func ResolveTasks(ctx context.Context, tx pgx.Tx, projectID string, kinds []string, subject, resolution string) error {
	_, err := tx.Exec(ctx, resolveTasksSQL, projectID, kinds, subject, resolution)
	return err
}

var resolveTasksSQL = ResolveTasksSQL("", 1)

// ResolveTasksSQL is ResolveTasks' update, its parameters (the project,
// the kinds, the subject, the resolution) numbered from $first. With gate
// it is a CTE of a larger statement, as DocumentMailSQL, that resolves only
// when gate has a row.
func ResolveTasksSQL(gate string, first int) string {
	p := paramFrom(first)
	return `UPDATE tasks SET status = 'resolved', resolved_at = now(), resolution = ` + p(4) + `
		WHERE project_id = ` + p(1) + ` AND kind = ANY(` + p(2) + `) AND subject = ` + p(3) + ` AND status = 'open'` + gated(gate)
}

// QueueResolveTasks adds ResolveTasks to b, sent by the caller in its
// transaction.
func QueueResolveTasks(b *pgx.Batch, projectID string, kinds []string, subject, resolution string) {
	b.Queue(resolveTasksSQL, projectID, kinds, subject, resolution)
}

// ResolveTask resolves the open task of that kind and subject, if any.
func ResolveTask(ctx context.Context, tx pgx.Tx, projectID, kind, subject, resolution string) error {
	_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'resolved', resolved_at = now(), resolution = $4
		WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`, projectID, kind, subject, resolution)
	return err
}
