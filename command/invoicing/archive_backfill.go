package invoicing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/render"
)

// BackfillResult counts what BackfillArchive did.
type BackfillResult struct {
	Anchored    int `json:"anchored"`    // invoices whose objects and manifest were recorded
	PDFRendered int `json:"pdfRendered"` // of them, invoices whose PDF was rendered and archived now
}

// BackfillArchive anchors invoices archived before the archive was anchored
// in the database (every archived invoice of the project without a
// manifest; projectID "" for all projects): it reads their archived XML and
// PDF where they lie (the live bucket), hashing the bytes read; renders and
// archives a PDF that was never rendered, from the archived XML and with the
// XML's retention; records the objects and appends a manifest to the number
// range's chain. This is the admin command that replaced rendering on the
// first GET: the read side never writes to the archive. progress is called
// after each invoice.
func (s *Service) BackfillArchive(ctx context.Context, a *archive.Archive, projectID string, progress func(done, total int)) (res BackfillResult, err error) {
	defer apperr.Wrap(&err, "backfill archive")
	rows, err := s.pool.Query(ctx, `SELECT i.project_id::text, i.id::text, i.number, i.range_key, i.type, i.issue_date, i.test_mode
		FROM invoices i
		WHERE i.status = 'archived' AND ($1 = '' OR i.project_id::text = $1)
		AND NOT EXISTS (SELECT 1 FROM archive_manifests m WHERE m.invoice_id = i.id AND m.stored_at IS NOT NULL)
		ORDER BY i.project_id, i.range_key, i.seq`, projectID)
	if err != nil {
		return res, err
	}
	type todo struct {
		m     archive.Manifest
		issue time.Time
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (todo, error) {
		var t todo
		err := r.Scan(&t.m.ProjectID, &t.m.InvoiceID, &t.m.Number, &t.m.NumberRange, &t.m.Type, &t.issue, &t.m.TestMode)
		t.m.IssueDate = t.issue.Format(time.DateOnly)
		return t, err
	})
	if err != nil {
		return res, err
	}
	for i, t := range list {
		rendered, err := s.backfillOne(ctx, a, t.m, t.issue)
		if err != nil {
			return res, fmt.Errorf("invoice %s: %w", t.m.Number, err)
		}
		res.Anchored++
		if rendered {
			res.PDFRendered++
		}
		if progress != nil {
			progress(i+1, len(list))
		}
	}
	return res, nil
}

func (s *Service) backfillOne(ctx context.Context, a *archive.Archive, m archive.Manifest, issue time.Time) (rendered bool, err error) {
	// Earlier versions put every document, test or live, in the live bucket.
	arc := a
	body, err := s.anchoredManifest(ctx, m.InvoiceID)
	if err != nil {
		return false, err
	}
	if body == nil {
		xmlKey, pdfKey := archive.InvoiceXMLKey(m.ProjectID, m.InvoiceID), archive.InvoicePDFKey(m.ProjectID, m.InvoiceID)
		xml, xmlSt, err := arc.Get(ctx, xmlKey)
		if err != nil {
			return false, err
		}
		var want []byte
		if err := s.pool.QueryRow(ctx, `SELECT xml FROM invoices WHERE id = $1`, m.InvoiceID).Scan(&want); err != nil {
			return false, err
		}
		if archive.SHA256(want) != xmlSt.SHA256 {
			return false, fmt.Errorf("%w: the archived XML is not the issued one", archive.ErrCorrupt)
		}
		_, pdfSt, err := arc.Get(ctx, pdfKey)
		if errors.Is(err, archive.ErrNotFound) {
			pdf, rerr := render.PDF(xml)
			if rerr != nil {
				return false, fmt.Errorf("render PDF: %w", rerr)
			}
			pdfSt, rendered, err = arc.PutFirst(ctx, pdfKey, pdf, "application/pdf", xmlSt.RetainUntil)
		}
		if err != nil {
			return false, err
		}
		m.Objects = []archive.ManifestObject{archive.Object("xml", xmlSt), archive.Object("pdf", pdfSt)}
		if body, err = s.chainArchived(ctx, arc, m, issue, map[string]archive.Stored{"xml": xmlSt, "pdf": pdfSt}); err != nil {
			return false, err
		}
	}
	parsed, err := archive.ParseManifest(body)
	if err != nil {
		return false, err
	}
	var until time.Time
	for _, o := range parsed.Objects {
		if o.Kind == "xml" && o.RetainUntil != nil {
			until, _ = time.Parse(time.RFC3339, *o.RetainUntil)
		}
	}
	mSt, err := arc.Put(ctx, archive.ManifestKey(m.ProjectID, m.InvoiceID), body, "application/json", until)
	if err != nil {
		return rendered, err
	}
	return rendered, store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		return recordManifest(ctx, tx, m.ProjectID, m.InvoiceID, arc.Bucket(), mSt, time.Now().UTC())
	})
}
