package query

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/reqlog"
	"github.com/o2i-service/o2i/internal/store"
)

// The reads of the seller console's pages: each is a lookup on an index or
// a keyset page of one, never a scan of a project's orders or documents.

// OrderRow is one order of the console's order listing.
type OrderRow struct {
	ID         string
	OrderNo    string
	PaymentRef *string
	Email      *string
	Status     string
	TestMode   bool
	CreatedAt  time.Time
}

const orderRowColumns = `id::text, order_no, payment_ref, NULLIF(content->>'email', ''), status, test_mode, created_at`

func scanOrderRow(row pgx.CollectableRow) (OrderRow, error) {
	var o OrderRow
	err := row.Scan(&o.ID, &o.OrderNo, &o.PaymentRef, &o.Email, &o.Status, &o.TestMode, &o.CreatedAt)
	return o, err
}

// ListOrders is a page of the project's live or test orders, newest first,
// after the cursor (bound to the project and the mode); next continues
// after the page when more.
func (s *Service) ListOrders(ctx context.Context, projectID string, testMode bool, cursor string, limit int) (list []OrderRow, next string, more bool, err error) {
	if _, err := uuid.Parse(projectID); err != nil {
		return nil, "", false, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	key, err := s.cursors.get(ctx)
	if err != nil {
		return nil, "", false, err
	}
	filters := "console-orders-live"
	if testMode {
		filters = "console-orders-test"
	}
	// Test orders have an index of their own (a project's few test orders
	// are not found by scanning its live ones).
	sql := `SELECT ` + orderRowColumns + ` FROM orders WHERE project_id = $1 AND test_mode = $2`
	args := []any{projectID, testMode}
	if cursor != "" {
		at, id, err := decodeTimeIDCursor(key, projectID, filters, cursor)
		if err != nil {
			return nil, "", false, err
		}
		sql += ` AND (created_at, id) < ($3, $4)`
		args = append(args, at, id)
	}
	args = append(args, limit+1)
	sql += ` ORDER BY created_at DESC, id DESC LIMIT $` + strconv.Itoa(len(args))
	rows, err := store.Query(ctx, s.pool, sql, args...)
	if err != nil {
		return nil, "", false, err
	}
	list, err = pgx.CollectRows(rows, scanOrderRow)
	if err != nil {
		return nil, "", false, err
	}
	if len(list) > limit {
		list, more = list[:limit], true
		last := list[len(list)-1]
		next = encodeTimeIDCursor(key, projectID, filters, last.CreatedAt, uuid.MustParse(last.ID))
	}
	return list, next, more, nil
}

// FindOrders finds the project's orders by order number, payment
// reference, invoice number or the buyer's e-mail (at most 100, newest
// first); each lookup is on an index.
func (s *Service) FindOrders(ctx context.Context, projectID, term string) ([]OrderRow, error) {
	term = strings.TrimSpace(term)
	if term == "" {
		return nil, nil
	}
	if _, err := uuid.Parse(projectID); err != nil {
		return nil, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	rows, err := store.Query(ctx, s.pool, `SELECT `+orderRowColumns+` FROM orders WHERE id IN (
			(SELECT id FROM orders WHERE project_id = $1 AND order_no = $2)
			UNION (SELECT id FROM orders WHERE project_id = $1 AND payment_ref = $2)
			UNION (SELECT o.id FROM invoice_view v JOIN orders o ON o.project_id = v.project_id AND o.order_no = v.order_no
				WHERE v.project_id = $1 AND v.number = $2)
			UNION (SELECT id FROM orders WHERE project_id = $1 AND lower(content->>'email') = lower($2) AND content->>'email' IS NOT NULL
				ORDER BY created_at DESC LIMIT 100))
		ORDER BY created_at DESC, id DESC LIMIT 100`, projectID, term)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanOrderRow)
}

// TimelineEvent is one thing that happened to an order.
type TimelineEvent struct {
	At     time.Time
	What   string // received, paid, fulfillment, invoiced, document, archived, emailed, refunded, cancelled
	Detail string
	Ref    string // the document's id, when it is about one
}

// OrderFacts is an order as the console's order page shows it: its row,
// what happened to it in time order, and its documents oldest first.
type OrderFacts struct {
	OrderRow
	PaidCents     *int64
	RefundedCents int64
	Timeline      []TimelineEvent
	Documents     []Invoice
}

// Order returns the facts of the project's order orderNo; another
// project's order or an unknown one is order_not_found.
func (s *Service) Order(ctx context.Context, projectID, orderNo string) (OrderFacts, error) {
	var f OrderFacts
	if _, err := uuid.Parse(projectID); err != nil {
		return f, apperr.New(apperr.NotFound, "order_not_found", "no order %q", orderNo)
	}
	var paidAt, shippedAt, invoicedAt *time.Time
	var updated time.Time
	err := store.QueryRow(ctx, s.pool, `SELECT `+orderRowColumns+`, paid_at, paid_cents, shipped_at, invoiced_at, refunded_cents, updated_at
		FROM orders WHERE project_id = $1 AND order_no = $2`, projectID, orderNo).
		Scan(&f.ID, &f.OrderNo, &f.PaymentRef, &f.Email, &f.Status, &f.TestMode, &f.CreatedAt, &paidAt, &f.PaidCents, &shippedAt, &invoicedAt,
			&f.RefundedCents, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, apperr.New(apperr.NotFound, "order_not_found", "no order %q", orderNo)
	}
	if err != nil {
		return f, err
	}
	add := func(at *time.Time, what, detail, ref string) {
		if at != nil {
			f.Timeline = append(f.Timeline, TimelineEvent{At: *at, What: what, Detail: detail, Ref: ref})
		}
	}
	add(&f.CreatedAt, "received", "", "")
	add(paidAt, "paid", "", "")
	if f.Status == "cancelled" {
		add(&updated, "cancelled", "", "")
	}
	if f.RefundedCents > 0 {
		add(&updated, "refunded", strconv.FormatInt(f.RefundedCents, 10), "")
	}
	rows, err := store.Query(ctx, s.pool, `SELECT status, shipped_at, received_at FROM fulfillments WHERE order_id = $1 ORDER BY received_at`, f.ID)
	if err != nil {
		return f, err
	}
	var fst string
	var fship *time.Time
	var frecv time.Time
	if _, err := pgx.ForEachRow(rows, []any{&fst, &fship, &frecv}, func() error {
		at := frecv
		add(&at, "fulfillment", fst, "")
		return nil
	}); err != nil {
		return f, err
	}
	docs, err := s.OrderDocuments(ctx, projectID, orderNo)
	if err != nil {
		return f, err
	}
	f.Documents = docs
	for _, d := range docs {
		created, _ := time.Parse(time.RFC3339Nano, d.CreatedAt)
		add(&created, "document", d.Type+" "+d.Number, d.ID)
		if d.ArchivedAt != nil {
			at, _ := time.Parse(time.RFC3339Nano, *d.ArchivedAt)
			add(&at, "archived", d.Number, d.ID)
		}
	}
	rows, err = store.Query(ctx, s.pool, `SELECT m.sent_at, m.recipient, COALESCE(i.number, '') FROM mail_deliveries m
		LEFT JOIN invoices i ON i.id = m.invoice_id
		WHERE m.project_id = $1 AND m.order_no = $2 AND m.sent_at IS NOT NULL`, projectID, orderNo)
	if err != nil {
		return f, err
	}
	var sent time.Time
	var to, number string
	if _, err := pgx.ForEachRow(rows, []any{&sent, &to, &number}, func() error {
		at := sent
		add(&at, "emailed", strings.TrimSpace(number+" → "+to), "")
		return nil
	}); err != nil {
		return f, err
	}
	sort.SliceStable(f.Timeline, func(i, j int) bool { return f.Timeline[i].At.Before(f.Timeline[j].At) })
	return f, nil
}

// OrderDocuments are the documents of the project's order orderNo, oldest
// first: its chain of invoices, cancellations and credit notes.
func (s *Service) OrderDocuments(ctx context.Context, projectID, orderNo string) ([]Invoice, error) {
	rows, err := store.Query(ctx, s.pool, `SELECT `+invoiceColumns+` FROM invoice_view WHERE project_id = $1 AND order_no = $2 ORDER BY seq LIMIT 1000`,
		projectID, orderNo)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, scanInvoice)
	if err != nil {
		return nil, err
	}
	out := make([]Invoice, len(list))
	for i, r := range list {
		out[i] = r.Invoice
	}
	return out, nil
}

