package query

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/project"
)

// ExportTimeout bounds one export or report as a whole: it streams, page
// by page, each statement within exportStatementTimeout.
const ExportTimeout = 10 * time.Minute

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

// DATEVExport writes the project's DATEV Buchungsstapel of the bookings
// dated from..to (see internal/accounting) to w: live documents and
// payments only. It streams: the bookings are read page by page in the
// order they are written, and the file is written booking by booking, so
// memory holds a few pages, never the range. Every read is outside a
// transaction; with a debtor per customer, customers booked for the first
// time get their debtor accounts first, in short transactions of one
// statement each (assignDebtors), stored for every later export. It fails
// with a validation error for a bad range, and with a conflict when a
// document cannot be booked; what was written to w then is incomplete.
func (s *Service) DATEVExport(ctx context.Context, w io.Writer, projectID string, from, to time.Time, now time.Time, progress Progress) (err error) {
	defer apperr.Wrap(&err, "DATEV export of project %s", projectID)
	if _, _, err := ParseExportRange(from.Format(time.DateOnly), to.Format(time.DateOnly)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ExportTimeout)
	defer cancel()
	p, err := project.Get(ctx, s.pool, projectID)
	if err != nil {
		return err
	}
	set, err := accountingSettings(p)
	if err != nil {
		return apperr.New(apperr.Conflict, "accounting_settings_invalid", "the project's accounting settings: %v (o2i project set)", err)
	}
	if number, err := s.firstWithoutComputation(ctx, projectID, from, to, true); err != nil {
		return err
	} else if number != "" {
		_, err := decodeDocument(number, nil)
		return err
	}
	x := &datevExport{s: s, projectID: projectID, set: set, from: from, to: to, progress: progress}
	if set.Debtors == accounting.DebtorsPerCustomer {
		if err := x.assignDebtors(ctx); err != nil {
			return err
		}
	}
	if progress != nil {
		if x.total, err = s.countIssued(ctx, projectID, from, to); err != nil {
			return err
		}
		progress(0, x.total)
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
	dw, err := accounting.NewDATEVWriter(w, h)
	if err != nil {
		return exportFailed(err)
	}
	return accounting.Merge(func(b accounting.Booking) error { return exportFailed(dw.Write(b)) },
		x.issued(ctx), x.releases(ctx), x.money(ctx, false), x.money(ctx, true))
}

// datevExport is one DATEV export's state: the sources of its bookings.
type datevExport struct {
	s         *Service
	projectID string
	set       accounting.Settings
	from, to  time.Time
	progress  Progress
	total     int
	done      int
}

// pages is a stream of bookings read page by page: next returns the
// bookings of the next page and whether there was one.
func pages(next func() ([]accounting.Booking, bool, error)) accounting.Stream {
	var buf []accounting.Booking
	more := true
	return func() (accounting.Booking, bool, error) {
		for len(buf) == 0 && more {
			var err error
			if buf, more, err = next(); err != nil {
				return accounting.Booking{}, false, err
			}
		}
		if len(buf) == 0 {
			return accounting.Booking{}, false, nil
		}
		b := buf[0]
		buf = buf[1:]
		return b, true, nil
	}
}

// perCustomer reports whether each customer has a debtor of its own.
func (x *datevExport) perCustomer() bool { return x.set.Debtors == accounting.DebtorsPerCustomer }

// assignDebtors gives every customer the export books a debtor account,
// before anything is written, in the order the customers are first
// booked: the documents by issue date, number range and sequence, then the
// payments by time and order, then the refunds. Each page's new customers
// get theirs in one short statement.
func (x *datevExport) assignDebtors(ctx context.Context) error {
	var after *buyerRow
	for {
		rows, err := x.s.buyerPage(ctx, x.projectID, x.from, x.to, after)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		keys := make([]string, 0, len(rows))
		for _, r := range rows {
			if r.buyer != nil {
				keys = append(keys, debtorKeyOf(r.buyer))
			}
		}
		if _, err := x.s.debtorAccounts(ctx, x.projectID, x.set.Accounts.Debtor, keys); err != nil {
			return err
		}
		after = &rows[len(rows)-1]
	}
	for _, refunds := range []bool{false, true} {
		var after *moneyRow
		for {
			rows, err := x.s.moneyPage(ctx, x.projectID, x.from, x.to, refunds, false, after)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				break
			}
			if _, err := x.s.debtorAccounts(ctx, x.projectID, x.set.Accounts.Debtor, moneyKeys(rows)); err != nil {
				return err
			}
			after = &rows[len(rows)-1]
		}
	}
	return nil
}

