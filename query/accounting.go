package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// ExportTimeout bounds one export or report: every database statement of it
// runs within this time.
const ExportTimeout = 60 * time.Second

// Progress is told how many of the loaded documents have been booked; nil
// means nobody watches.
type Progress func(done, total int)

// DATEVExportInput is the query of GET /v1/exports/datev.
type DATEVExportInput struct {
	From string `query:"from" required:"true" format:"date" description:"first booking date, YYYY-MM-DD"`
	To   string `query:"to" required:"true" format:"date" description:"last booking date, YYYY-MM-DD; in the same financial (calendar) year as from"`
}

// OSSReportInput is the query of GET /v1/reports/oss.
type OSSReportInput struct {
	Quarter string `query:"quarter" required:"true" pattern:"^[0-9]{4}-Q[1-4]$" description:"YYYY-Qn, for example 2026-Q1"`
}

// ECSLReportInput is the query of GET /v1/reports/ecsl.
type ECSLReportInput struct {
	Period string `query:"period" required:"true" pattern:"^[0-9]{4}-(0[1-9]|1[0-2]|Q[1-4])$" description:"YYYY-MM (monthly) or YYYY-Qn (quarterly)"`
}

func parseDay(field, v string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, apperr.Field(field, "%s must be a date YYYY-MM-DD, got %q", field, v)
	}
	return t, nil
}

// ParseExportRange reads from and to of a DATEV export: dates, from not
// after to, both in one calendar year. Errors are validation errors naming
// the field.
func ParseExportRange(from, to string) (time.Time, time.Time, error) {
	f, err := parseDay("from", from)
	if err != nil {
		return f, f, err
	}
	t, err := parseDay("to", to)
	if err != nil {
		return f, t, err
	}
	if field, err := accounting.CheckRange(f, t); err != nil {
		return f, t, apperr.Field(field, "%s", err.Error())
	}
	return f, t, nil
}

// accountingSettings reads the project's accounting settings, with its
// accounting history: each document is booked by the method of its fiscal
// year.
func accountingSettings(p project.Project) (accounting.Settings, error) {
	chart, err := accounting.ParseChart(p.Settings.ChartOfAccounts)
	if err != nil {
		return accounting.Settings{}, err
	}
	debtors, err := accounting.ParseDebtors(p.Settings.Debtors)
	if err != nil {
		return accounting.Settings{}, err
	}
	accts, err := accounting.Standard(chart).With(p.Settings.AccountOverrides)
	if err != nil {
		return accounting.Settings{}, err
	}
	return accounting.Settings{Chart: chart, Accounts: accts, Debtors: debtors, Methods: p.AccountingHistory}, nil
}

// DATEVExport returns the project's DATEV Buchungsstapel of the bookings
// dated from..to (see internal/accounting): live documents and payments
// only. With a debtor per customer, customers booked for the first time get
// their debtor account, stored for every later export. It fails with a
// validation error for a bad range, and with a conflict when a document
// cannot be booked.
func (s *Service) DATEVExport(ctx context.Context, projectID string, from, to time.Time, now time.Time, progress Progress) (out []byte, err error) {
	defer apperr.Wrap(&err, "DATEV export of project %s", projectID)
	if _, _, err := ParseExportRange(from.Format(time.DateOnly), to.Format(time.DateOnly)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ExportTimeout)
	defer cancel()
	var buf bytes.Buffer
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := store.LocalStatementTimeout(ctx, tx, ExportTimeout); err != nil {
			return err
		}
		p, err := project.Get(ctx, tx, projectID)
		if err != nil {
			return err
		}
		set, err := accountingSettings(p)
		if err != nil {
			return apperr.New(apperr.Conflict, "accounting_settings_invalid", "the project's accounting settings: %v (o2i project set)", err)
		}
		docs, err := loadDocuments(ctx, tx, projectID, from, to, true, progress)
		if err != nil {
			return err
		}
		payments, err := loadPayments(ctx, tx, projectID, from, to)
		if err != nil {
			return err
		}
		if set.Debtors == accounting.DebtorsPerCustomer {
			if err := assignDebtors(ctx, tx, projectID, set.Accounts.Debtor, docs, payments); err != nil {
				return err
			}
		} else {
			clearDebtorKeys(payments)
		}
		bookings, err := accounting.Bookings(set, docs, payments, from, to)
		if err != nil {
			return apperr.New(apperr.Conflict, "export_failed", "%v", err)
		}
		consultant, client := p.Settings.DATEVConsultant, p.Settings.DATEVClient
		if consultant == 0 {
			consultant = 1001
		}
		if client == 0 {
			client = 1
		}
		h := accounting.Header{Consultant: consultant, Client: client, FiscalYearStart: time.Date(from.Year(), 1, 1, 0, 0, 0, 0, time.UTC),
			From: from, To: to, Created: now, Chart: set.Chart,
			Label: fmt.Sprintf("o2i %s bis %s", from.Format(time.DateOnly), to.Format(time.DateOnly))}
		return exportFailed(accounting.WriteDATEV(&buf, h, bookings))
	})
	return buf.Bytes(), err
}

