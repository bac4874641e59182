package invoicing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
)

// The archive repair (a step of the reconciler): documents issued more
// than a minute ago and not archived yet (the invoicer stopped between
// issuing and archiving), and failed documents, are archived here when
// their order has no open item in the retry table (whose retry archives
// them), or when they are the first of their number range not archived:
// every document after it waits for it to be chained, and after an outage
// its retry may be due behind thousands of those, each waiting for it in
// vain (a document's objects once stored, the chain takes all that follow
// in one go). Each document keeps its own
// schedule in archive_repairs: one that could not be archived waits 15 s,
// doubling, at most 15 minutes (repairDelay; longer while the object
// store's breaker of its project is open), and the repair takes the
// documents by when they are due, not by age, so documents that can never
// be archived never hide the ones behind them. A document is claimed before
// it is worked on (its row's next attempt moved a lease ahead), so two
// invoicers never repair it at once; its row is removed once it is archived.

const (
	repairPage    = 100 // documents one round claims
	repairWorkers = 4   // documents archived at once
	repairLease   = 2 * time.Minute
	firstRepair   = 15 * time.Second
	maxRepair     = 15 * time.Minute
)

// repairDelay is the wait after the n-th failed repair of a document: 15 s,
// doubling, at most 15 minutes.
func repairDelay(n int) time.Duration {
	return min(firstRepair<<min(max(n-1, 0), 6), maxRepair)
}

// stuckDoc is a document the repair claimed.
type stuckDoc struct {
	projectID, id string
	attempts      int
}

// ArchiveStuck claims the due documents to repair (at most a page, by due
// time) and archives them, repairWorkers at once; each one that fails is
// due again after its own backoff.
func (iv *Invoicer) ArchiveStuck(ctx context.Context) error {
	docs, err := iv.svc.claimStuck(ctx, iv.repairScope, iv.repairPage(), repairLease)
	if err != nil {
		return err
	}
	workers := make(chan struct{}, repairWorkers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, d := range docs {
		workers <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-workers }()
			cause := iv.svc.ArchiveInvoice(ctx, iv.archive, d.projectID, d.id)
			if cause != nil {
				slog.Warn("invoicer: archive repair failed", "invoiceId", d.id, "attempts", d.attempts+1, "err", cause)
			} else {
				iv.svc.archiveFollowing(ctx, iv.archive, d)
			}
			if err := iv.svc.repaired(ctx, d, cause); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// followLimit bounds the documents archiveFollowing archives after one
// repaired document.
const followLimit = 500

// archiveFollowing archives, one after another in number order, the
// documents of d's number range that come after it and are not archived
// yet, as long as each one succeeds (at most followLimit). After an outage
// of the object store the documents of a range wait for the first of them
// (each archived by its own retry only once the ones before it are), and
// their retries were scheduled later while they waited: following the
// range, the repair archives them at the rate of one invoicer instead of
// one per round. Another invoicer archiving one of them meanwhile is fine:
// archiving a document twice ends with the first.
func (s *Service) archiveFollowing(ctx context.Context, a *archive.Archive, d stuckDoc) {
	id := d.id
	for range followLimit {
		next, err := s.nextUnarchived(ctx, d.projectID, id)
		if err != nil || next == "" {
			return
		}
		if err := s.ArchiveInvoice(ctx, a, d.projectID, next); err != nil {
			return // its own retry or repair takes it
		}
		id = next
	}
}

// nextUnarchived returns the document after id in its number range that
// the repair would take ("" when there is none): one issued in the last
// minute is still its invoicer's to archive.
func (s *Service) nextUnarchived(ctx context.Context, projectID, id string) (string, error) {
	var next string
	err := s.pool.QueryRow(ctx, `SELECT n.id::text FROM invoices i
			JOIN archive_pending p ON p.project_id = i.project_id AND p.range_key = i.range_key AND p.seq > i.seq
			JOIN invoices n ON n.id = p.invoice_id
		WHERE i.project_id = $1 AND i.id = $2 AND `+stuckSQL("n")+`
		ORDER BY p.seq LIMIT 1`, projectID, id).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return next, err
}

// stuckSQL is the condition on the invoices row named alias of a document
// to repair: awaiting its archive, and failed or issued more than a minute
// ago.
func stuckSQL(alias string) string {
	return awaitsArchiveSQL(alias) + " AND (" + alias + ".status = 'failed' OR " + alias + ".created_at < now() - interval '1 minute')"
}

func (iv *Invoicer) repairPage() int {
	if iv.repairLimit > 0 {
		return iv.repairLimit
	}
	return repairPage
}

// claimStuck claims up to limit documents to repair whose repair is due,
// the earliest due first (a document never tried is due a minute after it
// was issued), moving their next attempt lease ahead. scope, when set,
// limits it to one project.
func (s *Service) claimStuck(ctx context.Context, scope string, limit int, lease time.Duration) ([]stuckDoc, error) {
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT i.id, i.project_id, coalesce(r.next_attempt_at, i.created_at + interval '1 minute') AS due_at
			FROM archive_pending a JOIN invoices i ON i.id = a.invoice_id LEFT JOIN archive_repairs r ON r.invoice_id = i.id
			WHERE `+stuckSQL("i")+`
				AND (NOT EXISTS (SELECT 1 FROM invoicing_dead_letters d WHERE d.order_id = i.order_id AND d.resolved_at IS NULL)
					OR NOT EXISTS (SELECT 1 FROM archive_pending b JOIN invoices p ON p.id = b.invoice_id
						WHERE b.project_id = a.project_id AND b.range_key = a.range_key AND b.seq < a.seq AND `+awaitsArchiveSQL("p")+`))
				AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= now())
				AND ($1 = '' OR i.project_id = nullif($1, '')::uuid)
			ORDER BY due_at LIMIT $2)
		INSERT INTO archive_repairs (invoice_id, project_id, next_attempt_at)
		SELECT id, project_id, now() + $3::bigint * interval '1 millisecond' FROM due
		ON CONFLICT (invoice_id) DO UPDATE SET next_attempt_at = EXCLUDED.next_attempt_at, updated_at = now()
			WHERE archive_repairs.next_attempt_at <= now()
		RETURNING project_id::text, invoice_id::text, attempts`, scope, limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (stuckDoc, error) {
		var d stuckDoc
		err := r.Scan(&d.projectID, &d.id, &d.attempts)
		return d, err
	})
}

// repaired records the outcome of a repair: archived (cause nil), the
// document's row goes; failed, it waits its next backoff.
func (s *Service) repaired(ctx context.Context, d stuckDoc, cause error) error {
	if cause == nil {
		_, err := s.pool.Exec(ctx, `DELETE FROM archive_repairs WHERE invoice_id = $1`, d.id)
		return err
	}
	delay := max(repairDelay(d.attempts+1), nextRetry(0, cause, time.Now()))
	_, err := s.pool.Exec(ctx, `UPDATE archive_repairs SET attempts = attempts + 1, last_error = $2, updated_at = now(),
			next_attempt_at = now() + $3::bigint * interval '1 millisecond'
		WHERE invoice_id = $1`, d.id, cause.Error(), delay.Milliseconds())
	return err
}
