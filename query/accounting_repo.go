package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
)

// The exports' reads. Every one is a plain read of one page (keyset
// pagination, at most exportPage rows), outside any transaction: a read
// takes no transaction id, so it never holds back the outbox relay, whose
// gate waits only for transactions that have one (it reads up to the
// oldest running transaction id). The one write, the debtor accounts of
// new customers, is a short transaction of its own per page
// (assignDebtors).

// exportPage is how many rows one read of an export takes (a variable:
// tests read in tiny pages).
var exportPage = 500

// exportStatementTimeout bounds each statement of an export or report.
const exportStatementTimeout = time.Minute

// loadedDocuments is the set of documents a DATEV export of from..to ($2,
// $3) books: the live documents issued in the range and, with deferrals
// ($4), those issued earlier whose service period reaches into it. A
// document that broke rules (failed_rules, recorded so by earlier
// versions) is not issued.
const loadedDocuments = `project_id = $1 AND NOT test_mode AND failed_rules = '{}' AND issue_date <= $3
  AND (issue_date >= $2 OR ($4 AND jsonb_typeof(document->'Period') = 'object'
       AND (document->'Period'->>'End')::timestamptz >= $2::date))`

// collect runs one page's statement and collects its rows.
func collect[T any](ctx context.Context, s *Service, scan func(pgx.Rows) (T, error), sql string, args ...any) ([]T, error) {
	qctx, cancel := context.WithTimeout(ctx, exportStatementTimeout)
	defer cancel()
	rows, err := s.pool.Query(qctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// firstWithoutComputation returns the number of the first document of the
// set that has no stored computation ("" when every one has): it cannot be
// booked, and the export is refused before anything is written.
func (s *Service) firstWithoutComputation(ctx context.Context, projectID string, from, to time.Time, deferrals bool) (string, error) {
	qctx, cancel := context.WithTimeout(ctx, exportStatementTimeout)
	defer cancel()
	var number string
	err := s.pool.QueryRow(qctx, `SELECT number FROM invoices WHERE `+loadedDocuments+` AND document IS NULL
ORDER BY issue_date, range_key, seq LIMIT 1`, projectID, from, to, deferrals).Scan(&number)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return number, err
}

// countIssued counts the live documents issued from..to.
func (s *Service) countIssued(ctx context.Context, projectID string, from, to time.Time) (int, error) {
	qctx, cancel := context.WithTimeout(ctx, exportStatementTimeout)
	defer cancel()
	var n int
	err := s.pool.QueryRow(qctx, `SELECT count(*) FROM invoices WHERE project_id = $1 AND NOT test_mode AND failed_rules = '{}'
  AND issue_date BETWEEN $2 AND $3`, projectID, from, to).Scan(&n)
	return n, err
}

// decodeDocument reads a stored computation; a document without one
// cannot be booked: a conflict, never a silent gap.
func decodeDocument(number string, raw []byte) (billing.Invoice, error) {
	var inv billing.Invoice
	if raw == nil {
		return inv, apperr.New(apperr.Conflict, "export_failed",
			"document %s has no stored computation (issued before documents were kept); it cannot be booked", number)
	}
	if err := json.Unmarshal(raw, &inv); err != nil {
		return inv, fmt.Errorf("document %s: %w", number, err)
	}
	if inv.Test { // the row said live: trust neither silently
		return inv, fmt.Errorf("document %s: stored as live but computed as a test document", number)
	}
	return inv, nil
}

type storedDoc struct {
	issueDate time.Time
	number    string
	raw       []byte
}

func scanStoredDoc(r pgx.Rows) (storedDoc, error) {
	var d storedDoc
	err := r.Scan(&d.issueDate, &d.number, &d.raw)
	return d, err
}

// issuedPage reads the live documents issued from..to after (issue date,
// number) in that order, numbers compared bytewise as the bookings sort.
func (s *Service) issuedPage(ctx context.Context, projectID string, afterDate, to time.Time, afterNumber string) ([]storedDoc, error) {
	return collect(ctx, s, scanStoredDoc, `SELECT issue_date, number, document FROM invoices
WHERE project_id = $1 AND NOT test_mode AND failed_rules = '{}' AND issue_date >= $2 AND issue_date <= $3
  AND (issue_date > $2 OR number COLLATE "C" > $4)
ORDER BY issue_date, number COLLATE "C" LIMIT $5`, projectID, afterDate, to, afterNumber, exportPage)
}

// releasePage reads the documents of the export's set issued before month
// (the first of a month) that may release deferred revenue on it (a
// service period of the document or of a line ending on or after it),
// after number, by number compared bytewise.
func (s *Service) releasePage(ctx context.Context, projectID string, from, to, month time.Time, afterNumber string) ([]storedDoc, error) {
	return collect(ctx, s, scanStoredDoc, `SELECT issue_date, number, document FROM invoices
WHERE `+loadedDocuments+` AND issue_date < $5 AND number COLLATE "C" > $6
  AND (CASE WHEN jsonb_typeof(document->'Period') = 'object' THEN left(document->'Period'->>'End', 10) >= $7
       ELSE jsonb_typeof(document->'Lines') = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(document->'Lines') l
            WHERE jsonb_typeof(l->'Period') = 'object' AND left(l->'Period'->>'End', 10) >= $7) END)
ORDER BY number COLLATE "C" LIMIT $8`, projectID, from, to, true, month, afterNumber, month.Format(time.DateOnly), exportPage)
}

// buyerRow is a document's position in the order its customer is first
// booked, and its buyer.
type buyerRow struct {
	issueDate time.Time
	rangeKey  string
	seq       int64
	buyer     []byte
}

// buyerPage reads the buyers of the export's documents in the order they
// are booked for the first time (issue date, number range, sequence), after
// the position given (none on the first page).
func (s *Service) buyerPage(ctx context.Context, projectID string, from, to time.Time, after *buyerRow) ([]buyerRow, error) {
	first := after == nil
	if first {
		after = &buyerRow{}
	}
	return collect(ctx, s, func(r pgx.Rows) (buyerRow, error) {
		var b buyerRow
		err := r.Scan(&b.issueDate, &b.rangeKey, &b.seq, &b.buyer)
		return b, err
	}, `SELECT issue_date, range_key, seq, document->'Buyer' FROM invoices
WHERE `+loadedDocuments+` AND ($5 OR (issue_date >= $6 AND (issue_date, range_key, seq) > ($6, $7, $8)))
ORDER BY issue_date, range_key, seq LIMIT $9`, projectID, from, to, true, first, after.issueDate, after.rangeKey, after.seq, exportPage)
}

// moneyRow is a provider payment or refund with the first live document of
// its order: its number and buyer.
type moneyRow struct {
	orderNo   string
	at        time.Time
	cents     int64
	number    *string
	buyer     []byte
	paymentID string // refunds: the refund report
}

func scanMoney(r pgx.Rows) (moneyRow, error) {
	var m moneyRow
	err := r.Scan(&m.orderNo, &m.at, &m.cents, &m.number, &m.buyer, &m.paymentID)
	return m, err
}

// firstLiveDocument is the number and buyer of an order's first live document.
const firstLiveDocument = `LEFT JOIN LATERAL (SELECT i.number, i.document->'Buyer' AS buyer FROM invoices i WHERE i.order_id = o.id AND NOT i.test_mode
                   ORDER BY i.range_key, i.seq LIMIT 1) doc ON true`

// Provider payments of orders received from..to (UTC days), and the money
// paid back from..to (by the refund report's arrival). An order taken in
// test mode (its mode is fixed when it is received), or one with a test
// document, is test data and not read.
const (
	paymentsFrom = `FROM orders o ` + firstLiveDocument + `
WHERE o.project_id = $1 AND o.paid_cents IS NOT NULL
  AND o.paid_at >= $2 AND o.paid_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
  AND NOT o.test_mode AND NOT EXISTS (SELECT 1 FROM invoices t WHERE t.order_id = o.id AND t.test_mode)`
	refundsFrom = `FROM provider_refunds r
JOIN payments pay ON pay.id = r.payment_id
JOIN orders o ON o.id = r.order_id ` + firstLiveDocument + `
WHERE r.project_id = $1
  AND pay.received_at >= $2 AND pay.received_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
  AND NOT o.test_mode AND NOT EXISTS (SELECT 1 FROM invoices t WHERE t.order_id = o.id AND t.test_mode)`
)

// moneyPage reads payments (refunds: refunds) after the position given
// (none on the first page). byDocument orders them as the bookings sort
// (time, then the document number bytewise, then the order); otherwise they
// come in the order their customers are first booked (time, order).
func (s *Service) moneyPage(ctx context.Context, projectID string, from, to time.Time, refunds, byDocument bool, after *moneyRow) ([]moneyRow, error) {
	at, cents, source, id := `o.paid_at`, `o.paid_cents`, paymentsFrom, `o.id::text`
	if refunds {
		at, cents, source, id = `pay.received_at`, `r.amount_cents`, refundsFrom, `r.payment_id::text`
	}
	order := at + `, o.order_no, ` + id
	if byDocument {
		order = at + `, coalesce(doc.number, '') COLLATE "C", o.order_no, ` + id
	}
	args := []any{projectID, day(from), to, exportPage}
	key := ""
	if after != nil {
		args = append(args, after.at.UTC(), after.orderNo, after.paymentID)
		key = ` AND ` + at + ` >= $5 AND (` + at + `, o.order_no, ` + id + `) > ($5, $6, $7)`
		if byDocument {
			ref := ""
			if after.number != nil {
				ref = *after.number
			}
			args = append(args, ref)
			key = ` AND ` + at + ` >= $5 AND (` + at + `, coalesce(doc.number, '') COLLATE "C", o.order_no, ` + id + `) > ($5, $8::text COLLATE "C", $6, $7)`
		}
	}
	return collect(ctx, s, scanMoney, `SELECT o.order_no, `+at+`, `+cents+`, doc.number, doc.buyer, `+id+` `+source+key+`
ORDER BY `+order+` LIMIT $4`, args...)
}

// debtorAccounts returns the debtor accounts of the customers keys,
// giving those without one the next free accounts after collective, in the
// order of keys (assignDebtors).
func (s *Service) debtorAccounts(ctx context.Context, projectID string, collective string, keys []string) (map[string]string, error) {
	known, err := s.lookupDebtors(ctx, projectID, keys)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return known, nil
	}
	if err := s.assignDebtors(ctx, projectID, collective, missing); err != nil {
		return nil, err
	}
	given, err := s.lookupDebtors(ctx, projectID, missing)
	if err != nil {
		return nil, err
	}
	for k, a := range given {
		known[k] = a
	}
	for _, k := range missing {
		if _, ok := known[k]; !ok {
			return nil, fmt.Errorf("debtor of %s: not assigned", k)
		}
	}
	return known, nil
}

func (s *Service) lookupDebtors(ctx context.Context, projectID string, keys []string) (map[string]string, error) {
	type debtor struct{ key, account string }
	rows, err := collect(ctx, s, func(r pgx.Rows) (debtor, error) {
		var d debtor
		err := r.Scan(&d.key, &d.account)
		return d, err
	}, `SELECT customer_key, account::text FROM accounting_debtors WHERE project_id = $1 AND customer_key = ANY($2::text[])`, projectID, keys)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, d := range rows {
		out[d.key] = d.account
	}
	return out, nil
}

// assignDebtors gives each of keys that has no debtor account yet the next
// free account after collective, in the order of keys, in one short
// transaction of one statement: numbers are unique per project (the
// transaction serialises on the project's advisory lock, and the table's
// unique account), stable (a customer's account is never changed), and the
// statement is idempotent (a customer given an account meanwhile keeps it).
func (s *Service) assignDebtors(ctx context.Context, projectID, collective string, keys []string) error {
	actx, cancel := context.WithTimeout(ctx, exportStatementTimeout)
	defer cancel()
	tx, err := s.pool.Begin(actx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(actx)) //nolint:errcheck // after Commit a no-op
	if _, err := tx.Exec(actx, `SELECT pg_advisory_xact_lock(hashtext('o2i.accounting_debtors:' || $1))`, projectID); err != nil {
		return err
	}
	if _, err := tx.Exec(actx, `INSERT INTO accounting_debtors (project_id, customer_key, account)
SELECT $1, k.key, b.base + row_number() OVER (ORDER BY k.ord)
FROM (SELECT key, min(ord) AS ord FROM unnest($2::text[]) WITH ORDINALITY AS u(key, ord) GROUP BY key) k,
     (SELECT GREATEST(COALESCE(max(account), 0), $3::integer) AS base FROM accounting_debtors WHERE project_id = $1) b
WHERE NOT EXISTS (SELECT 1 FROM accounting_debtors d WHERE d.project_id = $1 AND d.customer_key = k.key)
ORDER BY k.ord
ON CONFLICT (project_id, customer_key) DO NOTHING`, projectID, keys, collective); err != nil {
		return fmt.Errorf("debtor accounts: %w", err)
	}
	return tx.Commit(actx)
}

// reportPage reads the stored computations of the live documents issued
// from..to that a report counts (flag: the oss_report or ec_sales_list
// column, as stored from the computation), after (issue date, number).
func (s *Service) reportPage(ctx context.Context, projectID string, flag string, afterDate, to time.Time, afterNumber string) ([]storedDoc, error) {
	return collect(ctx, s, scanStoredDoc, `SELECT issue_date, number, document FROM invoices
WHERE project_id = $1 AND NOT test_mode AND failed_rules = '{}' AND `+flag+` AND issue_date >= $2 AND issue_date <= $3
  AND (issue_date > $2 OR number > $4)
ORDER BY issue_date, number LIMIT $5`, projectID, afterDate, to, afterNumber, exportPage)
}

// debtorKeyOf is the customer key of a stored buyer; "" without one.
func debtorKeyOf(buyer []byte) string {
	if buyer == nil {
		return ""
	}
	var inv billing.Invoice
	if err := json.Unmarshal(buyer, &inv.Buyer); err != nil {
		return ""
	}
	return accounting.DebtorKey(inv)
}

func day(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
