package invoicing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
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
//
// Mail once. A pool of Concurrency workers per process each claims one
// delivery at a time with a token of its own and a lease sized to one
// delivery (Timeout for composing, the sender's SessionTimeout for the send,
// which go-mail cannot exceed, and LeaseMargin for the record), not to a
// batch; no other mailer claims the row while the lease holds. Each worker
// keeps its SMTP connection open from one delivery to the next while they
// follow each other. Right before sending the worker checks, by its own
// clock from before the claim, that the lease still covers the session and
// the margin; only when composing took longer does it renew the lease in
// the database, and a claim that has run out or been taken over is then
// given up unsent.
// The outcome is recorded only under the worker's own token: a stale
// claimer's result is dropped. Every attempt of a delivery carries the one Message-ID stored at
// its first claim, so that the resend that remains possible (the relay
// accepted the message, then the process died or lost PostgreSQL before the
// commit, or the relay's answer never arrived) is the same message to the
// receiver.

// TaskMailDeliveryFailed is the review task of an e-mail that could not be
// sent after MailAttempts tries (or that the relay refused for good); the
// mailer keeps trying, and sending resolves it.
const TaskMailDeliveryFailed = "mail_delivery_failed"

// DefaultMailConcurrency is how many SMTP sessions a mailer holds at once
// unless told otherwise (O2I_MAIL_CONCURRENCY).
const DefaultMailConcurrency = 8

// Mailer sends the due e-mail deliveries (role invoicer, beside the
// reconciler). Several mailers may run, each with a pool of workers: every
// worker claims one delivery with a lease of its own, so a message goes out
// once unless a process dies between the relay's acceptance and the commit
// (then again, with the same Message-ID).
type Mailer struct {
	svc     *Service
	archive *archive.Archive
	sender  *mail.Sender

	// Every is how often an idle worker looks for due deliveries.
	Every time.Duration
	// Attempts is how many failed tries open a mail_delivery_failed task.
	Attempts int
	// Backoff is the wait after the first failure (doubling, at most MaxBackoff).
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one delivery before its SMTP session: reading the
	// documents and composing the message; the claim's lease is Timeout,
	// the sender's SessionTimeout (which bounds the session itself) and
	// LeaseMargin.
	Timeout time.Duration
	// LeaseMargin is how long a lease outlasts the work it covers: the
	// time left to record the outcome before another mailer may claim the
	// delivery again.
	LeaseMargin time.Duration
	// Concurrency is how many deliveries (SMTP sessions) the mailer works
	// on at once.
	Concurrency int
	// ProjectID, when set, limits the mailer to that project's deliveries
	// (a mailer over an archive of its own, as in tests); empty: all.
	ProjectID string

	// handoff holds deliveries this process's archiving claimed for the
	// running mailer when it recorded them (Service.markArchived); reserved
	// counts the places taken in it, at most its capacity.
	handoff  chan dueDelivery
	reserved atomic.Int64
}

// NewMailer returns the mailer sending through sender; documents are read from a.
func NewMailer(s *Service, a *archive.Archive, sender *mail.Sender) *Mailer {
	return &Mailer{svc: s, archive: a, sender: sender, Every: time.Second, Attempts: 5, Backoff: 30 * time.Second,
		MaxBackoff: time.Hour, Timeout: 30 * time.Second, LeaseMargin: 30 * time.Second, Concurrency: DefaultMailConcurrency}
}

func (m *Mailer) workers() int { return max(m.Concurrency, 1) }

// Run sends due deliveries with Concurrency workers until ctx ends. While it
// runs, the documents its Service archives come with their delivery already
// claimed for it (handed off): a worker sends them without claiming them in
// the database first. Each worker takes a handed-off delivery before it
// looks for due ones, and looks for those one after another while it finds
// any, else once every Every.
func (m *Mailer) Run(ctx context.Context) error {
	m.handoff = make(chan dueDelivery, m.workers())
	m.svc.mailer.Store(m)
	var wg sync.WaitGroup
	for range m.workers() {
		wg.Go(func() {
			conn := m.sender.Conn()
			defer conn.Close()
			var handed *dueDelivery
			var lookAt time.Time // when to look for due deliveries next (zero: now)
			for ctx.Err() == nil {
				if handed == nil {
					handed = m.takeHandedOff()
				}
				if handed != nil {
					if err := m.send(ctx, conn, *handed); err != nil && ctx.Err() == nil {
						slog.Warn("mailer: sending a handed-off delivery", "err", err)
					}
					handed = nil
					continue
				}
				if wait := time.Until(lookAt); wait > 0 {
					handed = m.idle(ctx, wait)
					continue
				}
				// Due deliveries one after another while there are any,
				// else again after Every.
				tried, err := m.sendOne(ctx, conn, nil)
				if err != nil && ctx.Err() == nil {
					slog.Warn("mailer: sending a due delivery", "err", err)
				}
				lookAt = time.Time{}
				if tried == "" || err != nil {
					lookAt = time.Now().Add(m.Every)
				}
			}
		})
	}
	wg.Wait()
	m.svc.mailer.CompareAndSwap(m, nil)
	m.giveBack()
	return nil
}

