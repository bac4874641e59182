package invoicing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// E-mail is an outbound step of its own, driven by rows of mail_deliveries
// (the same pattern as the event outbox): the transaction that archives a
// document records its delivery to the order's e-mail, the transaction that
// opens an urgent task records a notice to the project's invoice contact.
// The mailer sends the due ones outside every request and invoicing path,
// each attempt bounded in time, and retries a failure with a growing delay;
// a delivery that keeps failing opens a mail_delivery_failed task (resolved
// when it finally goes out) and never holds anything else back. In test mode
// nothing is sent: the delivery is recorded as blocked.

// TaskMailDeliveryFailed is the review task of an e-mail that could not be
// sent after MailAttempts tries (or that the relay refused for good); the
// mailer keeps trying, and sending resolves it.
const TaskMailDeliveryFailed = "mail_delivery_failed"

// Mailer sends the due e-mail deliveries (role invoicer, beside the
// reconciler). Several mailers may run: each claims its deliveries with a
// lease, so a message goes out once unless a process dies mid-send.
type Mailer struct {
	svc     *Service
	archive *archive.Archive
	sender  *mail.Sender

	// Every is how often due deliveries are looked for.
	Every time.Duration
	// Attempts is how many failed tries open a mail_delivery_failed task.
	Attempts int
	// Backoff is the wait after the first failure (doubling, at most MaxBackoff).
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one delivery: reading the documents and the SMTP dialogue.
	Timeout time.Duration
	// ProjectID, when set, limits the mailer to that project's deliveries
	// (a mailer over an archive of its own, as in tests); empty: all.
	ProjectID string
}

// NewMailer returns the mailer sending through sender; documents are read from a.
func NewMailer(s *Service, a *archive.Archive, sender *mail.Sender) *Mailer {
	return &Mailer{svc: s, archive: a, sender: sender, Every: time.Second, Attempts: 5, Backoff: 30 * time.Second,
		MaxBackoff: time.Hour, Timeout: time.Minute}
}

// Run sends due deliveries until ctx ends.
func (m *Mailer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		n, err := m.SendDue(ctx, 20)
		if err != nil && ctx.Err() == nil {
			slog.Warn("mailer: sending due deliveries", "err", err)
		}
		if n == 0 || err != nil {
			sleep(ctx, m.Every)
		}
	}
	return nil
}

// dueDelivery is a claimed delivery.
type dueDelivery struct {
	id, projectID, kind, orderNo, recipient string
	invoiceID, taskID, replyTo              *string
	attempts                                int
}

// SendDue claims up to limit due deliveries and tries each once; it returns
// how many it tried. It fails only when the database does.
func (m *Mailer) SendDue(ctx context.Context, limit int) (int, error) {
	lease := 2*m.Timeout + time.Minute
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := m.svc.pool.Query(qctx, `UPDATE mail_deliveries SET next_attempt_at = now() + $2::bigint * interval '1 millisecond'
		WHERE id IN (SELECT id FROM mail_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
			AND ($3 = '' OR project_id::text = $3) ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
		RETURNING id::text, project_id::text, kind, order_no, recipient, invoice_id::text, task_id::text, reply_to, attempts`,
		limit, lease.Milliseconds(), m.ProjectID)
	if err != nil {
		return 0, err
	}
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dueDelivery, error) {
		var d dueDelivery
		err := r.Scan(&d.id, &d.projectID, &d.kind, &d.orderNo, &d.recipient, &d.invoiceID, &d.taskID, &d.replyTo, &d.attempts)
		return d, err
	})
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, d := range due {
		cause := m.deliver(ctx, d)
		if ctx.Err() != nil {
			return len(due), nil // the lease runs out; it is tried again
		}
		if err := m.record(ctx, d, cause); err != nil {
			errs = append(errs, err)
		}
	}
	return len(due), errors.Join(errs...)
}

