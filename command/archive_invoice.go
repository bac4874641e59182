package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/render"
)

// ArchiveInvoice renders a validated invoice's PDF from its XML (PDF/A-3
// with the XML embedded), stores both write-once, anchors them in
// PostgreSQL (SHA-256, size, version id, retain-until), writes the invoice's
// manifest as the next link of its number range's hash chain, then marks it
// archived, publishes invoice.archived and records its e-mail delivery to
// the order's address (deliver_mail.go). Live documents get COMPLIANCE
// retention to the end of the eighth year after the year of issue; test
// documents go to the test archive without retention (a reset removes
// them). A failed document is never archived. Calling it again is harmless:
// a retry after a failure finds what was anchored and goes on from there.
func (s *Service) ArchiveInvoice(ctx context.Context, a *archive.Archive, projectID, invoiceID string) (err error) {
	defer apperr.Wrap(&err, "archive invoice %s", invoiceID)
	var inv event.Invoice
	var xml []byte
	var issue time.Time
	var paymentRef *string
	var rangeKey string
	err = s.pool.QueryRow(ctx, `SELECT id::text, project_id::text, order_id::text, order_no, payment_ref, number, status, version, type,
			format, issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, test_mode, created_at, xml, range_key
		FROM invoices WHERE project_id = $1 AND id = $2`, projectID, invoiceID).
		Scan(&inv.ID, &inv.ProjectID, &inv.OrderID, &inv.OrderNo, &paymentRef, &inv.Number, &inv.Status, &inv.Version, &inv.Type,
			&inv.Format, &issue, &inv.Currency, &inv.TotalNetCents, &inv.TotalTaxCents, &inv.TotalGrossCents, &inv.TestMode,
			&inv.CreatedAt, &xml, &rangeKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.New(apperr.NotFound, "invoice_not_found", "no invoice %s", invoiceID)
	}
	if err != nil {
		return err
	}
	if inv.Status != "created" {
		return nil // archived already, or failed (never archived)
	}
	arc := a.For(inv.TestMode)
	body, err := s.anchoredManifest(ctx, invoiceID)
	if err != nil {
		return err
	}
	if body == nil {
		until := archive.RetainUntil(issue, archive.RetentionYears)
		pdf, err := render.PDF(xml)
		if err != nil {
			return fmt.Errorf("render PDF: %w", err)
		}
		// A retry after a failure between the two puts renders the PDF again,
		// with other bytes: the one archived first stands.
		var pdfSt, xmlSt archive.Stored
		err = bounded(ctx, func(ctx context.Context) (err error) {
			pdfSt, _, err = arc.PutFirst(ctx, archive.InvoicePDFKey(projectID, invoiceID), pdf, "application/pdf", until)
			return err
		})
		if err != nil {
			return err
		}
		err = bounded(ctx, func(ctx context.Context) (err error) {
			xmlSt, err = arc.Put(ctx, archive.InvoiceXMLKey(projectID, invoiceID), xml, "application/xml", until)
			return err
		})
		if err != nil {
			return err
		}
		m := archive.Manifest{ProjectID: projectID, NumberRange: rangeKey, InvoiceID: invoiceID, Number: inv.Number,
			IssueDate: issue.Format(time.DateOnly), Type: inv.Type, TestMode: inv.TestMode,
			Objects: []archive.ManifestObject{archive.Object("xml", xmlSt), archive.Object("pdf", pdfSt)}}
		if body, err = s.chainManifest(ctx, arc, m, issue, map[string]archive.Stored{"xml": xmlSt, "pdf": pdfSt}); err != nil {
			return err
		}
	}
	// The manifest's bytes are fixed in the database before the object is
	// written, so a retry writes the same bytes (which counts as success).
	var mSt archive.Stored
	err = bounded(ctx, func(ctx context.Context) (err error) {
		mSt, err = arc.Put(ctx, archive.ManifestKey(projectID, invoiceID), body, "application/json", archive.RetainUntil(issue, archive.RetentionYears))
		return err
	})
	if err != nil {
		return err
	}
	if paymentRef != nil {
		inv.PaymentRef = *paymentRef
	}
	inv.IssueDate = issue.Format(time.DateOnly)
	now := time.Now().UTC()
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := recordManifest(ctx, tx, projectID, invoiceID, arc.Bucket(), mSt, now); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE invoices SET status = 'archived', archived_at = $3, version = version + 1
			WHERE project_id = $1 AND id = $2 AND status = 'created' RETURNING version`, projectID, invoiceID, now).Scan(&inv.Version)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // archived meanwhile
		}
		if err != nil {
			return err
		}
		inv.Status, inv.ArchivedAt = "archived", &now
		// The document goes to the order's e-mail (blocked in test mode).
		if err := enqueueDocumentMailTx(ctx, tx, projectID, inv.ID, inv.OrderID, inv.OrderNo, inv.TestMode); err != nil {
			return err
		}
		ev, err := event.New(event.InvoiceArchived, projectID, "invoice", inv.ID, inv.OrderNo, inv.Version, now, inv)
		if err != nil {
			return fmt.Errorf("event: %w", err)
		}
		return outbox.Enqueue(ctx, tx, ev)
	})
}

// archiveCallTimeout bounds one call to the object store; a call that runs
// out fails the attempt, which the invoicer retries.
const archiveCallTimeout = 30 * time.Second

func bounded(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, archiveCallTimeout)
	defer cancel()
	return f(ctx)
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

// chainManifest anchors the invoice's documents and appends m to its number
// range's chain, in one transaction: the range's chain is serialised by an
// advisory lock, m gets the next position and the SHA-256 of the manifest
// before it. It returns the manifest's bytes.
func (s *Service) chainManifest(ctx context.Context, arc *archive.Archive, m archive.Manifest, issue time.Time, objs map[string]archive.Stored) ([]byte, error) {
	var body []byte
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('archive-chain:' || $1 || ':' || $2, 0))`,
			m.ProjectID, m.NumberRange); err != nil {
			return err
		}
		var prev string
		var last int64
		err := tx.QueryRow(ctx, `SELECT chain_seq, sha256 FROM archive_manifests WHERE project_id = $1 AND range_key = $2
			ORDER BY chain_seq DESC LIMIT 1`, m.ProjectID, m.NumberRange).Scan(&last, &prev)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		m.ChainSeq, m.PreviousManifestSHA256 = last+1, prev
		b, sum, err := m.Encode()
		if err != nil {
			return err
		}
		var prevPtr *string
		if prev != "" {
			prevPtr = &prev
		}
		tag, err := tx.Exec(ctx, `INSERT INTO archive_manifests (invoice_id, project_id, range_key, chain_seq, number, issue_date, year, type,
				test_mode, body, sha256, prev_sha256)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (invoice_id) DO NOTHING`,
			m.InvoiceID, m.ProjectID, m.NumberRange, m.ChainSeq, m.Number, issue, issue.Year(), m.Type, m.TestMode, b, sum, prevPtr)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 { // a concurrent attempt chained it
			return tx.QueryRow(ctx, `SELECT body FROM archive_manifests WHERE invoice_id = $1`, m.InvoiceID).Scan(&body)
		}
		for _, kind := range []string{"xml", "pdf"} {
			if err := insertArchiveObject(ctx, tx, m.ProjectID, m.InvoiceID, kind, arc.Bucket(), objs[kind]); err != nil {
				return err
			}
		}
		body = b
		return nil
	})
	return body, err
}

// recordManifest anchors the written manifest object and marks the
// manifest stored.
func recordManifest(ctx context.Context, tx pgx.Tx, projectID, invoiceID, bucket string, st archive.Stored, now time.Time) error {
	if err := insertArchiveObject(ctx, tx, projectID, invoiceID, "manifest", bucket, st); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE archive_manifests SET stored_at = $2 WHERE invoice_id = $1 AND stored_at IS NULL`, invoiceID, now)
	return err
}

func insertArchiveObject(ctx context.Context, tx pgx.Tx, projectID, invoiceID, kind, bucket string, st archive.Stored) error {
	var until *time.Time
	if !st.RetainUntil.IsZero() {
		u := st.RetainUntil.UTC()
		until = &u
	}
	_, err := tx.Exec(ctx, `INSERT INTO archive_objects (invoice_id, kind, project_id, bucket, object_key, version_id, sha256, size, retain_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (invoice_id, kind) DO NOTHING`,
		invoiceID, kind, projectID, bucket, st.Key, st.VersionID, st.SHA256, st.Size, until)
	return err
}
