package invoicing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
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
	inv      event.Invoice
	xml      []byte
	rangeKey string
	issue    time.Time // the issue date, midnight UTC
	manifest []byte    // the manifest an earlier attempt anchored, or nil
}

// readArchivable reads a document that is still to be archived, with the
// manifest an earlier attempt anchored; nil when there is nothing to do
// (archived already, or a document that broke rules: never archived).
func (s *Service) readArchivable(ctx context.Context, projectID, invoiceID string) (*archivable, error) {
	var d archivable
	var paymentRef *string
	var failedRules []string
	inv := &d.inv
	err := s.pool.QueryRow(ctx, `SELECT i.id::text, i.project_id::text, i.order_id::text, i.order_no, i.payment_ref, i.number, i.status, i.version,
			i.type, i.format, i.issue_date, i.currency, i.total_net_cents, i.total_tax_cents, i.total_gross_cents, i.test_mode, i.created_at,
			i.failed_rules, i.xml, i.range_key, m.body
		FROM invoices i LEFT JOIN archive_manifests m ON m.invoice_id = i.id
		WHERE i.project_id = $1 AND i.id = $2`, projectID, invoiceID).
		Scan(&inv.ID, &inv.ProjectID, &inv.OrderID, &inv.OrderNo, &paymentRef, &inv.Number, &inv.Status, &inv.Version, &inv.Type,
			&inv.Format, &d.issue, &inv.Currency, &inv.TotalNetCents, &inv.TotalTaxCents, &inv.TotalGrossCents, &inv.TestMode,
			&inv.CreatedAt, &failedRules, &d.xml, &d.rangeKey, &d.manifest)
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
	body := d.manifest
	if body == nil {
		smallAmount := inv.Format == string(billing.FormatSmallAmount)
		pdf, err := documentPDF(inv.Format, d.xml)
		if err != nil {
			return fmt.Errorf("render PDF: %w", err)
		}
		// A retry after a failure between the two puts renders the PDF again,
		// with other bytes: the one archived first stands.
		var pdfSt, xmlSt archive.Stored
		err = s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
			pdfSt, _, err = arc.PutFirst(ctx, archive.InvoicePDFKey(projectID, invoiceID), pdf, "application/pdf", until)
			return err
		})
		if err != nil {
			return err
		}
		objects := map[string]archive.Stored{"pdf": pdfSt}
		m := archive.Manifest{ProjectID: projectID, NumberRange: d.rangeKey, InvoiceID: invoiceID, Number: inv.Number,
			IssueDate: inv.IssueDate, Type: inv.Type, TestMode: inv.TestMode}
		switch {
		case smallAmount: // a small-amount invoice is its PDF alone
		case xmlEmbeddedOnly(inv.Format):
			// The PDF/A-3 embeds the XML byte for byte (whichever rendering
			// stands): the anchor names the PDF's object with the XML's hash.
			xmlSt = archive.Embedded(pdfSt, d.xml)
			objects["xml"] = xmlSt
			m.Objects = append(m.Objects, archive.EmbeddedObject(xmlSt))
		default:
			err = s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
				xmlSt, err = arc.Put(ctx, archive.InvoiceXMLKey(projectID, invoiceID), d.xml, "application/xml", until)
				return err
			})
			if err != nil {
				return err
			}
			objects["xml"] = xmlSt
			m.Objects = append(m.Objects, archive.Object("xml", xmlSt))
		}
		m.Objects = append(m.Objects, archive.Object("pdf", pdfSt))
		if body, err = s.chainManifest(ctx, arc, m, d.issue, objects); err != nil {
			return err
		}
	}
	// The manifest's bytes are fixed in the database before the object is
	// written, so a retry writes the same bytes (which counts as success).
	var mSt archive.Stored
	err := s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
		mSt, err = arc.Put(ctx, archive.ManifestKey(projectID, invoiceID), body, "application/json", until)
		return err
	})
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

// maxMarkTries bounds markArchived's attempts against an invoice that keeps
// changing (the error sends the event to the retry table).
const maxMarkTries = 5

// errChanged rolls markArchived back: the invoice is not in the state it
// was read in.
var errChanged = errors.New("the invoice changed since it was read")