func moneyKeys(rows []moneyRow) []string {
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		if k := debtorKeyOf(r.buyer); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// issued are the bookings of the documents issued in the range, on their
// issue dates.
func (x *datevExport) issued(ctx context.Context) accounting.Stream {
	afterDate, afterNumber := x.from, ""
	return pages(func() ([]accounting.Booking, bool, error) {
		rows, err := x.s.issuedPage(ctx, x.projectID, afterDate, x.to, afterNumber)
		if err != nil || len(rows) == 0 {
			return nil, false, err
		}
		afterDate, afterNumber = rows[len(rows)-1].issueDate, rows[len(rows)-1].number
		docs := make([]accounting.Document, len(rows))
		keys := make([]string, 0, len(rows))
		for i, r := range rows {
			inv, err := decodeDocument(r.number, r.raw)
			if err != nil {
				return nil, false, err
			}
			docs[i].Invoice = inv
			if x.perCustomer() {
				keys = append(keys, accounting.DebtorKey(inv))
			}
		}
		if x.perCustomer() {
			accts, err := x.s.debtorAccounts(ctx, x.projectID, x.set.Accounts.Debtor, keys)
			if err != nil {
				return nil, false, err
			}
			for i := range docs {
				docs[i].Debtor = accts[accounting.DebtorKey(docs[i].Invoice)]
			}
		}
		var out []accounting.Booking
		for _, d := range docs {
			bs, err := accounting.IssueBookings(x.set, d, x.from, x.to)
			if err != nil {
				return nil, false, exportFailed(err)
			}
			out = append(out, bs...)
			x.done++
			if x.progress != nil {
				x.progress(x.done, max(x.total, x.done))
			}
		}
		return out, true, nil
	})
}

// releases are the releases of deferred revenue on the first day of each
// month of the range.
func (x *datevExport) releases(ctx context.Context) accounting.Stream {
	month := time.Date(x.from.Year(), x.from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if month.Before(day(x.from)) {
		month = month.AddDate(0, 1, 0)
	}
	afterNumber := ""
	return pages(func() ([]accounting.Booking, bool, error) {
		for !month.After(day(x.to)) {
			rows, err := x.s.releasePage(ctx, x.projectID, x.from, x.to, month, afterNumber)
			if err != nil {
				return nil, false, err
			}
			if len(rows) == 0 {
				month, afterNumber = month.AddDate(0, 1, 0), ""
				continue
			}
			afterNumber = rows[len(rows)-1].number
			var out []accounting.Booking
			for _, r := range rows {
				inv, err := decodeDocument(r.number, r.raw)
				if err != nil {
					return nil, false, err
				}
				bs, err := accounting.ReleaseBookings(x.set, accounting.Document{Invoice: inv}, month, x.from, x.to)
				if err != nil {
					return nil, false, exportFailed(err)
				}
				out = append(out, bs...)
			}
			return out, true, nil
		}
		return nil, false, nil
	})
}

// money are the provider payments (refunds: the money paid back) of the
// range, each naming its order's first live document.
func (x *datevExport) money(ctx context.Context, refunds bool) accounting.Stream {
	var after *moneyRow
	sign := int64(1)
	if refunds {
		sign = -1
	}
	return pages(func() ([]accounting.Booking, bool, error) {
		rows, err := x.s.moneyPage(ctx, x.projectID, x.from, x.to, refunds, true, after)
		if err != nil || len(rows) == 0 {
			return nil, false, err
		}
		after = &rows[len(rows)-1]
		var accts map[string]string
		if x.perCustomer() {
			if accts, err = x.s.debtorAccounts(ctx, x.projectID, x.set.Accounts.Debtor, moneyKeys(rows)); err != nil {
				return nil, false, err
			}
		}
		var out []accounting.Booking
		for _, r := range rows {
			p := accounting.Payment{OrderNo: r.orderNo, Date: r.at.UTC(), Cents: money.Cents(sign * r.cents)}
			if r.number != nil {
				p.Reference = *r.number
			}
			if k := debtorKeyOf(r.buyer); k != "" && x.perCustomer() {
				p.Debtor = accts[k]
			}
			if b, ok := accounting.PaymentBooking(x.set.Accounts, p, x.from, x.to); ok {
				out = append(out, b)
			}
		}
		return out, true, nil
	})
}

// exportFailed is a writer's refusal of a record (an amount or identifier
// that would break the file's layout) or a document that cannot be booked
// as 409 export_failed naming it; an error of the writer written to, or one
// that is already an application error, is returned as it is.
func exportFailed(err error) error {
	var ae *apperr.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return err
	case errors.As(err, new(*writeError)):
		return err
	}
	return apperr.New(apperr.Conflict, "export_failed", "%v", err)
}

// writeError is a failure of the writer an export or report is written
// to (the client went away): not the export's fault.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// failingWriter marks the errors of w as writeErrors.
type failingWriter struct{ w io.Writer }

func (f failingWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

// OSSReport returns the one-stop-shop return of quarter q as CSV.
func (s *Service) OSSReport(ctx context.Context, projectID string, q accounting.Period) ([]byte, error) {
	sums := accounting.NewOSSSums(q)
	if err := s.reportDocuments(ctx, projectID, q, "oss_report", sums.Add); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err := exportFailed(accounting.WriteOSS(&buf, sums.Rows()))
	return buf.Bytes(), err
}

// ECSLReport returns the EC sales list of period p as CSV.
func (s *Service) ECSLReport(ctx context.Context, projectID string, p accounting.Period) ([]byte, error) {
	sums := accounting.NewECSLSums(p)
	if err := s.reportDocuments(ctx, projectID, p, "ec_sales_list", sums.Add); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err := exportFailed(accounting.WriteECSL(&buf, sums.Rows()))
	return buf.Bytes(), err
}

// reportDocuments hands add every live document issued in p that the
// report counts (flag), page by page: the report holds its sums, one per
// output row, never the documents. A document of the period without its
// stored computation fails the report before anything is summed.
func (s *Service) reportDocuments(ctx context.Context, projectID string, p accounting.Period, flag string, add func(billing.Invoice)) (err error) {
	defer apperr.Wrap(&err, "report %s of project %s", p.Label, projectID)
	ctx, cancel := context.WithTimeout(ctx, ExportTimeout)
	defer cancel()
	if number, err := s.firstWithoutComputation(ctx, projectID, p.From, p.To, false); err != nil {
		return err
	} else if number != "" {
		_, err := decodeDocument(number, nil)
		return err
	}
	afterDate, afterNumber := p.From, ""
	for {
		rows, err := s.reportPage(ctx, projectID, flag, afterDate, p.To, afterNumber)
		if err != nil || len(rows) == 0 {
			return err
		}
		for _, r := range rows {
			inv, err := decodeDocument(r.number, r.raw)
			if err != nil {
				return err
			}
			add(inv)
		}
		afterDate, afterNumber = rows[len(rows)-1].issueDate, rows[len(rows)-1].number
	}
}

func (s *Service) exportDATEV(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	from, to, err := ParseExportRange(q.Get("from"), q.Get("to"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=windows-1252")
	w.Header().Set("Content-Disposition", `attachment; filename="`+
		fmt.Sprintf("EXTF_Buchungsstapel_%s_%s.csv", from.Format("20060102"), to.Format("20060102"))+`"`)
	// The first bytes wait in the buffer: a conflict found before they
	// leave is still answered as one. Once the body has begun, a failure
	// cuts the response, so that no client takes a part for the whole.
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(failingWriter{cw}, 64<<10)
	err = s.DATEVExport(r.Context(), bw, httpx.ProjectID(r.Context()), from, to, time.Now(), nil)
	if err == nil {
		if err = bw.Flush(); err != nil {
			err = &writeError{err}
		}
	}
	if err != nil && cw.n > 0 {
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		w.Header().Del("Content-Disposition")
	}
	return err
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
