package orders

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/lifecycle"
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

// HoldKinds are the tasks that hold an order back without an invoice number.
var HoldKinds = []string{HoldContactPhone, HoldRevenueRecognition, HoldNotInvoiceable, TaskValidationFailed, TaskProviderRightsMissing}

// urgentTasks are mailed to the project's invoice contact when opened.
var urgentTasks = map[string]bool{TaskValidationFailed: true, TaskProviderRightsMissing: true}

// OpenTask records a review task unless the same one is open already; an
// urgent one is mailed to the project's invoice contact.
func OpenTask(ctx context.Context, tx pgx.Tx, projectID, kind, subject string, details map[string]any) error {
	raw, err := json.Marshal(details)
	if err != nil {
		return err
	}
	id := uuid.NewString()
	// At most one open task per cause: the partial unique index decides
	// between concurrent writers (check-then-insert let both insert).
	tag, err := tx.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (project_id, kind, subject) WHERE status = 'open' DO NOTHING`,
		id, projectID, kind, subject, raw)
	if err != nil || tag.RowsAffected() == 0 || !urgentTasks[kind] {
		return err
	}
	// An urgent task is mailed to the invoice contact (mail_queue.go; the
	// mailer in command/invoicing sends it).
	return enqueueTaskMailTx(ctx, tx, projectID, id, subject)
}

// ResolveTasks resolves the open tasks of kinds about subject.
func ResolveTasks(ctx context.Context, tx pgx.Tx, projectID string, kinds []string, subject, resolution string) error {
	_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'resolved', resolved_at = now(), resolution = $4
		WHERE project_id = $1 AND kind = ANY($2) AND subject = $3 AND status = 'open'`, projectID, kinds, subject, resolution)
	return err
}

// ResolveTask resolves the open task of that kind and subject, if any.
func ResolveTask(ctx context.Context, tx pgx.Tx, projectID, kind, subject, resolution string) error {
	_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'resolved', resolved_at = now(), resolution = $4
		WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`, projectID, kind, subject, resolution)
	return err
}