// markArchived anchors the manifest object, marks the manifest stored and
// the invoice archived, records its e-mail delivery and enqueues
// invoice.archived in one transaction of one round trip (with its BEGIN and
// COMMIT). The event's version is the one the invoice was read with, plus
// one; done is false, with nothing written, when the invoice has another
// version or status by now (archived meanwhile, or changed): the caller then
// reads it again.
func (s *Service) markArchived(ctx context.Context, arc *archive.Archive, inv event.Invoice, mSt archive.Stored, now time.Time) (done bool, err error) {
	projectID := inv.ProjectID
	read := inv.Version
	inv.Version++
	inv.Status, inv.ArchivedAt = "archived", &now
	ev, err := event.New(event.InvoiceArchived, projectID, "invoice", inv.ID, inv.OrderNo, inv.Version, now, inv)
	if err != nil {
		return false, fmt.Errorf("event: %w", err)
	}
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueManifestRecord(b, projectID, inv.ID, arc.Bucket(), mSt, now)
		mark := b.Len() // the index of the status update in the batch
		b.Queue(`UPDATE invoices SET status = 'archived', archived_at = $3, version = $4 + 1, failure_reason = NULL, failure_task_id = NULL
			WHERE project_id = $1 AND id = $2 AND version = $4 AND (status = 'created' OR status = 'failed' AND failed_rules = '{}')`,
			projectID, inv.ID, now, read)
		// The document goes to the order's e-mail (blocked in test mode).
		orders.QueueDocumentMail(b, projectID, inv.ID, inv.OrderID, inv.OrderNo, inv.TestMode)
		if err := outbox.Queue(ctx, b, ev); err != nil {
			return err
		}
		br := tx.SendBatch(ctx, b)
		var errs []error
		var marked int64
		for i := range b.Len() {
			tag, err := br.Exec()
			errs = append(errs, err)
			if i == mark {
				marked = tag.RowsAffected()
			}
		}
		if err := errors.Join(append(errs, br.Close())...); err != nil {
			return err
		}
		if marked == 0 {
			return errChanged // rolls the mail row and the event back
		}
		return nil
	})
	if errors.Is(err, errChanged) {
		return false, nil
	}
	return err == nil, err
}

// chainManifest anchors the invoice's documents and appends m to its number
// range's chain and returns the manifest's bytes. Documents of one range
// archived at the same time are chained together (chainGroup): one
// transaction, one advisory lock, one round trip for the lock with the
// chain's end and the manifests already recorded, one for the inserts.
func (s *Service) chainManifest(ctx context.Context, arc *archive.Archive, m archive.Manifest, issue time.Time, objs map[string]archive.Stored) ([]byte, error) {
	r := &chainRequest{m: m, issue: issue, objs: objs, bucket: arc.Bucket(), done: make(chan struct{})}
	return s.chains.chain(ctx, s.pool, r)
}

// chainRequest is one document waiting to be chained.
type chainRequest struct {
	m      archive.Manifest
	issue  time.Time
	objs   map[string]archive.Stored
	bucket string
	done   chan struct{} // closed when body or err is set
	body   []byte
	err    error
}

// chainGroup chains the documents of a number range that arrive while the
// range's transaction runs in the next one (group commit): one goroutine
// per range with documents waiting chains them batch by batch and ends when
// none waits; the callers wait for their document. The zero value is ready.
type chainGroup struct {
	mu     sync.Mutex
	ranges map[string][]*chainRequest // waiting documents of the ranges being chained
}

// chainBatch is the most documents one chain transaction takes.
const chainBatch = 64

// chainTimeout bounds one chain transaction.
const chainTimeout = 30 * time.Second

func (g *chainGroup) chain(ctx context.Context, pool *pgxpool.Pool, r *chainRequest) ([]byte, error) {
	key := r.m.ProjectID + "\x00" + r.m.NumberRange
	g.mu.Lock()
	if g.ranges == nil {
		g.ranges = map[string][]*chainRequest{}
	}
	pending, running := g.ranges[key]
	g.ranges[key] = append(pending, r)
	g.mu.Unlock()
	if !running {
		go g.run(pool, key)
	}
	select {
	case <-r.done:
		return r.body, r.err
	case <-ctx.Done():
		// It may still be chained: a retry finds its manifest recorded.
		return nil, ctx.Err()
	}
}

// run chains the range's waiting documents until none waits.
func (g *chainGroup) run(pool *pgxpool.Pool, key string) {
	for {
		g.mu.Lock()
		pending := g.ranges[key]
		if len(pending) == 0 {
			delete(g.ranges, key)
			g.mu.Unlock()
			return
		}
		batch := pending[:min(len(pending), chainBatch)]
		g.ranges[key] = pending[len(batch):]
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), chainTimeout)
		err := chainTx(ctx, pool, batch)
		cancel()
		for _, b := range batch {
			if err != nil {
				b.err = err
			}
			close(b.done)
		}
	}
}

