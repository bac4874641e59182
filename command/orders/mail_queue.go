package orders

import (
	"context"
	"log/slog"
	"strconv"

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

// DocumentMailParams is the number of DocumentMailArgs.
const DocumentMailParams = 9

// DeliveryColumns are the columns of a delivery that its mailer reads when
// it claims it (the RETURNING of DocumentMailSQL and of the mailer's claim).
const DeliveryColumns = "id, project_id, kind, order_no, recipient, invoice_id, task_id, reply_to, attempts, message_id"

// DocumentMailArgs are the parameters of DocumentMailSQL: the delivery of
// an archived document to its order's e-mail, blocked for a test document.
// A delivery recorded with a claim (token not nil: the archiving process
// hands it to its own mailer) is claimed by token for leaseMS milliseconds
// and carries messageID.
func DocumentMailArgs(projectID, invoiceID, orderID, orderNo string, test bool, token *string, leaseMS *int64, messageID *string) []any {
	status := deliveryPending
	if test {
		status = deliveryBlocked
	}
	return []any{uuid.NewString(), projectID, invoiceID, orderNo, orderID, status, token, leaseMS, messageID}
}

// DocumentMailSQL is the delivery's insert, its parameters
// (DocumentMailArgs) numbered from $first, returning DeliveryColumns. The
// order's e-mail and the project's reply-to are read by the insert itself;
// an order without e-mail gets none. With gate it is a data-modifying CTE
// of a larger statement that records the delivery only when gate, a
// relation of that statement (the CTE of the change the delivery belongs
// to), has a row.
func DocumentMailSQL(gate string, first int) string {
	p := paramFrom(first)
	lease := `now() + ` + p(8) + `::bigint * interval '1 millisecond'`
	return `INSERT INTO mail_deliveries (id, project_id, kind, invoice_id, order_no, recipient, reply_to, status,
			claim_token, lease_until, next_attempt_at, message_id)
		SELECT ` + p(1) + `, ` + p(2) + `, 'invoice', ` + p(3) + `, ` + p(4) + `, NULLIF(o.content->>'email', ''), NULLIF(pr.settings->>'contactEmail', ''), ` + p(6) + `,
			` + p(7) + `::uuid, ` + lease + `, COALESCE(` + lease + `, now()), ` + p(9) + `
		FROM orders o JOIN projects pr ON pr.id = ` + p(2) + ` WHERE o.id = ` + p(5) + ` AND NULLIF(o.content->>'email', '') IS NOT NULL` + gated(gate) + `
		ON CONFLICT (invoice_id) DO NOTHING
		RETURNING ` + DeliveryColumns
}

// paramFrom numbers a statement's parameters from $first: the statement is
// a data-modifying CTE of a larger one, whose own parameters come first.
func paramFrom(first int) func(int) string {
	return func(i int) string { return "$" + strconv.Itoa(first+i-1) }
}

// gated is the condition that gate, a relation of the larger statement,
// has a row ("" without a gate).
func gated(gate string) string {
	if gate == "" {
		return ""
	}
	return " AND EXISTS (SELECT FROM " + gate + ")"
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
