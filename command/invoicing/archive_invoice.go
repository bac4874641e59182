package invoicing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/tracing"
	"github.com/o2i-service/o2i/render"
)

// ArchiveInvoice renders a validated invoice's PDF from its XML (PDF/A-3
// with the XML embedded), stores both write-once, anchors them in
// PostgreSQL (SHA-256, size, version id, retain-until), writes the invoice's
// manifest as the next link of its number range's hash chain, then marks it
// archived, publishes invoice.archived and records its e-mail delivery to
// the order's address (command/orders/mail_queue.go). Live documents get COMPLIANCE
// retention to the end of the eighth year after the year of issue; test
// documents go to the test archive without retention (a reset removes
// them). A failed document (its archiving failed after the invoicer's
// attempts) is archived the same way, under its number; one that broke rules
// (recorded so by earlier versions) never. Calling it again is harmless: a
// retry after a failure finds what was anchored and goes on from there.
func (s *Service) ArchiveInvoice(ctx context.Context, a *archive.Archive, projectID, invoiceID string) (err error) {
	defer apperr.Wrap(&err, "archive invoice %s", invoiceID)
	d, err := s.readArchivable(ctx, projectID, invoiceID)
	if err != nil || d == nil {
		return err
	}
	return s.archiveDocument(ctx, a, d)
}

// ArchiveIssued is ArchiveInvoice for a document of an issuing call: one
// it recorded itself is archived from what it wrote, without reading it
// back.
func (s *Service) ArchiveIssued(ctx context.Context, a *archive.Archive, projectID string, d Issued) (err error) {
	if d.recorded == nil {
		return s.ArchiveInvoice(ctx, a, projectID, d.ID)
	}
	defer apperr.Wrap(&err, "archive invoice %s", d.ID)
	return s.archiveDocument(ctx, a, d.recorded)
}

// archivable is a recorded document as archiving needs it.
type archivable struct {
	inv event.Invoice
	xml []byte
	// read is xml as the issuing call's check read it, for the PDF's
	// layout; nil: the PDF reads xml (a document read back from the
	// database).
	read     *einvoice.Document
	rangeKey string
	issue    time.Time       // the issue date, midnight UTC
	manifest chainedManifest // the manifest an earlier attempt chained (body nil: none)
	pdfPart  *documentPart   // the PDF's part of the document batch an earlier attempt recorded (nil: none)
	// first: the issuing call archives what it recorded, no attempt can
	// have written its PDF before (a live one goes into a document batch,
	// unless a retry beside it claimed the PDF; a retry's finds an object
	// of its own its attempt wrote).
	first bool
}

// readArchivable reads a document that is still to be archived, with the
// manifest an earlier attempt anchored; nil when there is nothing to do
// (archived already, or a document that broke rules: never archived).
func (s *Service) readArchivable(ctx context.Context, projectID, invoiceID string) (*archivable, error) {
	var d archivable
	var paymentRef, batchKey *string
	var batchOffset, partOffset, partSize *int64
	var partKey, partSHA *string
	var failedRules []string
	inv := &d.inv
	err := s.pool.QueryRow(ctx, `SELECT i.id::text, i.project_id::text, i.order_id::text, i.order_no, i.payment_ref, i.number, i.status, i.version,
			i.type, i.format, i.issue_date, i.currency, i.total_net_cents, i.total_tax_cents, i.total_gross_cents, i.test_mode, i.created_at,
			i.failed_rules, i.xml, i.range_key, m.body, m.batch_key, m.batch_offset, b.batch_key, b.byte_offset, b.size, b.sha256
		FROM invoices i LEFT JOIN archive_manifests m ON m.invoice_id = i.id LEFT JOIN archive_document_batches b ON b.invoice_id = i.id
		WHERE i.project_id = $1 AND i.id = $2`, projectID, invoiceID).
		Scan(&inv.ID, &inv.ProjectID, &inv.OrderID, &inv.OrderNo, &paymentRef, &inv.Number, &inv.Status, &inv.Version, &inv.Type,
			&inv.Format, &d.issue, &inv.Currency, &inv.TotalNetCents, &inv.TotalTaxCents, &inv.TotalGrossCents, &inv.TestMode,
			&inv.CreatedAt, &failedRules, &d.xml, &d.rangeKey, &d.manifest.body, &batchKey, &batchOffset,
			&partKey, &partOffset, &partSize, &partSHA)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "invoice_not_found", "no invoice %s", invoiceID)
	}
	if err != nil {
		return nil, err
	}
	if !awaitsArchive(inv.Status, failedRules) {
		return nil, nil // archived already, or broke rules (never archived)
	}
	if paymentRef != nil {
		inv.PaymentRef = *paymentRef
	}
	if batchKey != nil && batchOffset != nil {
		d.manifest.batchKey, d.manifest.offset = *batchKey, *batchOffset
	}
	if partKey != nil {
		d.pdfPart = &documentPart{batchKey: *partKey, offset: *partOffset, size: *partSize, sha256: *partSHA}
	}
	inv.IssueDate = d.issue.Format(time.DateOnly)
	return &d, nil
}