// exportFailed is a writer's refusal of a record (an amount or identifier
// that would break the file's layout) as 409 export_failed naming it: the
// buffer written to never fails by itself.
func exportFailed(err error) error {
	if err == nil {
		return nil
	}
	return apperr.New(apperr.Conflict, "export_failed", "%v", err)
}

// OSSReport returns the one-stop-shop return of quarter q as CSV.
func (s *Service) OSSReport(ctx context.Context, projectID string, q accounting.Period) ([]byte, error) {
	invs, err := s.reportDocuments(ctx, projectID, q)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = exportFailed(accounting.WriteOSS(&buf, accounting.OSS(invs, q)))
	return buf.Bytes(), err
}

// ECSLReport returns the EC sales list of period p as CSV.
func (s *Service) ECSLReport(ctx context.Context, projectID string, p accounting.Period) ([]byte, error) {
	invs, err := s.reportDocuments(ctx, projectID, p)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = exportFailed(accounting.WriteECSL(&buf, accounting.ECSL(invs, p)))
	return buf.Bytes(), err
}

func (s *Service) reportDocuments(ctx context.Context, projectID string, p accounting.Period) (invs []billing.Invoice, err error) {
	defer apperr.Wrap(&err, "report %s of project %s", p.Label, projectID)
	ctx, cancel := context.WithTimeout(ctx, ExportTimeout)
	defer cancel()
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := store.LocalStatementTimeout(ctx, tx, ExportTimeout); err != nil {
			return err
		}
		docs, err := loadDocuments(ctx, tx, projectID, p.From, p.To, false, nil)
		for _, d := range docs {
			invs = append(invs, d.Invoice)
		}
		return err
	})
	return invs, err
}

// loadDocuments reads the project's live documents issued from..to, and
// with deferrals those issued earlier whose service period reaches into the
// range (their releases may fall into it, if accrual accounting was in
// force in their fiscal year). A document without its stored
// computation cannot be booked: a conflict, never a silent gap. progress,
// when set, is told each document read. A document failed in archiving is
// issued and booked; only one that broke rules (recorded so by earlier
// versions, failed_rules) is not.
func loadDocuments(ctx context.Context, tx pgx.Tx, projectID string, from, to time.Time, deferrals bool, progress Progress) ([]accounting.Document, error) {
	const where = `FROM invoices
WHERE project_id = $1 AND NOT test_mode AND failed_rules = '{}' AND issue_date <= $3
  AND (issue_date >= $2 OR ($4 AND jsonb_typeof(document->'Period') = 'object'
       AND (document->'Period'->>'End')::timestamptz >= $2::date))`
	total := 0
	if progress != nil {
		if err := tx.QueryRow(ctx, `SELECT count(*) `+where, projectID, from, to, deferrals).Scan(&total); err != nil {
			return nil, err
		}
		progress(0, total)
	}
	rows, err := tx.Query(ctx, `SELECT number, document `+where+` ORDER BY issue_date, range_key, seq`, projectID, from, to, deferrals)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.Document
	for rows.Next() {
		var number string
		var raw []byte
		if err := rows.Scan(&number, &raw); err != nil {
			return nil, err
		}
		if raw == nil {
			return nil, apperr.New(apperr.Conflict, "export_failed",
				"document %s has no stored computation (issued before documents were kept); it cannot be booked", number)
		}
		var inv billing.Invoice
		if err := json.Unmarshal(raw, &inv); err != nil {
			return nil, fmt.Errorf("document %s: %w", number, err)
		}
		if inv.Test { // the row said live: trust neither silently
			return nil, fmt.Errorf("document %s: stored as live but computed as a test document", number)
		}
		out = append(out, accounting.Document{Invoice: inv})
		if progress != nil {
			progress(len(out), max(total, len(out)))
		}
	}
	return out, rows.Err()
}

