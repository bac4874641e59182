package orders

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/project"
)

// Delivery states.
const (
	deliveryPending = "pending"
	deliverySent    = "sent"
	deliveryBlocked = "blocked" // test mode: sending blocked
)

// QueueDocumentMail queues, into a batch of the archiving transaction, the
// delivery of an archived document to its order's e-mail (one statement: the
// order's e-mail and the project's reply-to are read by the insert itself);
// an order without e-mail gets none. A test document's delivery is recorded
// as blocked.
func QueueDocumentMail(b *pgx.Batch, projectID, invoiceID, orderID, orderNo string, test bool) {
	status := deliveryPending
	if test {
		status = deliveryBlocked
	}
	b.Queue(`INSERT INTO mail_deliveries (id, project_id, kind, invoice_id, order_no, recipient, reply_to, status)
		SELECT $1, $2, 'invoice', $3, $4, NULLIF(o.content->>'email', ''), NULLIF(p.settings->>'contactEmail', ''), $6
		FROM orders o JOIN projects p ON p.id = $2 WHERE o.id = $5 AND NULLIF(o.content->>'email', '') IS NOT NULL
		ON CONFLICT (invoice_id) DO NOTHING`,
		uuid.NewString(), projectID, invoiceID, orderNo, orderID, status)
}

// enqueueTaskMailTx records the notice of an urgent task to the project's
// invoice contact, in the transaction that opened it. Without a contact
// e-mail there is nobody to tell; in test mode it is blocked.
func enqueueTaskMailTx(ctx context.Context, tx pgx.Tx, projectID, taskID, subject string) error {
	p, err := project.Get(ctx, tx, projectID)
	if err != nil {
		return err
	}
	if p.Settings.ContactEmail == "" {
		slog.Warn("mailer: urgent task, but the project has no invoice contact e-mail", "projectId", projectID, "taskId", taskID)
		return nil
	}
	status := deliveryPending
	if p.TestMode {
		status = deliveryBlocked
	}
	_, err = tx.Exec(ctx, `INSERT INTO mail_deliveries (id, project_id, kind, task_id, order_no, recipient, status)
		VALUES ($1, $2, 'task', $3, $4, $5, $6) ON CONFLICT (task_id) DO NOTHING`,
		uuid.NewString(), projectID, taskID, subject, p.Settings.ContactEmail, status)
	return err
}