// archiveDocument stores d's PDF and XML, chains and stores its manifest,
// and marks it archived (ArchiveInvoice): from created, or from failed,
// whose reason and task it clears.
func (s *Service) archiveDocument(ctx context.Context, a *archive.Archive, d *archivable) error {
	ctx, span := tracing.Start(ctx, "archive invoice", trace.SpanKindInternal, tracing.InvoiceID.String(d.inv.ID),
		tracing.OrderNo.String(d.inv.OrderNo), tracing.ProjectID.String(d.inv.ProjectID), attribute.String("o2i.invoice_number", d.inv.Number))
	err := s.storeDocument(ctx, a, d)
	tracing.End(span, err)
	return err
}

// storeDocument is archiveDocument without its span.
func (s *Service) storeDocument(ctx context.Context, a *archive.Archive, d *archivable) error {
	inv := d.inv
	projectID, invoiceID := inv.ProjectID, inv.ID
	arc := a.For(inv.TestMode)
	until := archive.RetainUntil(d.issue, archive.RetentionYears)
	loc := d.manifest
	if loc.body == nil {
		var err error
		if loc, err = s.storeObjects(ctx, arc, d, until); err != nil {
			return err
		}
	}
	mSt, err := s.storeManifest(ctx, arc, projectID, invoiceID, loc, until)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	// The mark is written with the version the invoice was read in; when it
	// changed meanwhile, the version is read again (archived meanwhile: done).
	for tries := 1; ; tries++ {
		done, err := s.markArchived(ctx, arc, inv, mSt, now)
		if done || err != nil {
			return err
		}
		var status string
		var failedRules []string
		if err := s.pool.QueryRow(ctx, `SELECT status, version, failed_rules FROM invoices WHERE project_id = $1 AND id = $2`,
			projectID, invoiceID).Scan(&status, &inv.Version, &failedRules); err != nil {
			return err
		}
		if !awaitsArchive(status, failedRules) {
			return nil // archived meanwhile
		}
		if tries == maxMarkTries {
			return fmt.Errorf("mark archived: the invoice changed %d times while it was marked", tries)
		}
	}
}