// reserve takes a place for a delivery of projectID that is about to be
// claimed for this mailer; false when every place is taken or the mailer
// sends another project's only. The place is freed by handOff or release.
func (m *Mailer) reserve(projectID string) bool {
	if m.ProjectID != "" && m.ProjectID != projectID {
		return false
	}
	if m.reserved.Add(1) > int64(cap(m.handoff)) {
		m.reserved.Add(-1)
		return false
	}
	return true
}

// release frees a reserved place that no delivery took.
func (m *Mailer) release() { m.reserved.Add(-1) }

// handOff gives a worker d, claimed under a reserved place (never blocks).
func (m *Mailer) handOff(d dueDelivery) { m.handoff <- d }

// takeHandedOff returns a handed-off delivery, or nil when none waits.
func (m *Mailer) takeHandedOff() *dueDelivery {
	select {
	case d := <-m.handoff:
		return m.took(d)
	default:
		return nil
	}
}

// idle waits d, or until a delivery is handed off (returned).
func (m *Mailer) idle(ctx context.Context, d time.Duration) *dueDelivery {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case h := <-m.handoff:
		return m.took(h)
	}
	return nil
}

// took frees the place of handed-off delivery d, taken by a worker.
func (m *Mailer) took(d dueDelivery) *dueDelivery {
	m.reserved.Add(-1)
	return &d
}

// giveBack ends the claims of the deliveries still handed off when the
// mailer stops, so that any mailer sends them at once instead of after
// their lease. One that comes after this is sent after its lease, as after
// a crash.
func (m *Mailer) giveBack() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		d := m.takeHandedOff()
		if d == nil {
			return
		}
		if _, err := m.svc.pool.Exec(ctx, `UPDATE mail_deliveries SET claim_token = NULL, lease_until = NULL, next_attempt_at = now()
			WHERE id = $1 AND claim_token = $2 AND status = 'pending'`, d.id, d.token); err != nil {
			slog.Warn("mailer: giving back a handed-off delivery; it is sent after its lease", "deliveryId", d.id, "err", err)
		}
	}
}

// newClaim is a claim about to be taken for this mailer: its token, its
// lease (Timeout, the session and LeaseMargin), the Message-ID a delivery
// without one gets, and this process's time before the statement that
// takes it.
func (m *Mailer) newClaim() (d dueDelivery, messageID string) {
	return dueDelivery{token: uuid.NewString(), claimedAt: time.Now(), lease: m.Timeout + m.sender.SessionTimeout() + m.LeaseMargin},
		m.sender.NewMessageID()
}

// dueDelivery is a claimed delivery; token is the claim.
type dueDelivery struct {
	id, projectID, kind, orderNo, recipient, messageID string
	invoiceID, taskID, replyTo                         *string
	attempts                                           int
	token                                              string
	// claimedAt is this process's time right before the claim's statement
	// was sent (the lease runs from the database's time after it); lease is
	// the lease the claim took.
	claimedAt time.Time
	lease     time.Duration

	// Read with the claim, for the message: the document (nil when the
	// delivery names none or it is gone) and the project's name and
	// settings (nil when the project is gone).
	doc             *mailDocument
	projectName     *string
	projectSettings []byte
}

// mailDocument is what a document's e-mail says of it.
type mailDocument struct {
	number, typ, format, currency string
	gross, due                    int64
	issue                         time.Time
	iban, reference               *string
	// pdf is the PDF's anchor when it is a part of a document batch
	// (nil: an object of its own, read by its key); pdfBucket its bucket.
	pdf       *archive.Stored
	pdfBucket string
}