// loadPayments reads the provider payments of the project's orders received
// from..to (UTC days). An order taken in test mode (its mode is fixed when
// it is received), or one with a test document, is test data and not
// loaded. The payment names the order's first live document.
func loadPayments(ctx context.Context, tx pgx.Tx, projectID string, from, to time.Time) ([]accounting.Payment, error) {
	rows, err := tx.Query(ctx, `SELECT o.order_no, o.paid_at, o.paid_cents, doc.number, doc.document
FROM orders o
LEFT JOIN LATERAL (SELECT i.number, i.document FROM invoices i WHERE i.order_id = o.id AND NOT i.test_mode
                   ORDER BY i.range_key, i.seq LIMIT 1) doc ON true
WHERE o.project_id = $1 AND o.paid_cents IS NOT NULL
  AND o.paid_at >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND o.paid_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
  AND NOT o.test_mode AND NOT EXISTS (SELECT 1 FROM invoices t WHERE t.order_id = o.id AND t.test_mode)
ORDER BY o.paid_at, o.order_no`, projectID, from, to)
	if err != nil {
		return nil, err
	}
	out, err := scanPayments(rows, 1)
	if err != nil {
		return nil, err
	}
	refunds, err := loadRefunds(ctx, tx, projectID, from, to)
	return append(out, refunds...), err
}

// loadRefunds reads the money the provider paid back from..to (UTC days,
// by the refund report's arrival): partial refunds (documented by credit
// notes) and whole-charge refunds (which cancel the order), each a negative
// payment naming the order's first live document. Test orders are left out
// as in loadPayments.
func loadRefunds(ctx context.Context, tx pgx.Tx, projectID string, from, to time.Time) ([]accounting.Payment, error) {
	rows, err := tx.Query(ctx, `SELECT o.order_no, pay.received_at, r.amount_cents, doc.number, doc.document
FROM provider_refunds r
JOIN payments pay ON pay.id = r.payment_id
JOIN orders o ON o.id = r.order_id
LEFT JOIN LATERAL (SELECT i.number, i.document FROM invoices i WHERE i.order_id = o.id AND NOT i.test_mode
                   ORDER BY i.range_key, i.seq LIMIT 1) doc ON true
WHERE r.project_id = $1
  AND pay.received_at >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND pay.received_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
  AND NOT o.test_mode AND NOT EXISTS (SELECT 1 FROM invoices t WHERE t.order_id = o.id AND t.test_mode)
ORDER BY pay.received_at, o.order_no`, projectID, from, to)
	if err != nil {
		return nil, err
	}
	return scanPayments(rows, -1)
}