// storeObjects stores d's XML (unless it lies only inside the PDF) and
// PDF, anchors them and chains the manifest (chainManifest). A live
// document's PDF, at its first attempt, is written by the chain's
// goroutine, in a document batch with the others it chains (writePDFs);
// one recorded in a document batch already lies in that batch, written
// again from the database when it is not in the store
// (storeDocumentBatch). A retry of one that was not writes its PDF as an
// object of its own, where an earlier attempt may have written it; a live
// one claims it first (putOwnPDF), since its issuing call may be at work.
func (s *Service) storeObjects(ctx context.Context, arc *archive.Archive, d *archivable, until time.Time) (chainedManifest, error) {
	inv := d.inv
	projectID, invoiceID := inv.ProjectID, inv.ID
	var xmlSt archive.Stored
	if inv.Format != string(billing.FormatSmallAmount) && !xmlEmbeddedOnly(inv.Format) {
		err := s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
			xmlSt, err = arc.Put(ctx, archive.InvoiceXMLKey(projectID, invoiceID), d.xml, "application/xml", until)
			return err
		})
		if err != nil {
			return chainedManifest{}, err
		}
	}
	m := archive.Manifest{ProjectID: projectID, NumberRange: d.rangeKey, InvoiceID: invoiceID, Number: inv.Number,
		IssueDate: inv.IssueDate, Type: inv.Type, TestMode: inv.TestMode}
	var pending *pendingPDF
	var pdfSt archive.Stored
	switch {
	case d.pdfPart != nil && !d.pdfPart.ownsObject(projectID, invoiceID):
		st, err := s.storeDocumentBatch(ctx, arc, projectID, *d.pdfPart, until)
		if err != nil {
			return chainedManifest{}, err
		}
		pdfSt = st
	default:
		pdf, err := documentPDF(inv.Format, d.xml, d.read)
		if err != nil {
			return chainedManifest{}, fmt.Errorf("render PDF: %w", err)
		}
		if d.first && !inv.TestMode {
			pending = &pendingPDF{data: pdf, format: inv.Format, xml: d.xml, until: until}
			break
		}
		// A live document's retry claims the object first (an issuing call
		// may be at work beside it), unless an earlier retry claimed it:
		// d.pdfPart here is such a claim, a batch having gone above.
		put := s.putPDF
		if !inv.TestMode && d.pdfPart == nil {
			put = s.putOwnPDF
		}
		if pdfSt, err = put(ctx, arc, projectID, invoiceID, pdf, until); err != nil {
			return chainedManifest{}, err
		}
	}
	objs := map[string]archive.Stored{"xml": xmlSt}
	if pending == nil {
		objs, m.Objects = documentObjects(inv.Format, d.xml, pdfSt, xmlSt)
	}
	return s.chainManifest(ctx, arc, m, d.issue, objs, pending)
}

// storeManifest returns the manifest's object as loc describes it: the
// manifest batch it lies in as this process wrote it after the chain
// transaction, or else that batch written (again) from the manifests the
// database recorded for it, or a manifest object of its own. The bytes are
// fixed in the database before the object is written, so a retry writes the
// same bytes (which counts as success).
func (s *Service) storeManifest(ctx context.Context, arc *archive.Archive, projectID, invoiceID string, loc chainedManifest, until time.Time) (archive.Stored, error) {
	key, data, contentType := archive.ManifestKey(projectID, invoiceID), loc.body, "application/json"
	if loc.batchKey != "" && loc.stored == nil {
		var err error
		if data, err = s.manifestBatchData(ctx, loc); err != nil {
			return archive.Stored{}, err
		}
		key, contentType = loc.batchKey, archive.ManifestBatchContentType
	}
	st := loc.stored
	if st == nil {
		var put archive.Stored
		err := s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
			put, err = arc.Put(ctx, key, data, contentType, until)
			return err
		})
		if err != nil {
			return archive.Stored{}, err
		}
		st = &put
	}
	if loc.batchKey == "" {
		return *st, nil
	}
	// The anchor names the manifest's bytes in the batch object.
	return st.Part(archive.SHA256(loc.body), int64(len(loc.body)), loc.offset), nil
}

// manifestBatchData returns the bytes of loc's manifest batch from the
// manifests recorded for it, in chain order, after checking that they hold
// loc's manifest where it was recorded.
func (s *Service) manifestBatchData(ctx context.Context, loc chainedManifest) ([]byte, error) {
	rows, err := store.Query(ctx, s.pool, `SELECT body FROM archive_manifests WHERE batch_key = $1 ORDER BY chain_seq`, loc.batchKey)
	if err != nil {
		return nil, err
	}
	var data, body []byte
	if _, err := pgx.ForEachRow(rows, []any{&body}, func() error { data = append(data, body...); return nil }); err != nil {
		return nil, err
	}
	end := loc.offset + int64(len(loc.body))
	if loc.offset < 0 || end > int64(len(data)) || !bytes.Equal(data[loc.offset:end], loc.body) {
		return nil, fmt.Errorf("manifest batch %s: the recorded manifests do not hold this manifest at %d", loc.batchKey, loc.offset)
	}
	return data, nil
}

