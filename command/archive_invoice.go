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

// TestRetention is how long test documents are kept: they have no tax
// effect and can be discarded, so the legal retention does not apply.
const TestRetention = 30 * 24 * time.Hour

// ArchiveInvoice renders a validated invoice's PDF from its XML (PDF/A-3
// with the XML embedded), stores both write-once (COMPLIANCE retention to
// the end of the eighth year after the year of issue; test documents 30
// days), then marks it archived, publishes invoice.archived and records
// its e-mail delivery to the order's address (deliver_mail.go). A failed
// document is never archived. Calling it again is harmless.
func (s *Service) ArchiveInvoice(ctx context.Context, a *archive.Archive, projectID, invoiceID string) (err error) {
	defer apperr.Wrap(&err, "archive invoice %s", invoiceID)
	var inv event.Invoice
	var xml []byte
	var issue time.Time
	var paymentRef *string
	err = s.pool.QueryRow(ctx, `SELECT id::text, project_id::text, order_id::text, order_no, payment_ref, number, status, version, type,
			format, issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, test_mode, created_at, xml
		FROM invoices WHERE project_id = $1 AND id = $2`, projectID, invoiceID).
		Scan(&inv.ID, &inv.ProjectID, &inv.OrderID, &inv.OrderNo, &paymentRef, &inv.Number, &inv.Status, &inv.Version, &inv.Type,
			&inv.Format, &issue, &inv.Currency, &inv.TotalNetCents, &inv.TotalTaxCents, &inv.TotalGrossCents, &inv.TestMode,
			&inv.CreatedAt, &xml)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.New(apperr.NotFound, "invoice_not_found", "no invoice %s", invoiceID)
	}
	if err != nil {
		return err
	}
	if inv.Status != "created" {
		return nil // archived already, or failed (never archived)
	}
	until := archive.RetainUntil(issue, archive.RetentionYears)
	if inv.TestMode {
		until = time.Now().Add(TestRetention)
	}
	pdf, err := render.PDF(xml)
	if err != nil {
		return fmt.Errorf("render PDF: %w", err)
	}
	// A retry after a failure between the two puts renders the PDF again,
	// with other bytes: the one archived first stands.
	if _, _, err := a.PutFirst(ctx, archive.InvoicePDFKey(projectID, invoiceID), pdf, "application/pdf", until); err != nil {
		return err
	}
	if _, err := a.Put(ctx, archive.InvoiceXMLKey(projectID, invoiceID), xml, "application/xml", until); err != nil {
		return err
	}
	if paymentRef != nil {
		inv.PaymentRef = *paymentRef
	}
	inv.IssueDate = issue.Format(time.DateOnly)
	now := time.Now().UTC()
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
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
