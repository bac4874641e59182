package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/store"
)

// Page sizes of GET /v1/invoices.
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// InvoiceStatuses are the values of the status filter.
var InvoiceStatuses = []string{"created", "archived", "failed"}

const invoiceColumns = `id::text, number, status, order_no, payment_ref, type, format, issue_date, currency,
	total_net_cents, total_tax_cents, total_gross_cents, test_mode, created_at, archived_at, failure_reason, failure_task_id::text, rev, seq`

func scanInvoice(row pgx.CollectableRow) (invoiceRow, error) {
	var r invoiceRow
	var issue, created time.Time
	var archived *time.Time
	err := row.Scan(&r.ID, &r.Number, &r.Status, &r.OrderNo, &r.PaymentRef, &r.Type, &r.Format, &issue, &r.Currency,
		&r.TotalNetCents, &r.TotalTaxCents, &r.TotalGrossCents, &r.TestMode, &created, &archived, &r.FailureReason, &r.FailureTaskID,
		&r.rev, &r.seq)
	if err != nil {
		return r, err
	}
	r.URL = readmodel.InvoiceURL(r.ID)
	r.PDFURL = r.URL + "/pdf"
	if r.Format != string(billing.FormatSmallAmount) {
		x := r.URL + "/xml"
		r.XMLURL = &x
	}
	r.IssueDate = issue.Format(time.DateOnly)
	r.CreatedAt = created.UTC().Format(time.RFC3339Nano)
	if archived != nil {
		a := archived.UTC().Format(time.RFC3339Nano)
		r.ArchivedAt = &a
	}
	return r, nil
}

type invoiceRow struct {
	Invoice
	rev, seq int64
}

// Invoice finds an invoice by reference: its UUID, its number, an order
// number (the order's newest document) or a payment reference (the newest
// document paid with it), in that precedence.
func (s *Service) Invoice(ctx context.Context, projectID, ref string) (invoiceRow, error) {
	var id *uuid.UUID
	if u, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		id = &u
	}
	rows, err := store.Query(ctx, s.pool, `SELECT `+invoiceColumns+` FROM (
			(SELECT 1 AS pref, v.* FROM invoice_view v WHERE project_id = $1 AND id = $3)
			UNION ALL
			(SELECT 2, v.* FROM invoice_view v WHERE project_id = $1 AND number = $2 ORDER BY seq DESC LIMIT 1)
			UNION ALL
			(SELECT 3, v.* FROM invoice_view v WHERE project_id = $1 AND order_no = $2 ORDER BY seq DESC LIMIT 1)
			UNION ALL
			(SELECT 4, v.* FROM invoice_view v WHERE project_id = $1 AND payment_ref = $2 ORDER BY seq DESC LIMIT 1)
		) m ORDER BY pref LIMIT 1`, projectID, ref, id)
	if err != nil {
		return invoiceRow{}, err
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanInvoice)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, apperr.New(apperr.NotFound, "invoice_not_found", "no invoice with reference %q", ref)
	}
	return r, err
}

func (s *Service) getInvoice(w http.ResponseWriter, r *http.Request) error {
	inv, err := s.Invoice(r.Context(), httpx.ProjectID(r.Context()), chi.URLParam(r, "reference"))
	if err != nil {
		return err
	}
	d, _, err := s.delivery(r.Context(), inv.ID)
	if err != nil {
		return err
	}
	inv.Delivery = d
	body, err := json.Marshal(inv.Invoice)
	if err != nil {
		return err
	}
	// The ETag changes with the metadata and its delivery record, and
	// with nothing else.
	writeTagged(w, r, contentETag(body), body)
	return nil
}