// maxMarkTries bounds markArchived's attempts against an invoice that keeps
// changing (the error sends the event to the retry table).
const maxMarkTries = 5

// markArchived anchors the manifest object, marks the manifest stored and
// the invoice archived, records its e-mail delivery and enqueues
// invoice.archived in one statement (markArchivedSQL), committed with the
// marks of the documents archived at the same time (Service.marks). The event's version is the
// one the invoice was read with, plus one; done is false, with nothing
// written, when the invoice has another version or status by now (archived
// meanwhile, or changed): the caller then reads it again.
//
// While this process's mailer runs and has room, the delivery is recorded
// already claimed for it and handed to it, with what its message needs:
// the mailer sends it without a claim of its own (a statement and a commit
// less per e-mail). Should the process stop before the mailer records the
// outcome, the claim's lease runs out and any mailer sends it, as after a
// crash in the middle of any claim.
func (s *Service) markArchived(ctx context.Context, arc *archive.Archive, inv event.Invoice, mSt archive.Stored, now time.Time) (done bool, err error) {
	var (
		m         *Mailer
		claim     dueDelivery
		token     *string
		leaseMS   *int64
		messageID *string
	)
	if m = s.mailer.Load(); m != nil && !inv.TestMode && m.reserve(inv.ProjectID) {
		var id string
		claim, id = m.newClaim()
		ms := claim.lease.Milliseconds()
		token, leaseMS, messageID = &claim.token, &ms, &id
		defer func() {
			if claim.id != "" && done && err == nil {
				m.handOff(claim)
			} else {
				m.release()
			}
		}()
	}
	projectID := inv.ProjectID
	read := inv.Version
	inv.Version++
	inv.Status, inv.ArchivedAt = "archived", &now
	ev, err := event.New(event.InvoiceArchived, projectID, "invoice", inv.ID, inv.OrderNo, inv.Version, now, inv)
	if err != nil {
		return false, fmt.Errorf("event: %w", err)
	}
	evRow, err := outbox.Values(ctx, ev)
	if err != nil {
		return false, err
	}
	args := append([]any{projectID, inv.ID, now, read}, anchorValues(arc.Bucket(), mSt)...)
	// The document goes to the order's e-mail (blocked in test mode).
	args = append(args, orders.DocumentMailArgs(projectID, inv.ID, inv.OrderID, inv.OrderNo, inv.TestMode, token, leaseMS, messageID)...)
	args = append(args, evRow...)
	// In a pipeline with the marks of other documents (one commit for all).
	var marked int64
	var claimed dueDelivery
	err = s.marks.QueryRow(ctx, inv.ID, markArchivedSQL, args, func(row pgx.Row) error {
		c := claim
		var n int64
		if err := scanClaimed(row, &c, &n); err != nil {
			return err
		}
		claimed, marked = c, n
		return nil
	})
	if err != nil {
		return false, err
	}
	claim = claimed
	return marked == 1, nil
}