// chainTx appends the manifests of batch (one project and number range) to
// their chain in one transaction and sets each request's body: the range's
// chain is serialised by an advisory lock, each manifest gets the next
// position and the SHA-256 of the manifest before it. A document chained
// already (by a concurrent attempt) keeps its recorded manifest and takes
// no position.
func chainTx(ctx context.Context, pool *pgxpool.Pool, batch []*chainRequest) error {
	first := batch[0].m
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.m.InvoiceID
	}
	return store.WithTx(ctx, pool, func(tx pgx.Tx) error {
		var prev string
		var last int64
		lock := &pgx.Batch{}
		lock.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('archive-chain:' || $1 || ':' || $2, 0))`, first.ProjectID, first.NumberRange)
		lock.Queue(`SELECT chain_seq, sha256 FROM archive_manifests WHERE project_id = $1 AND range_key = $2
			ORDER BY chain_seq DESC LIMIT 1`, first.ProjectID, first.NumberRange)
		lock.Queue(`SELECT invoice_id::text, body FROM archive_manifests WHERE invoice_id = ANY($1::uuid[])`, ids)
		br := tx.SendBatch(ctx, lock)
		_, err := br.Exec()
		if err == nil {
			if err = br.QueryRow().Scan(&last, &prev); errors.Is(err, pgx.ErrNoRows) {
				err = nil // the range's first manifest
			}
		}
		chained := map[string][]byte{}
		if err == nil {
			var id string
			var body []byte
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				_, err = pgx.ForEachRow(rows, []any{&id, &body}, func() error { chained[id] = body; return nil })
			}
		}
		if err := errors.Join(err, br.Close()); err != nil {
			return err
		}
		insert := &pgx.Batch{}
		for _, r := range batch {
			if body, ok := chained[r.m.InvoiceID]; ok { // a concurrent attempt chained it
				r.body = body
				continue
			}
			m := r.m
			m.ChainSeq, m.PreviousManifestSHA256 = last+1, prev
			b, sum, err := m.Encode()
			if err != nil {
				return err
			}
			var prevPtr *string
			if prev != "" {
				p := prev // prev moves on before the batch is sent
				prevPtr = &p
			}
			insert.Queue(`INSERT INTO archive_manifests (invoice_id, project_id, range_key, chain_seq, number, issue_date, year, type,
					test_mode, body, sha256, prev_sha256)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				m.InvoiceID, m.ProjectID, m.NumberRange, m.ChainSeq, m.Number, r.issue, r.issue.Year(), m.Type, m.TestMode, b, sum, prevPtr)
			for _, o := range m.Objects {
				queueArchiveObject(insert, m.ProjectID, m.InvoiceID, o.Kind, r.bucket, r.objs[o.Kind], o.EmbeddedIn)
			}
			chained[m.InvoiceID], r.body = b, b // the same invoice twice in one batch: chained once
			last, prev = m.ChainSeq, sum
		}
		if insert.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, insert).Close()
	})
}

// anchoredManifest returns the manifest recorded for the invoice by an
// earlier attempt, or nil.
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
	b := &pgx.Batch{}
	queueManifestRecord(b, projectID, invoiceID, bucket, st, now)
	return tx.SendBatch(ctx, b).Close()
}

// queueManifestRecord queues recordManifest's two statements.
func queueManifestRecord(b *pgx.Batch, projectID, invoiceID, bucket string, st archive.Stored, now time.Time) {
	queueArchiveObject(b, projectID, invoiceID, "manifest", bucket, st, "")
	b.Queue(`UPDATE archive_manifests SET stored_at = $2 WHERE invoice_id = $1 AND stored_at IS NULL`, invoiceID, now)
}

// queueArchiveObject queues the anchor of one archived object (kept if the
// invoice has one of that kind already); embeddedIn "pdf" for an XML that
// lies only inside the PDF.
func queueArchiveObject(b *pgx.Batch, projectID, invoiceID, kind, bucket string, st archive.Stored, embeddedIn string) {
	var until *time.Time
	if !st.RetainUntil.IsZero() {
		u := st.RetainUntil.UTC()
		until = &u
	}
	b.Queue(`INSERT INTO archive_objects (invoice_id, kind, project_id, bucket, object_key, version_id, sha256, size, retain_until, embedded_in)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (invoice_id, kind) DO NOTHING`,
		invoiceID, kind, projectID, bucket, st.Key, st.VersionID, st.SHA256, st.Size, until, orders.Nullable(embeddedIn))
}

// xmlEmbeddedOnly reports whether a document of format keeps its XML only
// inside its PDF/A-3 (ZUGFeRD, Factur-X): the PDF is the e-invoice. An
// XRechnung's XML is the invoice and is always an object of its own.
func xmlEmbeddedOnly(format string) bool { return format == string(billing.FormatZUGFeRD) }

// documentPDF renders the PDF of a document of format from its XML: a
// small-amount invoice without the XML embedded (render.SmallAmountPDF).
func documentPDF(format string, xml []byte) ([]byte, error) {
	if format == string(billing.FormatSmallAmount) {
		return render.SmallAmountPDF(xml)
	}
	return render.PDF(xml)
}
