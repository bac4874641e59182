package invoicing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/store"
)

// MarkArchived is the archived mark of the invoice read as inv, its
// manifest object stored as st.
func (s *Service) MarkArchived(ctx context.Context, a *archive.Archive, inv event.Invoice, st archive.Stored, now time.Time) (bool, error) {
	return s.markArchived(ctx, a, inv, st, now)
}

// ArchivableInvoice is the invoice as the archiving reads it (every field
// of its events), or an error when it is archived already or broke rules.
func (s *Service) ArchivableInvoice(ctx context.Context, projectID, id string) (event.Invoice, error) {
	d, err := s.readArchivable(ctx, projectID, id)
	if err != nil {
		return event.Invoice{}, err
	}
	if d == nil {
		return event.Invoice{}, fmt.Errorf("invoice %s is not to be archived", id)
	}
	return d.inv, nil
}

// Process exposes the invoicer's handling of one order event: its try,
// then the retry table (with the task when the failure escalates) and the
// failed documents.
func (iv *Invoicer) Process(ctx context.Context, raw []byte) error {
	return iv.process(ctx, raw)
}

// UseGroup makes the invoicer consume topic as group; the items of the
// retry table it records are its own (no other invoicer retries them).
func (iv *Invoicer) UseGroup(topic, group string) {
	iv.topic, iv.group = topic, group
}

// ScopeRepair limits the archive repair to one project and limit documents
// a round.
func (iv *Invoicer) ScopeRepair(projectID string, limit int) {
	iv.repairScope, iv.repairLimit = projectID, limit
}

// ClaimRetries claims up to n due items of the invoicer's retry table, as
// its retry workers do, and returns their ids.
func (iv *Invoicer) ClaimRetries(ctx context.Context, n int, lease time.Duration) ([]string, error) {
	due, err := iv.svc.claimRetries(ctx, iv.group, n, lease)
	ids := make([]string, len(due))
	for i, d := range due {
		ids[i] = d.id
	}
	return ids, err
}

// PendingChain is how many documents of the range wait for its next chain
// transaction (one is running).
func (s *Service) PendingChain(projectID, rangeKey string) int {
	s.chains.mu.Lock()
	defer s.chains.mu.Unlock()
	return len(s.chains.ranges[projectID+"\x00"+rangeKey])
}

// MailedPDF is the PDF the mailer attaches to the document's e-mail, read
// from a, with the document as a claim of a delivery of it reads it.
func (s *Service) MailedPDF(ctx context.Context, a *archive.Archive, projectID, invoiceID string) ([]byte, error) {
	var d dueDelivery
	row := s.pool.QueryRow(ctx, `SELECT `+claimedColumns+` FROM (SELECT gen_random_uuid() AS id, $1::uuid AS project_id, 'document'::text AS kind,
			''::text AS order_no, ''::text AS recipient, $2::uuid AS invoice_id, NULL::uuid AS task_id, NULL::text AS reply_to, 0 AS attempts,
			''::text AS message_id) c `+claimedJoins, projectID, invoiceID)
	if err := scanClaimed(row, &d); err != nil {
		return nil, err
	}
	if d.doc == nil {
		return nil, fmt.Errorf("invoice %s: no document read with the claim", invoiceID)
	}
	return NewMailer(s, a, nil).archivedPDF(ctx, projectID, invoiceID, d.doc)
}

// RetryDocumentBatch is what a retry of the document takes as its PDF's
// anchor from the document batch recorded for it (storeDocumentBatch).
func (s *Service) RetryDocumentBatch(ctx context.Context, a *archive.Archive, projectID, invoiceID string) (archive.Stored, error) {
	d, err := s.readArchivable(ctx, projectID, invoiceID)
	if err != nil {
		return archive.Stored{}, err
	}
	if d == nil {
		// Archived: read as a retry would have before the mark.
		var p documentPart
		if err := s.pool.QueryRow(ctx, `SELECT batch_key, byte_offset, size, sha256 FROM archive_document_batches WHERE invoice_id = $1`,
			invoiceID).Scan(&p.batchKey, &p.offset, &p.size, &p.sha256); err != nil {
			return archive.Stored{}, err
		}
		d = &archivable{pdfPart: &p}
	}
	return s.storeDocumentBatch(ctx, a, projectID, *d.pdfPart, time.Time{})
}

// SaveOrderAt saves the order's state as invoicing does, in a transaction
// whose COMMIT goes out with the save, taking version as the order's
// version read under its lock (a stale one when it is not).
func (s *Service) SaveOrderAt(ctx context.Context, projectID, orderID string, version int64) error {
	var o orders.Locked
	first := store.TxBatch()
	orders.QueueLock(first, projectID, "id", orderID, &o)
	return store.WithTxBatch(ctx, s.pool, first, func(tx pgx.Tx) (*pgx.Batch, error) {
		var content event.OrderContent
		if err := json.Unmarshal(o.Content, &content); err != nil {
			return nil, err
		}
		o.Version = version
		var b pgx.Batch
		return &b, queueSaveOrder(ctx, &b, projectID, &o, content, o.Status, time.Now(), nil)
	})
}

// IssueGroupFallbacks is how many issuing transactions of several orders
// failed, each of their orders then issued alone.
func (s *Service) IssueGroupFallbacks() float64 { return testutil.ToFloat64(s.issues.fallbacks) }

// IssuesWaiting is how many of the project's issue calls wait for a group.
func (s *Service) IssuesWaiting(projectID string) int { return s.issues.waiting(projectID) }

// KeepIssueGroupsTogether gives the projects' issue groups made from now on
// no second runner beside a stalled one, so that the calls queued behind a
// transaction that waits all go in the next group.
func (s *Service) KeepIssueGroupsTogether() {
	s.issues.mu.Lock()
	defer s.issues.mu.Unlock()
	s.issues.stall = time.Hour
}