// markArchivedSQL is markArchived's statement. Every write hangs on the
// status update (mark): when the invoice has another version or status, it
// updates no row and nothing else is written. Its parameters: the project,
// the invoice, the time, the version read ($1-$4), the manifest's anchor
// (anchorValues), the mail delivery (orders.DocumentMailArgs) and the
// event's outbox row (outbox.Values), numbered in that order.
var markArchivedSQL = func() string {
	anchorFirst := 5
	mailFirst := anchorFirst + anchorParams
	eventFirst := mailFirst + orders.DocumentMailParams
	return `WITH mark AS (
		UPDATE invoices SET status = 'archived', archived_at = $3, version = $4 + 1, failure_reason = NULL, failure_task_id = NULL
		WHERE project_id = $1 AND id = $2 AND version = $4 AND ` + awaitsArchiveSQL("invoices") + `
		RETURNING id),
	anchor AS (
		INSERT INTO archive_objects (invoice_id, kind, project_id, bucket, object_key, version_id, sha256, size, retain_until, byte_offset,
			embedded_in)
		SELECT id, 'manifest', $1, ` + params(anchorFirst, anchorParams) + `, NULL FROM mark ON CONFLICT (invoice_id, kind) DO NOTHING),
	stored AS (
		UPDATE archive_manifests SET stored_at = $3 WHERE invoice_id = $2 AND stored_at IS NULL AND EXISTS (SELECT FROM mark)),
	pending AS (
		DELETE FROM archive_pending WHERE invoice_id = $2 AND EXISTS (SELECT FROM mark)),
	mail AS (` + orders.DocumentMailSQL("mark", mailFirst) + `),
	ev AS (
		INSERT INTO outbox (` + outbox.Columns + `) SELECT ` + params(eventFirst, strings.Count(outbox.Columns, ",")+1) + ` FROM mark)
	SELECT m.n, ` + claimedColumns + `
	FROM (SELECT count(*) AS n FROM mark) m
		LEFT JOIN mail c ON $` + strconv.Itoa(mailFirst+6) + `::uuid IS NOT NULL ` + claimedJoins
}()

// params is "$first, …, $(first+n-1)".
func params(first, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = "$" + strconv.Itoa(first+i)
	}
	return strings.Join(ps, ", ")
}

// anchoredManifest returns the manifest recorded for the invoice by an
// earlier attempt, or nil (backfill: never in a manifest batch).
func (s *Service) anchoredManifest(ctx context.Context, invoiceID string) ([]byte, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM archive_manifests WHERE invoice_id = $1`, invoiceID).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return body, err
}

// recordManifest anchors the written manifest object and marks the
// manifest stored.
func recordManifest(ctx context.Context, tx pgx.Tx, projectID, invoiceID, bucket string, st archive.Stored, now time.Time) error {
	var a anchorArrays
	a.add(projectID, invoiceID, "manifest", bucket, st, "")
	b := &pgx.Batch{}
	a.queue(b)
	b.Queue(`UPDATE archive_manifests SET stored_at = $2 WHERE invoice_id = $1 AND stored_at IS NULL`, invoiceID, now)
	return tx.SendBatch(ctx, b).Close()
}

// anchorParams is the number of anchorValues.
const anchorParams = 7

// anchorValues are the values of an object's anchor: bucket, object key,
// version, SHA-256, size, retention (NULL without one) and the byte offset
// of a document in a batch (NULL: the whole object).
func anchorValues(bucket string, st archive.Stored) []any {
	return []any{bucket, st.Key, st.VersionID, st.SHA256, st.Size, retainUntil(st), byteOffset(st)}
}

// byteOffset is the anchor's byte_offset of st: nil for a whole object.
func byteOffset(st archive.Stored) *int64 {
	if !st.InBatch {
		return nil
	}
	o := st.Offset
	return &o
}

// retainUntil is the anchor's retain_until of st: nil without retention.
func retainUntil(st archive.Stored) *time.Time {
	if st.RetainUntil.IsZero() {
		return nil
	}
	u := st.RetainUntil.UTC()
	return &u
}

// xmlEmbeddedOnly reports whether a document of format keeps its XML only
// inside its PDF/A-3 (ZUGFeRD, Factur-X): the PDF is the e-invoice. An
// XRechnung's XML is the invoice and is always an object of its own.
func xmlEmbeddedOnly(format string) bool { return format == string(billing.FormatZUGFeRD) }

// documentPDF renders the PDF of a document of format from its XML: a
// small-amount invoice without the XML embedded (render.SmallAmountPDF);
// read, when set, is the XML as einvoice read it, laid out without reading
// it again.
func documentPDF(format string, xml []byte, read *einvoice.Document) ([]byte, error) {
	switch {
	case format == string(billing.FormatSmallAmount):
		return render.SmallAmountPDF(xml)
	case read != nil:
		return render.PDFOf(xml, read)
	}
	return render.PDF(xml)
}