// InvoiceByID returns the project's document with id; anything else
// (another project's, an unknown id, not a UUID) is invoice_not_found.
func (s *Service) InvoiceByID(ctx context.Context, projectID, id string) (Invoice, error) {
	notFound := apperr.New(apperr.NotFound, "invoice_not_found", "no invoice %q", id)
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return Invoice{}, notFound
	}
	inv, err := s.Invoice(ctx, projectID, id)
	if err != nil {
		return Invoice{}, err
	}
	if inv.ID != strings.ToLower(id) {
		return Invoice{}, notFound
	}
	return inv.Invoice, nil
}

// RequestFilter selects recorded requests of a project: by id, key prefix,
// status, path (its start) and time.
type RequestFilter struct {
	RequestID  string
	KeyPrefix  string
	Status     int
	PathPrefix string
	From, To   time.Time // zero: the 30 days kept
}

// SearchRequests is a page of the project's recorded requests, newest
// first, after the cursor (bound to the project and the filter); next
// continues after the page when more. By id it is one lookup.
func (s *Service) SearchRequests(ctx context.Context, projectID string, f RequestFilter, cursor string, limit int, now time.Time) (list []RequestRecord, next string, more bool, err error) {
	if f.RequestID != "" {
		rec, err := s.Request(ctx, projectID, f.RequestID)
		if err != nil {
			var ae *apperr.Error
			if errors.As(err, &ae) && ae.Kind == apperr.NotFound {
				return nil, "", false, nil
			}
			return nil, "", false, err
		}
		return []RequestRecord{rec}, "", false, nil
	}
	if _, err := uuid.Parse(projectID); err != nil {
		return nil, "", false, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	key, err := s.cursors.get(ctx)
	if err != nil {
		return nil, "", false, err
	}
	oldest := now.Add(-reqlog.Retention)
	if f.From.Before(oldest) {
		f.From = oldest
	}
	if f.To.IsZero() || f.To.After(now.Add(time.Hour)) {
		f.To = now.Add(time.Hour)
	}
	filters := strings.Join([]string{"console-requests", f.KeyPrefix, strconv.Itoa(f.Status), f.PathPrefix,
		f.From.UTC().Format(time.RFC3339), f.To.UTC().Format(time.RFC3339)}, "\x00")
	sql := `SELECT request_id::text, at, method, path, route, status, duration_us, key_prefix, idempotency_key
		FROM request_log WHERE project_id = $1 AND at >= $2 AND at < $3`
	args := []any{projectID, f.From, f.To}
	cond := func(expr string, v any) {
		args = append(args, v)
		sql += " AND " + strings.ReplaceAll(expr, "$?", "$"+strconv.Itoa(len(args)))
	}
	if f.KeyPrefix != "" {
		cond("key_prefix = $?", f.KeyPrefix)
	}
	if f.Status != 0 {
		cond("status = $?", f.Status)
	}
	if f.PathPrefix != "" {
		cond("starts_with(path, $?)", f.PathPrefix)
	}
	if cursor != "" {
		at, id, err := decodeTimeIDCursor(key, projectID, filters, cursor)
		if err != nil {
			return nil, "", false, err
		}
		args = append(args, at, id)
		sql += " AND (at, request_id) < ($" + strconv.Itoa(len(args)-1) + ", $" + strconv.Itoa(len(args)) + ")"
	}
	args = append(args, limit+1)
	sql += " ORDER BY at DESC, request_id DESC LIMIT $" + strconv.Itoa(len(args))
	rows, err := store.Query(ctx, s.pool, sql, args...)
	if err != nil {
		return nil, "", false, err
	}
	list, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (RequestRecord, error) {
		var rec RequestRecord
		var status int16
		err := r.Scan(&rec.RequestID, &rec.At, &rec.Method, &rec.Path, &rec.Route, &status, &rec.DurationMicros, &rec.KeyPrefix, &rec.IdempotencyKey)
		rec.Status = int(status)
		return rec, err
	})
	if err != nil {
		return nil, "", false, err
	}
	if len(list) > limit {
		list, more = list[:limit], true
		last := list[len(list)-1]
		next = encodeTimeIDCursor(key, projectID, filters, last.At, uuid.MustParse(last.RequestID))
	}
	return list, next, more, nil
}