// delivery reads the e-mail delivery record of a document (the mailer's
// table, written by the command side) and its version; nil, 0 when there
// is none.
func (s *Service) delivery(ctx context.Context, invoiceID string) (*Delivery, int64, error) {
	var d Delivery
	var version int64
	var sent, last *time.Time
	err := s.pool.QueryRow(ctx, `SELECT status, recipient, sent_at, attempts, last_error, last_attempt_at, version
		FROM mail_deliveries WHERE invoice_id = $1`, invoiceID).Scan(&d.Status, &d.Recipient, &sent, &d.Attempts, &d.LastError, &last, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	d.SentAt, d.LastAttemptAt = rfc3339(sent), rfc3339(last)
	return &d, version, nil
}

func rfc3339(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// listFilter is a validated query of GET /v1/invoices.
type listFilter struct {
	limit                               int
	cursor                              string
	status, number, orderNo, paymentRef string
}

func parseListFilter(q map[string][]string) (listFilter, error) {
	get := func(name string) (string, error) {
		v := q[name]
		if len(v) > 1 {
			return "", apperr.Field(name, "%s may be given once", name)
		}
		if len(v) == 0 {
			return "", nil
		}
		return v[0], nil
	}
	f := listFilter{limit: DefaultLimit}
	var err error
	var limit string
	if limit, err = get("limit"); err != nil {
		return f, err
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			return f, apperr.Field("limit", "limit must be an integer from 1 to %d, got %q", MaxLimit, limit)
		}
		f.limit = n
	}
	for name, dst := range map[string]*string{"cursor": &f.cursor, "status": &f.status, "number": &f.number, "orderNo": &f.orderNo, "paymentRef": &f.paymentRef} {
		if *dst, err = get(name); err != nil {
			return f, err
		}
	}
	if f.status != "" {
		ok := false
		for _, s := range InvoiceStatuses {
			ok = ok || s == f.status
		}
		if !ok {
			return f, apperr.Field("status", "status must be one of created, archived, failed, got %q", f.status)
		}
	}
	return f, nil
}

func (s *Service) listInvoices(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f, err := parseListFilter(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := s.ListInvoices(ctx, httpx.ProjectID(ctx), InvoiceFilter{Status: f.status, Number: f.number, OrderNo: f.orderNo, PaymentRef: f.paymentRef},
		f.cursor, f.limit)
	if err != nil {
		return err
	}
	page.RequestID = httpx.RequestID(ctx)
	httpx.WriteJSON(w, r, http.StatusOK, page)
	return nil
}

// InvoiceFilter selects documents of GET /v1/invoices (status, number,
// orderNo, paymentRef) and of the console's listing, which also filters
// by type, mode, issue dates and years (an auditor's).
type InvoiceFilter struct {
	Status, Number, OrderNo, PaymentRef string
	Type                                string     // invoice, voucher_sale, cancellation, credit_note; "": all
	TestMode                            *bool      // nil: both modes
	From, To                            *time.Time // issue dates, both inclusive
	Years                               []int      // years of issue; nil: every year
}

// key is what a cursor is bound to; the API's filters alone keep the
// form of earlier cursors.
func (f InvoiceFilter) key() string {
	k := strings.Join([]string{f.Status, f.Number, f.OrderNo, f.PaymentRef}, "\x00")
	if f.Type == "" && f.TestMode == nil && f.From == nil && f.To == nil && f.Years == nil {
		return k
	}
	return k + fmt.Sprintf("\x00%s\x00%v\x00%v\x00%v\x00%v", f.Type, fmtBool(f.TestMode), fmtDay(f.From), fmtDay(f.To), f.Years)
}

func fmtBool(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

func fmtDay(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.DateOnly)
}

// ListInvoices is a page of the project's documents in the order they were
// recorded (keyset on seq, after the signed cursor), at most limit; the
// page's NextCursor is always set (after the last document). With a period
// (From, To or Years) the page is in the order of issue instead (keyset on
// issue date and seq, on the index of both), so that a page of a period
// never walks the documents outside it.
func (s *Service) ListInvoices(ctx context.Context, projectID string, f InvoiceFilter, cursor string, limit int) (InvoicePage, error) {
	key, err := s.cursors.get(ctx)
	if err != nil {
		return InvoicePage{}, err
	}
	byIssue := f.From != nil || f.To != nil || f.Years != nil
	from, to := f.From, f.To
	if f.Years != nil {
		if len(f.Years) == 0 {
			c := encodeCursor(key, projectID, f.key(), 0)
			return InvoicePage{Data: []Invoice{}, NextCursor: &c}, nil
		}
		lo, hi := slices.Min(f.Years), slices.Max(f.Years)
		first, last := time.Date(lo, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(hi, 12, 31, 0, 0, 0, 0, time.UTC)
		if from == nil || from.Before(first) {
			from = &first
		}
		if to == nil || to.After(last) {
			to = &last
		}
	}
	var after int64
	if cursor != "" {
		if after, err = decodeCursor(key, projectID, f.key(), cursor); err != nil {
			return InvoicePage{}, err
		}
	}
	sql := `SELECT ` + invoiceColumns + ` FROM invoice_view WHERE project_id = $1`
	args := []any{projectID}
	cond := func(expr string, v ...any) {
		for _, x := range v {
			args = append(args, x)
			expr = strings.Replace(expr, "$?", "$"+strconv.Itoa(len(args)), 1)
		}
		sql += " AND " + expr
	}
	if byIssue {
		if after != 0 {
			day, seq := unpackIssueSeq(after)
			cond("(issue_date, seq) > ($?, $?)", day, seq)
		}
	} else {
		cond("seq > $?", after)
	}
	// Only the filters given become conditions, so that each query shape
	// gets its own plan on the matching (project_id, filter, seq) index.
	for _, c := range []struct{ column, value string }{
		{"status", f.Status}, {"number", f.Number}, {"order_no", f.OrderNo}, {"payment_ref", f.PaymentRef}, {"type", f.Type},
	} {
		if c.value != "" {
			cond(c.column+" = $?", c.value)
		}
	}
	if f.TestMode != nil {
		cond("test_mode = $?", *f.TestMode)
	}
	if from != nil {
		cond("issue_date >= $?", *from)
	}
	if to != nil {
		cond("issue_date <= $?", *to)
	}
	if f.Years != nil {
		cond("extract(year FROM issue_date)::int = ANY($?)", f.Years)
	}
	args = append(args, limit+1)
	if byIssue {
		sql += " ORDER BY issue_date, seq LIMIT $" + strconv.Itoa(len(args))
	} else {
		sql += " ORDER BY seq LIMIT $" + strconv.Itoa(len(args))
	}
	rows, err := store.Query(ctx, s.pool, sql, args...)
	if err != nil {
		return InvoicePage{}, err
	}
	list, err := pgx.CollectRows(rows, scanInvoice)
	if err != nil {
		return InvoicePage{}, err
	}
	page := InvoicePage{Data: make([]Invoice, 0, len(list))}
	if len(list) > limit {
		page.HasMore = true
		list = list[:limit]
	}
	for _, row := range list {
		page.Data = append(page.Data, row.Invoice)
	}
	last := after
	if len(list) > 0 {
		l := list[len(list)-1]
		last = l.seq
		if byIssue {
			day, _ := time.Parse(time.DateOnly, l.IssueDate)
			last = packIssueSeq(day, l.seq)
		}
	}
	c := encodeCursor(key, projectID, f.key(), last)
	page.NextCursor = &c
	return page, nil
}

// A listing in the order of issue keeps its position, the issue date and
// seq, in the cursor's one number: the days since 1970 above bit 40, seq
// below (seq stays far below 2^40).
const issueSeqBits = 40

func packIssueSeq(day time.Time, seq int64) int64 {
	return int64(day.Unix()/86400)<<issueSeqBits | seq&(1<<issueSeqBits-1)
}

func unpackIssueSeq(v int64) (time.Time, int64) {
	return time.Unix((v>>issueSeqBits)*86400, 0).UTC(), v & (1<<issueSeqBits - 1)
}

// getDocument answers GET /v1/invoices/{reference}/pdf and /xml. Documents
// are served only from the archive: before the invoice is archived the
// answer is 409 document_not_archived (retry later), also while it is
// failed (its archiving is retried); one that broke rules (recorded so by
// earlier versions, without a failure reason) is never archived.
func (s *Service) getDocument(w http.ResponseWriter, r *http.Request) error {
	projectID := httpx.ProjectID(r.Context())
	inv, err := s.Invoice(r.Context(), projectID, chi.URLParam(r, "reference"))
	if err != nil {
		return err
	}
	kind := "xml"
	if strings.HasSuffix(r.URL.Path, "/pdf") {
		kind = "pdf"
	}
	doc, err := s.Document(r.Context(), projectID, inv.Invoice, kind)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", DocumentType(kind))
	w.Header().Set("Content-Disposition", `attachment; filename="`+DocumentFileName(inv.Invoice, kind)+`"`)
	_, err = w.Write(doc)
	return err
}

// DocumentType is the media type of a document kind (pdf or xml).
func DocumentType(kind string) string {
	if kind == "pdf" {
		return "application/pdf"
	}
	return "application/xml"
}

// DocumentFileName is the file name a download of inv's document of kind gets.
func DocumentFileName(inv Invoice, kind string) string {
	return strings.Map(safeFileRune, inv.Number) + "." + kind
}

// Document returns an invoice's archived document of kind pdf or xml, as
// GET /v1/invoices/{reference}/pdf and /xml serve it: only from the archive;
// before the invoice is archived it is 409 document_not_archived (retry
// later), also while it is failed (its archiving is retried); one that
// broke rules (recorded so by earlier versions, without a failure reason)
// is never archived.
func (s *Service) Document(ctx context.Context, projectID string, inv Invoice, kind string) ([]byte, error) {
	switch {
	case inv.Status == "failed" && inv.FailureReason == nil:
		return nil, apperr.New(apperr.Conflict, "document_not_archived", "invoice %s failed validation and is never archived; see its review task", inv.Number)
	case inv.Status == "failed":
		msg := fmt.Sprintf("archiving invoice %s failed (%s); it is retried", inv.Number, *inv.FailureReason)
		if inv.FailureTaskID != nil {
			msg += " under review task " + *inv.FailureTaskID
		}
		return nil, &apperr.Error{Kind: apperr.Conflict, Code: "document_not_archived", RetryAfter: time.Minute, Message: msg}
	case inv.Status == "created":
		return nil, &apperr.Error{Kind: apperr.Conflict, Code: "document_not_archived", RetryAfter: 5 * time.Second,
			Message: fmt.Sprintf("invoice %s is not archived yet; fetch again later", inv.Number)}
	}
	if s.archive == nil {
		return nil, apperr.New(apperr.NotImplemented, "not_implemented", "this service does not serve archived documents")
	}
	if kind != "pdf" && inv.Format == string(billing.FormatSmallAmount) {
		return nil, apperr.New(apperr.Conflict, "xml_not_applicable",
			"invoice %s is a small-amount invoice (§ 33 UStDV): a PDF only, there is no XML; fetch .../pdf", inv.Number)
	}
	return s.archivedDocument(ctx, projectID, inv.ID, kind)
}

// archivedDocument returns an invoice's archived document (kind xml or pdf):
// the version recorded in archive_objects, checked against the SHA-256 and
// size recorded there; a ZUGFeRD XML kept only inside the PDF is the PDF's
// embedded file, checked the same way. An invoice archived before the archive was anchored
// in the database is read as stored (checked against the object's own
// SHA-256) until `o2i archive backfill` anchors it; a PDF that was never
// rendered is 409 document_not_archived until that command renders it. The
// read side never writes to the archive.
func (s *Service) archivedDocument(ctx context.Context, projectID, invoiceID, kind string) ([]byte, error) {
	want, bucket, in, err := anchoredObject(ctx, s.pool, projectID, invoiceID, kind)
	if errors.Is(err, pgx.ErrNoRows) {
		key := archive.InvoiceXMLKey(projectID, invoiceID)
		if kind == "pdf" {
			key = archive.InvoicePDFKey(projectID, invoiceID)
		}
		doc, _, err := s.archive.Get(ctx, key)
		if errors.Is(err, archive.ErrNotFound) && kind == "pdf" {
			return nil, apperr.New(apperr.Conflict, "document_not_archived",
				"the PDF of this invoice was never rendered; an operator renders it with o2i archive backfill")
		}
		return doc, err
	}
	if err != nil {
		return nil, err
	}
	arc, err := s.archive.InBucket(bucket)
	if err != nil {
		return nil, err
	}
	if in.Key != "" {
		// The XML lies only inside the PDF/A-3: the embedded file, served
		// when it has the anchored hash.
		pdf, err := arc.Verified(ctx, in)
		if err != nil {
			return nil, err
		}
		return archive.VerifiedEmbedded(pdf, want)
	}
	return arc.Verified(ctx, want)
}

func safeFileRune(r rune) rune {
	if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
		return r
	}
	return '_'
}