// deliver composes d's message and sends it, within Timeout.
func (m *Mailer) deliver(ctx context.Context, d dueDelivery) error {
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	var msg mail.Message
	var err error
	switch d.kind {
	case "invoice":
		msg, err = m.documentMessage(ctx, d)
	default:
		msg, err = m.taskMessage(ctx, d)
	}
	if err != nil {
		return err
	}
	return m.sender.Send(ctx, msg)
}

// documentTitles name each document type in German (subject and text).
var documentTitles = map[string]string{"invoice": "Rechnung", "voucher_sale": "Beleg", "cancellation": "Stornorechnung",
	"credit_note": "Rechnungskorrektur"}

// documentMessage is the e-mail of an archived document: the PDF (ZUGFeRD,
// with its XML embedded) attached, and for XRechnung the XML, the legal
// invoice, as well; the project's invoice contact as Reply-To.
func (m *Mailer) documentMessage(ctx context.Context, d dueDelivery) (mail.Message, error) {
	var number, typ, format, currency string
	var gross, due int64
	var issue time.Time
	var iban, reference *string
	err := m.svc.pool.QueryRow(ctx, `SELECT i.number, i.type, i.format, i.currency, i.total_gross_cents, i.due_cents, i.issue_date, t.iban, t.reference
		FROM invoices i LEFT JOIN provider_transfers t ON t.order_id = i.order_id AND t.cancelled_at IS NULL
		WHERE i.project_id = $1 AND i.id = $2`, d.projectID, *d.invoiceID).
		Scan(&number, &typ, &format, &currency, &gross, &due, &issue, &iban, &reference)
	if err != nil {
		return mail.Message{}, fmt.Errorf("invoice %s: %w", *d.invoiceID, err)
	}
	p, err := project.Get(ctx, m.svc.pool, d.projectID)
	if err != nil {
		return mail.Message{}, err
	}
	if m.archive == nil {
		return mail.Message{}, errors.New("no archive configured: the documents cannot be read")
	}
	pdf, _, err := m.archive.Get(ctx, archive.InvoicePDFKey(d.projectID, *d.invoiceID))
	if err != nil {
		return mail.Message{}, fmt.Errorf("archived PDF: %w", err)
	}
	title := documentTitles[typ]
	if title == "" {
		title = "Rechnung"
	}
	seller := p.Settings.SellerName
	if seller == "" {
		seller = p.Name
	}
	msg := mail.Message{
		To:      d.recipient,
		Subject: fmt.Sprintf("Ihre %s %s", title, number),
		Text: fmt.Sprintf("Guten Tag,\n\nanbei erhalten Sie unsere %s %s vom %s zu Ihrer Bestellung %s über %s %s.\n\n"+
			"Die %s liegt als PDF-Datei bei%s.\n\nBei Fragen antworten Sie einfach auf diese E-Mail.\n\nMit freundlichen Grüßen\n%s\n",
			title, number, issue.Format("02.01.2006"), d.orderNo, formatCents(gross), currency, title, xmlNote(format), seller),
		Attachments: []mail.Attachment{{Name: number + ".pdf", ContentType: "application/pdf", Data: pdf}},
	}
	if typ == "invoice" && iban != nil && reference != nil && due > 0 {
		// A bank transfer through the payment provider: where to pay, and the reference that matches the payment.
		msg.Text = strings.Replace(msg.Text, "\n\nBei Fragen", fmt.Sprintf("\n\nBitte überweisen Sie %s %s auf das Konto %s mit dem "+
			"Verwendungszweck %s (nur dieser Verwendungszweck ordnet Ihre Zahlung zu).\n\nBei Fragen", formatCents(due), currency, *iban, *reference), 1)
	}
	if d.replyTo != nil {
		msg.ReplyTo = *d.replyTo
	}
	if format == "xrechnung" {
		xml, _, err := m.archive.Get(ctx, archive.InvoiceXMLKey(d.projectID, *d.invoiceID))
		if err != nil {
			return mail.Message{}, fmt.Errorf("archived XML: %w", err)
		}
		msg.Attachments = append(msg.Attachments, mail.Attachment{Name: number + ".xml", ContentType: "application/xml", Data: xml})
	}
	return msg, nil
}