// DayCount is a count of one day.
type DayCount struct {
	Day   time.Time
	Count int
}

// Overview is the project at a glance: orders and documents of today (UTC)
// and the last 7 days, orders waiting by reason and held by cause, the age
// of the oldest document not archived yet (the pipeline's lag) and the
// documents issued per day over the last 14 days (oldest first, every day).
type Overview struct {
	OrdersToday, Orders7d       int
	DocumentsToday, Documents7d int
	Waiting                     map[string]int // payment, fulfillment; at most WaitingCap each
	Held                        map[string]int // task type → orders
	Lag                         time.Duration  // 0: nothing waits to be archived
	PerDay                      []DayCount
}

// WaitingCap bounds the overview's count of the orders waiting for one
// reason ("10000+").
const WaitingCap = 10_000

// ProjectOverview returns the project's Overview as of now.
func (s *Service) ProjectOverview(ctx context.Context, projectID string, now time.Time) (Overview, error) {
	o := Overview{Waiting: map[string]int{}, Held: map[string]int{}}
	if _, err := uuid.Parse(projectID); err != nil {
		return o, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	today := now.UTC().Truncate(24 * time.Hour)
	week := today.AddDate(0, 0, -6)
	if err := store.QueryRow(ctx, s.pool, `SELECT count(*) FILTER (WHERE created_at >= $2), count(*)
		FROM orders WHERE project_id = $1 AND created_at >= $3`, projectID, today, week).Scan(&o.OrdersToday, &o.Orders7d); err != nil {
		return o, err
	}
	first := today.AddDate(0, 0, -13)
	rows, err := store.Query(ctx, s.pool, `SELECT issue_date, count(*) FROM invoice_view
		WHERE project_id = $1 AND issue_date >= $2 GROUP BY issue_date`, projectID, first)
	if err != nil {
		return o, err
	}
	counts := map[string]int{}
	var day time.Time
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&day, &n}, func() error { counts[day.Format(time.DateOnly)] = n; return nil }); err != nil {
		return o, err
	}
	for d := first; !d.After(today); d = d.AddDate(0, 0, 1) {
		c := counts[d.Format(time.DateOnly)]
		o.PerDay = append(o.PerDay, DayCount{Day: d, Count: c})
		if !d.Before(week) {
			o.Documents7d += c
		}
		if d.Equal(today) {
			o.DocumentsToday = c
		}
	}
	// Each reason found by a skip over the waiting index, its orders
	// counted up to WaitingCap: a backlog of many thousands costs no more
	// than WaitingCap entries a reason.
	rows, err = store.Query(ctx, s.pool, `WITH RECURSIVE r AS (
			(SELECT waiting_for FROM order_view WHERE project_id = $1 AND waiting_for <> 'none' ORDER BY waiting_for LIMIT 1)
			UNION ALL
			SELECT (SELECT v.waiting_for FROM order_view v WHERE v.project_id = $1 AND v.waiting_for <> 'none' AND v.waiting_for > r.waiting_for
				ORDER BY v.waiting_for LIMIT 1) FROM r WHERE r.waiting_for IS NOT NULL)
		SELECT r.waiting_for, (SELECT count(*) FROM (SELECT 1 FROM order_view v WHERE v.project_id = $1 AND v.waiting_for <> 'none'
			AND v.waiting_for = r.waiting_for LIMIT $2) c)
		FROM r WHERE r.waiting_for IS NOT NULL`, projectID, WaitingCap)
	if err != nil {
		return o, err
	}
	var reason string
	if _, err := pgx.ForEachRow(rows, []any{&reason, &n}, func() error { o.Waiting[reason] = n; return nil }); err != nil {
		return o, err
	}
	rows, err = store.Query(ctx, s.pool, `SELECT h->>'type', count(DISTINCT v.order_no) FROM order_view v, jsonb_array_elements(v.holds) h
		WHERE v.project_id = $1 AND v.holds <> '[]'::jsonb GROUP BY 1`, projectID)
	if err != nil {
		return o, err
	}
	if _, err := pgx.ForEachRow(rows, []any{&reason, &n}, func() error { o.Held[reason] = n; return nil }); err != nil {
		return o, err
	}
	var oldest *time.Time
	if err := store.QueryRow(ctx, s.pool, `SELECT min(p.created_at) FROM archive_pending p JOIN invoices i ON i.id = p.invoice_id
		WHERE p.project_id = $1 AND i.status = 'created'`, projectID).Scan(&oldest); err != nil {
		return o, err
	}
	if oldest != nil && now.After(*oldest) {
		o.Lag = now.Sub(*oldest)
	}
	return o, nil
}