// SendDue tries up to limit deliveries that are due when it starts, once
// each, Concurrency at a time, and returns how many it tried (claimed); a
// delivery that fails is not tried again in the same call. It fails only
// when the database does.
func (m *Mailer) SendDue(ctx context.Context, limit int) (int, error) {
	var start time.Time
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := m.svc.pool.QueryRow(qctx, `SELECT now()`).Scan(&start)
	cancel()
	if err != nil {
		return 0, err
	}
	var (
		mu    sync.Mutex
		tried int
		errs  []error
		wg    sync.WaitGroup
	)
	for range min(m.workers(), max(limit, 0)) {
		wg.Go(func() {
			conn := m.sender.Conn()
			defer conn.Close()
			for ctx.Err() == nil {
				mu.Lock()
				if tried >= limit {
					mu.Unlock()
					return
				}
				tried++ // reserved; given back when nothing was due
				mu.Unlock()
				id, err := m.sendOne(ctx, conn, &start)
				mu.Lock()
				if id == "" {
					tried--
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if id == "" {
					return
				}
			}
		})
	}
	wg.Wait()
	return tried, errors.Join(errs...)
}

// sendOne claims one delivery due at dueBy (nil: now) and tries it once over
// the worker's SMTP connection: it returns its id, or "" when none was due.
func (m *Mailer) sendOne(ctx context.Context, conn *mail.Conn, dueBy *time.Time) (string, error) {
	d, ok, err := m.claim(ctx, dueBy)
	if err != nil || !ok {
		return "", err
	}
	return d.id, m.send(ctx, conn, d)
}

// send tries claimed delivery d once over the worker's SMTP connection and
// records the outcome.
func (m *Mailer) send(ctx context.Context, conn *mail.Conn, d dueDelivery) error {
	attempted, cause := m.deliver(ctx, conn, d)
	if !attempted {
		return nil // the claim was lost before the session: nothing to record
	}
	if cause != nil && ctx.Err() != nil {
		// Shutting down in the middle of the send: whether the relay has
		// the message is unknown. The lease runs out and the delivery is
		// tried again, with the same Message-ID. A sent one is recorded.
		return nil
	}
	return m.record(ctx, d, cause)
}

// claim takes one delivery due at dueBy (nil: now) whose lease (if any) has
// run out, under a new token and a lease of Timeout, the session and
// LeaseMargin, and gives it its Message-ID unless it has one. ok is false
// when none is due.
func (m *Mailer) claim(ctx context.Context, dueBy *time.Time) (dueDelivery, bool, error) {
	d, messageID := m.newClaim()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The document and the project the message needs come with the claim:
	// composing reads nothing more from the database.
	row := m.svc.pool.QueryRow(qctx, `WITH c AS (UPDATE mail_deliveries
		SET claim_token = $1, lease_until = now() + $2::bigint * interval '1 millisecond', next_attempt_at = now() + $2::bigint * interval '1 millisecond',
			message_id = COALESCE(message_id, $3)
		WHERE id = (SELECT id FROM mail_deliveries WHERE status = 'pending' AND next_attempt_at <= LEAST(now(), $5::timestamptz)
			AND (lease_until IS NULL OR lease_until <= now()) AND ($4 = '' OR project_id::text = $4)
			ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+orders.DeliveryColumns+`)
		SELECT `+claimedColumns+` FROM c `+claimedJoins,
		d.token, d.lease.Milliseconds(), messageID, m.ProjectID, dueBy)
	err := scanClaimed(row, &d)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("claim a due delivery: %w", err)
	}
	return d, true, nil
}

// claimedColumns and claimedJoins read a claimed delivery c (its columns
// orders.DeliveryColumns) with what its message needs: the document (none
// for a task's notice) and the project. scanClaimed reads them; without a
// delivery (c a relation without a row, joined to another), d.id is "".
const (
	claimedColumns = `COALESCE(c.id::text, ''), COALESCE(c.project_id::text, ''), COALESCE(c.kind, ''), COALESCE(c.order_no, ''),
		COALESCE(c.recipient, ''), c.invoice_id::text, c.task_id::text, c.reply_to, COALESCE(c.attempts, 0), COALESCE(c.message_id, ''), i.number, i.type, i.format, i.currency, i.total_gross_cents, i.due_cents, i.issue_date,
		t.iban, t.reference, p.name, p.settings, a.bucket, a.object_key, a.version_id, a.sha256, a.size, a.retain_until, a.byte_offset`
	claimedJoins = `LEFT JOIN invoices i ON i.project_id = c.project_id AND i.id = c.invoice_id
		LEFT JOIN provider_transfers t ON t.order_id = i.order_id AND t.cancelled_at IS NULL
		LEFT JOIN projects p ON p.id = c.project_id
		LEFT JOIN archive_objects a ON a.invoice_id = c.invoice_id AND a.kind = 'pdf' AND a.byte_offset IS NOT NULL`
)

// scanClaimed reads claimedColumns into d, after the values of first.
func scanClaimed(row pgx.Row, d *dueDelivery, first ...any) error {
	var doc mailDocument
	var number, typ, format, currency *string
	var gross, due *int64
	var issue *time.Time
	var pdfBucket, pdfKey, pdfVersion, pdfSHA *string
	var pdfSize, pdfOffset *int64
	var pdfUntil *time.Time
	err := row.Scan(append(first, &d.id, &d.projectID, &d.kind, &d.orderNo, &d.recipient, &d.invoiceID, &d.taskID, &d.replyTo, &d.attempts, &d.messageID,
		&number, &typ, &format, &currency, &gross, &due, &issue, &doc.iban, &doc.reference, &d.projectName, &d.projectSettings,
		&pdfBucket, &pdfKey, &pdfVersion, &pdfSHA, &pdfSize, &pdfUntil, &pdfOffset)...)
	if err == nil && number != nil && typ != nil && format != nil && currency != nil && gross != nil && due != nil && issue != nil {
		doc.number, doc.typ, doc.format, doc.currency, doc.gross, doc.due, doc.issue = *number, *typ, *format, *currency, *gross, *due, *issue
		if pdfKey != nil {
			doc.pdf = &archive.Stored{Key: *pdfKey, VersionID: *pdfVersion, SHA256: *pdfSHA, Size: *pdfSize}
			doc.pdf.Anchored(pdfUntil, pdfOffset)
			doc.pdfBucket = *pdfBucket
		}
		d.doc = &doc
	}
	return err
}

// claimCovers reports whether a claim taken elapsed ago (measured from
// before its statement was sent) with lease still holds through a session of
// at most session and the margin after it. Only the mailer's claims write a
// claim, and they take a delivery only once its lease has run out, so such a
// claim is still the worker's: it sends without asking the database.
func claimCovers(elapsed, lease, session, margin time.Duration) bool {
	return elapsed >= 0 && elapsed+session+margin <= lease
}

// renew checks, right before the SMTP session, that d's claim is still this
// worker's and valid, and extends its lease over the whole session and
// LeaseMargin. false: the lease ran out or another mailer holds the delivery
// now (or it is no longer pending): it must not be sent.
func (m *Mailer) renew(ctx context.Context, d dueDelivery) (bool, error) {
	lease := m.sender.SessionTimeout() + m.LeaseMargin
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tag, err := m.svc.pool.Exec(qctx, `UPDATE mail_deliveries SET lease_until = now() + $3::bigint * interval '1 millisecond',
			next_attempt_at = now() + $3::bigint * interval '1 millisecond'
		WHERE id = $1 AND claim_token = $2 AND status = 'pending' AND lease_until > now()`, d.id, d.token, lease.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("renew the claim: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// deliver composes d's message within Timeout, renews the claim when what
// is left of its lease no longer covers the session, and sends it (the
// sender bounds the session). attempted is false when the claim was
// lost before the session: nothing was sent and nothing is to be recorded;
// else cause is the attempt's error.
func (m *Mailer) deliver(ctx context.Context, conn *mail.Conn, d dueDelivery) (attempted bool, cause error) {
	msg, err := m.compose(ctx, d)
	if err != nil {
		return true, err
	}
	if !claimCovers(time.Since(d.claimedAt), d.lease, m.sender.SessionTimeout(), m.LeaseMargin) {
		ok, err := m.renew(ctx, d)
		if err != nil {
			return true, err
		}
		if !ok {
			slog.Warn("mailer: claim lost before sending (lease ran out or taken over), not sent", "deliveryId", d.id, "orderNo", d.orderNo)
			return false, nil
		}
	}
	return true, conn.Send(ctx, msg)
}

// compose is d's message, with its Message-ID, read within Timeout.
func (m *Mailer) compose(ctx context.Context, d dueDelivery) (mail.Message, error) {
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
	msg.MessageID = d.messageID
	return msg, err
}

// archivedPDF returns a document's archived PDF: the object under its own
// key, or the part of the document batch its anchor (read with the claim)
// names, checked against the anchor; either from this process's memory
// when it archived the document lately.
func (m *Mailer) archivedPDF(ctx context.Context, projectID, invoiceID string, doc *mailDocument) ([]byte, error) {
	key := archive.InvoicePDFKey(projectID, invoiceID)
	if doc.pdf == nil {
		pdf, _, err := m.archive.Get(ctx, key)
		return pdf, err
	}
	if pdf, ok := m.archive.Kept(key); ok {
		return pdf, nil
	}
	arc, err := m.archive.InBucket(doc.pdfBucket)
	if err != nil {
		return nil, err
	}
	return arc.Verified(ctx, *doc.pdf)
}

// documentTitles name each document type in German (subject and text).
var documentTitles = map[string]string{"invoice": "Rechnung", "voucher_sale": "Beleg", "cancellation": "Stornorechnung",
	"credit_note": "Rechnungskorrektur"}

// documentMessage is the e-mail of an archived document: the PDF (ZUGFeRD,
// with its XML embedded) attached, and for XRechnung the XML, the legal
// invoice, as well; the project's sender name on the From header and its
// reply address (else the invoice contact) as Reply-To.
func (m *Mailer) documentMessage(ctx context.Context, d dueDelivery) (mail.Message, error) {
	if d.doc == nil {
		return mail.Message{}, fmt.Errorf("invoice %s: %w", *d.invoiceID, pgx.ErrNoRows)
	}
	if d.projectName == nil {
		return mail.Message{}, project.NotFound(d.projectID)
	}
	settings, err := project.DecodeSettings(d.projectID, d.projectSettings)
	if err != nil {
		return mail.Message{}, err
	}
	p := project.Project{Name: *d.projectName, Settings: settings}
	number, typ, format, currency := d.doc.number, d.doc.typ, d.doc.format, d.doc.currency
	gross, due, issue, iban, reference := d.doc.gross, d.doc.due, d.doc.issue, d.doc.iban, d.doc.reference
	if m.archive == nil {
		return mail.Message{}, errors.New("no archive configured: the documents cannot be read")
	}
	pdf, err := m.archivedPDF(ctx, d.projectID, *d.invoiceID, d.doc)
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
	// The project's sender name and reply address (settings), else the
	// invoice contact recorded with the delivery.
	msg.FromName = p.Settings.MailFromName
	if d.replyTo != nil {
		msg.ReplyTo = *d.replyTo
	}
	if p.Settings.MailReplyTo != "" {
		msg.ReplyTo = p.Settings.MailReplyTo
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

// record stores the outcome of one attempt under d's claim: sent (and a
// delivery-failed task resolved), or the error and the time of the next try;
// the attempt that reaches Attempts, or a permanent refusal, opens a
// mail_delivery_failed task. It ends the claim. When the claim is no longer
// d's (its lease ran out and another mailer claimed the delivery), the
// outcome is dropped and logged: the current claimer records its own.
func (m *Mailer) record(ctx context.Context, d dueDelivery, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	attempts := d.attempts + 1
	stale := func() error {
		slog.Warn("mailer: stale claim, outcome dropped", "deliveryId", d.id, "orderNo", d.orderNo, "sent", cause == nil)
		return nil
	}
	if cause == nil {
		// Sent, and a delivery-failed task of the order resolved, in one
		// statement (one round trip, atomic): the task only when the
		// delivery was still this worker's.
		// Committed with the outcomes of the other workers' deliveries
		// (Service.sent).
		var recorded bool
		err := m.svc.sent.QueryRow(ctx, d.id, `WITH sent AS (
				UPDATE mail_deliveries SET status = 'sent', sent_at = now(), attempts = $3,
					last_attempt_at = now(), claim_token = NULL, lease_until = NULL, version = version + 1
				WHERE id = $1 AND claim_token = $2 RETURNING id),
			resolved AS (`+orders.ResolveTasksSQL("sent", 4)+`)
			SELECT EXISTS (SELECT 1 FROM sent)`,
			[]any{d.id, d.token, attempts, d.projectID, []string{TaskMailDeliveryFailed}, d.orderNo, "sent to " + d.recipient},
			func(row pgx.Row) error { return row.Scan(&recorded) })
		if err != nil {
			return err
		}
		if !recorded {
			return stale()
		}
		return nil
	}
	return store.WithTx(ctx, m.svc.pool, func(tx pgx.Tx) error {
		wait := m.Backoff << min(attempts-1, 20)
		if wait <= 0 || wait > m.MaxBackoff {
			wait = m.MaxBackoff
		}
		var permanent *mail.PermanentError
		if errors.As(cause, &permanent) {
			wait = m.MaxBackoff
		}
		tag, err := tx.Exec(ctx, `UPDATE mail_deliveries SET attempts = $3, last_error = $4, last_attempt_at = now(),
				next_attempt_at = now() + $5::bigint * interval '1 millisecond', claim_token = NULL, lease_until = NULL,
				version = version + 1
			WHERE id = $1 AND claim_token = $2`,
			d.id, d.token, attempts, cause.Error(), wait.Milliseconds())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return stale()
		}
		slog.Warn("mailer: delivery failed", "orderNo", d.orderNo, "kind", d.kind, "attempts", attempts, "err", cause)
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