func xmlNote(format string) string {
	if format == string(billing.FormatSmallAmount) {
		return " (Kleinbetragsrechnung nach § 33 UStDV)"
	}
	if format == "xrechnung" {
		return "; maßgeblich ist die beigefügte XRechnung (XML-Datei), die PDF-Datei ist eine Lesekopie"
	}
	return " (ZUGFeRD: die elektronische Rechnung ist in die PDF-Datei eingebettet)"
}

// formatCents writes cents the German way: 1234567 → 12.345,67.
func formatCents(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	units := fmt.Sprint(c / 100)
	var b strings.Builder
	for i, r := range units {
		if i > 0 && (len(units)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(r)
	}
	return fmt.Sprintf("%s%s,%02d", sign, b.String(), c%100)
}

// taskMessage is the notice of an urgent task to the invoice contact.
func (m *Mailer) taskMessage(ctx context.Context, d dueDelivery) (mail.Message, error) {
	var kind, details string
	err := m.svc.pool.QueryRow(ctx, `SELECT kind, details::text FROM tasks WHERE project_id = $1 AND id = $2`, d.projectID, *d.taskID).
		Scan(&kind, &details)
	if err != nil {
		return mail.Message{}, fmt.Errorf("task %s: %w", *d.taskID, err)
	}
	return mail.Message{
		To:      d.recipient,
		Subject: fmt.Sprintf("Dringend: Aufgabe %s zur Bestellung %s", kind, d.orderNo),
		Text: fmt.Sprintf("Guten Tag,\n\nzur Bestellung %s ist eine dringende Aufgabe offen (%s); bis sie erledigt ist, "+
			"wird keine Rechnung erstellt.\n\nAufgabe: %s (GET /v1/tasks/%s)\nDetails: %s\n\nSobald die Ursache behoben ist, "+
			"wird die Rechnung automatisch erstellt.\n", d.orderNo, kind, *d.taskID, *d.taskID, details),
	}, nil
}

// record stores the outcome of one attempt: sent (and a delivery-failed task
// resolved), or the error and the time of the next try; the attempt that
// reaches Attempts, or a permanent refusal, opens a mail_delivery_failed task.
func (m *Mailer) record(ctx context.Context, d dueDelivery, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	attempts := d.attempts + 1
	return store.WithTx(ctx, m.svc.pool, func(tx pgx.Tx) error {
		if cause == nil {
			if _, err := tx.Exec(ctx, `UPDATE mail_deliveries SET status = 'sent', sent_at = now(), attempts = $2,
					last_attempt_at = now(), version = version + 1 WHERE id = $1`, d.id, attempts); err != nil {
				return err
			}
			return orders.ResolveTasks(ctx, tx, d.projectID, []string{TaskMailDeliveryFailed}, d.orderNo, "sent to "+d.recipient)
		}
		slog.Warn("mailer: delivery failed", "orderNo", d.orderNo, "kind", d.kind, "attempts", attempts, "err", cause)
		wait := m.Backoff << min(attempts-1, 20)
		if wait <= 0 || wait > m.MaxBackoff {
			wait = m.MaxBackoff
		}
		var permanent *mail.PermanentError
		if errors.As(cause, &permanent) {
			wait = m.MaxBackoff
		}
		if _, err := tx.Exec(ctx, `UPDATE mail_deliveries SET attempts = $2, last_error = $3, last_attempt_at = now(),
				next_attempt_at = now() + $4::bigint * interval '1 millisecond', version = version + 1 WHERE id = $1`,
			d.id, attempts, cause.Error(), wait.Milliseconds()); err != nil {
			return err
		}
		if attempts >= m.Attempts || permanent != nil {
			details := map[string]any{"orderNo": d.orderNo, "recipient": d.recipient, "attempts": attempts, "error": cause.Error()}
			if d.invoiceID != nil {
				details["invoiceId"] = *d.invoiceID
			}
			return orders.OpenTask(ctx, tx, d.projectID, TaskMailDeliveryFailed, d.orderNo, details)
		}
		return nil
	})
}