// ArchiveEntries is a page of the year's archived live documents as GET
// /v1/archive lists them: after the signed cursor (bound to the project
// and the year), at most limit; next is always set.
func (s *Service) ArchiveEntries(ctx context.Context, projectID string, year int, cursor string, limit int) (list []ArchiveEntry, next string, more bool, err error) {
	key, err := s.cursors.get(ctx)
	if err != nil {
		return nil, "", false, err
	}
	filters := "archive\x00" + strconv.Itoa(year)
	var after int64
	if cursor != "" {
		if after, err = decodeCursor(key, projectID, filters, cursor); err != nil {
			return nil, "", false, err
		}
	}
	found, err := s.archivedInvoices(ctx, archiveScope{projectID: projectID, year: year, testMode: liveOnly()}, after, limit+1)
	if err != nil {
		return nil, "", false, err
	}
	if len(found) > limit {
		more, found = true, found[:limit]
	}
	list = make([]ArchiveEntry, 0, len(found))
	last := after
	for _, a := range found {
		list = append(list, a.entry())
		last = a.seq
	}
	return list, encodeCursor(key, projectID, filters, last), more, nil
}

// Download kinds ServeDownload serves.
const (
	DownloadDATEV   = "datev"
	DownloadOSS     = "oss"
	DownloadECSL    = "ecsl"
	DownloadArchive = "archive"
)

// ServeDownload answers a download of projectID exactly as the API's
// endpoint of kind does (the same handler: GET /v1/exports/datev,
// /v1/reports/oss, /v1/reports/ecsl, /v1/archive/export), reading its
// parameters (from, to; quarter; period; year) from r's query.
func (s *Service) ServeDownload(w http.ResponseWriter, r *http.Request, projectID, kind string) error {
	r = r.WithContext(httpx.WithPrincipal(r.Context(), httpx.Principal{ProjectID: projectID}))
	switch kind {
	case DownloadDATEV:
		return s.exportDATEV(w, r)
	case DownloadOSS:
		return s.reportOSS(w, r)
	case DownloadECSL:
		return s.reportECSL(w, r)
	case DownloadArchive:
		return s.exportArchive(w, r)
	}
	return apperr.New(apperr.NotFound, "not_found", "no download %q", kind)
}

// DownloadTimeout bounds one download (the archive export of a year is the longest).
const DownloadTimeout = archiveExportTimeout