// scanPayments reads rows of (order number, date, cents, first live
// document's number and value) as payments of sign times the cents, each
// naming its customer's debtor key (resolved by assignDebtors).
func scanPayments(rows pgx.Rows, sign money.Cents) ([]accounting.Payment, error) {
	defer rows.Close()
	var out []accounting.Payment
	for rows.Next() {
		var p accounting.Payment
		var number *string
		var raw []byte
		var cents int64
		if err := rows.Scan(&p.OrderNo, &p.Date, &cents, &number, &raw); err != nil {
			return nil, err
		}
		p.Date = p.Date.UTC()
		p.Cents = sign * money.Cents(cents)
		if number != nil {
			p.Reference = *number
		}
		if raw != nil {
			var inv billing.Invoice
			if err := json.Unmarshal(raw, &inv); err == nil {
				p.Debtor = "key:" + accounting.DebtorKey(inv)
			}
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// assignDebtors sets each document's and payment's debtor account of its
// customer, giving new customers the next free account after collective.
// Exports of one project serialise on an advisory lock, so two exports never
// give one account twice.
func assignDebtors(ctx context.Context, tx pgx.Tx, projectID, collective string, docs []accounting.Document, payments []accounting.Payment) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('o2i.accounting_debtors:' || $1))`, projectID); err != nil {
		return err
	}
	known := map[string]string{}
	rows, err := tx.Query(ctx, `SELECT customer_key, account::text FROM accounting_debtors WHERE project_id = $1`, projectID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k, a string
		if err := rows.Scan(&k, &a); err != nil {
			rows.Close()
			return err
		}
		known[k] = a
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	account := func(key string) (string, error) {
		if a, ok := known[key]; ok {
			return a, nil
		}
		var a string
		err := tx.QueryRow(ctx, `INSERT INTO accounting_debtors (project_id, customer_key, account)
SELECT $1, $2, GREATEST(COALESCE(max(account), 0), $3::integer) + 1 FROM accounting_debtors WHERE project_id = $1
RETURNING account::text`, projectID, key, collective).Scan(&a)
		if err != nil {
			return "", fmt.Errorf("debtor of %s: %w", key, err)
		}
		known[key] = a
		return a, nil
	}
	for i := range docs {
		a, err := account(accounting.DebtorKey(docs[i].Invoice))
		if err != nil {
			return err
		}
		docs[i].Debtor = a
	}
	for i := range payments {
		key, ok := strings.CutPrefix(payments[i].Debtor, "key:")
		payments[i].Debtor = ""
		if !ok {
			continue
		}
		a, err := account(key)
		if err != nil {
			return err
		}
		payments[i].Debtor = a
	}
	return nil
}

// clearDebtorKeys drops the customer keys loadPayments left in place of
// accounts (collective debtors).
func clearDebtorKeys(payments []accounting.Payment) {
	for i := range payments {
		if strings.HasPrefix(payments[i].Debtor, "key:") {
			payments[i].Debtor = ""
		}
	}
}

func (s *Service) exportDATEV(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	from, to, err := ParseExportRange(q.Get("from"), q.Get("to"))
	if err != nil {
		return err
	}
	out, err := s.DATEVExport(r.Context(), httpx.ProjectID(r.Context()), from, to, time.Now(), nil)
	if err != nil {
		return err
	}
	return writeCSV(w, out, "text/csv; charset=windows-1252",
		fmt.Sprintf("EXTF_Buchungsstapel_%s_%s.csv", from.Format("20060102"), to.Format("20060102")))
}

func (s *Service) reportOSS(w http.ResponseWriter, r *http.Request) error {
	q, err := accounting.ParseQuarter(r.URL.Query().Get("quarter"))
	if err != nil {
		return apperr.Field("quarter", "%v", err)
	}
	out, err := s.OSSReport(r.Context(), httpx.ProjectID(r.Context()), q)
	if err != nil {
		return err
	}
	return writeCSV(w, out, "text/csv; charset=utf-8", "OSS_"+q.Label+".csv")
}

func (s *Service) reportECSL(w http.ResponseWriter, r *http.Request) error {
	p, err := accounting.ParsePeriod(r.URL.Query().Get("period"))
	if err != nil {
		return apperr.Field("period", "%v", err)
	}
	out, err := s.ECSLReport(r.Context(), httpx.ProjectID(r.Context()), p)
	if err != nil {
		return err
	}
	return writeCSV(w, out, "text/csv; charset=utf-8", "ZM_"+p.Label+".csv")
}

func writeCSV(w http.ResponseWriter, body []byte, contentType, filename string) error {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	_, err := w.Write(body)
	return err
}
