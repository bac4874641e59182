package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/query"
)

// The pages of a project's records: orders, invoices and credit notes,
// API activity, exports and the archive. They read through query, as the
// API does; an auditor sees only the documents of the years under audit.

// listPage is how many rows a listing shows at once.
const listPage = 50

// auditYears are the years an auditor may see; nil for every other role
// (no limit).
func auditYears(m *account.Membership) []int {
	if m == nil || m.Role != account.Auditor {
		return nil
	}
	if m.AuditYears == nil {
		return []int{}
	}
	return m.AuditYears
}

// yearAllowed reports whether the member may see documents of year.
func yearAllowed(m *account.Membership, year int) bool {
	ys := auditYears(m)
	return ys == nil || slices.Contains(ys, year)
}

// issueYear is the year of a document's issue date (YYYY-MM-DD).
func issueYear(inv query.Invoice) int {
	y, _ := strconv.Atoi(strings.SplitN(inv.IssueDate, "-", 2)[0])
	return y
}

type ordersData struct {
	Q      string
	Orders []query.OrderRow
	Next   string
	Search bool
}

// orders lists the project's orders newest first, or finds them by order
// number, payment reference, invoice number or e-mail.
func (c *Console) orders(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	d := ordersData{Q: strings.TrimSpace(q.Get("q"))}
	var err error
	if d.Q != "" {
		d.Search = true
		d.Orders, err = c.queries.FindOrders(r.Context(), v.Member.ProjectID, d.Q)
	} else {
		d.Orders, d.Next, _, err = c.queries.ListOrders(r.Context(), v.Member.ProjectID, v.Session.ViewTest, q.Get("cursor"), listPage)
	}
	if err != nil {
		return err
	}
	if d.Search && len(d.Orders) == 1 && q.Get("list") == "" {
		http.Redirect(w, r, v.OrderURL(d.Orders[0].OrderNo), http.StatusSeeOther)
		return nil
	}
	v.Title = v.T("orders.title")
	v.Data = d
	c.render(w, http.StatusOK, "orders", v)
	return nil
}

type orderData struct {
	Order  query.OrderFacts
	Status *orderStatus
}

// orderStatus is the order's status record (the read model the API serves).
type orderStatus struct {
	Status, FulfillmentStatus, WaitingFor, Payment string
	WaitingForAll                                  []string
	Holds                                          []struct{ Type, TaskID string }
}

func (c *Console) order(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	orderNo := r.PathValue("order") // unescaped by the mux: "A%2FB" is "A/B"
	if r.PathValue("order") == "" {
		orderNo = r.URL.Query().Get("no")
	}
	f, err := c.queries.Order(ctx, v.Member.ProjectID, orderNo)
	if err != nil {
		return err
	}
	d := orderData{Order: f}
	if _, body, err := c.queries.OrderStatus(ctx, v.Member.ProjectID, orderNo); err == nil {
		var st orderStatus
		if err := decodeJSON(body, &st); err == nil {
			d.Status = &st
		}
	}
	v.Title = v.T("order.title") + " " + orderNo
	v.Data = d
	c.render(w, http.StatusOK, "order", v)
	return nil
}

type invoicesData struct {
	Period, Kind, Status, Mode string
	Invoices                   []query.Invoice
	Next                       string
	Kinds, Statuses            []string
	Years                      []int // an auditor's
}

// parsePeriod reads a period filter: YYYY, YYYY-MM or YYYY-MM-DD..YYYY-MM-DD.
func parsePeriod(s string) (from, to *time.Time, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil, nil
	}
	bad := apperr.Field("period", "a period is YYYY, YYYY-MM or YYYY-MM-DD..YYYY-MM-DD, got %q", s)
	if a, b, ok := strings.Cut(s, ".."); ok {
		f, err1 := time.Parse(time.DateOnly, strings.TrimSpace(a))
		t, err2 := time.Parse(time.DateOnly, strings.TrimSpace(b))
		if err1 != nil || err2 != nil || t.Before(f) {
			return nil, nil, bad
		}
		return &f, &t, nil
	}
	if f, err := time.Parse("2006-01", s); err == nil {
		t := f.AddDate(0, 1, -1)
		return &f, &t, nil
	}
	if f, err := time.Parse("2006", s); err == nil {
		t := f.AddDate(1, 0, -1)
		return &f, &t, nil
	}
	return nil, nil, bad
}

// invoices lists the project's documents (the listing of GET /v1/invoices)
// filtered by period, kind, status and live or test.
func (c *Console) invoices(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	d := invoicesData{Period: q.Get("period"), Kind: q.Get("kind"), Status: q.Get("status"), Mode: q.Get("mode"),
		Kinds: []string{"invoice", "voucher_sale", "cancellation", "credit_note"}, Statuses: query.InvoiceStatuses,
		Years: auditYears(v.Member)}
	f := query.InvoiceFilter{Years: auditYears(v.Member)}
	var err error
	if f.From, f.To, err = parsePeriod(d.Period); err != nil {
		return err
	}
	if d.Kind != "" && !slices.Contains(d.Kinds, d.Kind) {
		return apperr.Field("kind", "kind must be one of %s, got %q", strings.Join(d.Kinds, ", "), d.Kind)
	}
	if d.Status != "" && !slices.Contains(d.Statuses, d.Status) {
		return apperr.Field("status", "status must be one of %s, got %q", strings.Join(d.Statuses, ", "), d.Status)
	}
	f.Type, f.Status = d.Kind, d.Status
	if d.Mode == "" { // the data the session looks at (the header's switch)
		d.Mode = "live"
		if v.Session.ViewTest {
			d.Mode = "test"
		}
	}
	switch d.Mode {
	case "all":
	case "live", "test":
		t := d.Mode == "test"
		f.TestMode = &t
	default:
		return apperr.Field("mode", "mode must be live, test or all, got %q", d.Mode)
	}
	page, err := c.queries.ListInvoices(r.Context(), v.Member.ProjectID, f, q.Get("cursor"), listPage)
	if err != nil {
		return err
	}
	d.Invoices = page.Data
	if page.HasMore && page.NextCursor != nil {
		d.Next = *page.NextCursor
	}
	v.Title = v.T("invoices.title")
	v.Data = d
	c.render(w, http.StatusOK, "invoices", v)
	return nil
}

// NextQuery is the query of the listing's next page.
func (d invoicesData) NextQuery() string {
	q := url.Values{"cursor": {d.Next}}
	for k, val := range map[string]string{"period": d.Period, "kind": d.Kind, "status": d.Status, "mode": d.Mode} {
		if val != "" {
			q.Set(k, val)
		}
	}
	return q.Encode()
}

// document finds the member's document of the request: another project's,
// an unknown one, or (auditors) one of a year not under audit is 404.
func (c *Console) document(r *http.Request, v *view) (query.Invoice, error) {
	inv, err := c.queries.InvoiceByID(r.Context(), v.Member.ProjectID, r.PathValue("invoice"))
	if err != nil {
		return inv, err
	}
	if !yearAllowed(v.Member, issueYear(inv)) {
		return inv, errNotFound
	}
	return inv, nil
}

type invoiceData struct {
	Invoice    query.Invoice
	Chain      []query.Invoice
	Archived   bool
	Checked    bool     // the archived XML was checked
	Findings   []string // rule findings of the check
	CheckError string
}

func (c *Console) invoice(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	inv, err := c.document(r, v)
	if err != nil {
		return err
	}
	d := invoiceData{Invoice: inv, Archived: inv.Status == "archived"}
	chain, err := c.queries.OrderDocuments(ctx, v.Member.ProjectID, inv.OrderNo)
	if err != nil {
		return err
	}
	for _, x := range chain {
		if yearAllowed(v.Member, issueYear(x)) {
			d.Chain = append(d.Chain, x)
		}
	}
	// The validation result: the archived XML checked again against the
	// EN 16931 / XRechnung rules.
	if d.Archived && inv.XMLURL != nil {
		xml, err := c.queries.Document(ctx, v.Member.ProjectID, inv, "xml")
		if err != nil {
			d.CheckError = err.Error()
		} else {
			d.Checked = true
			for _, f := range einvoice.CheckXML(xml) {
				d.Findings = append(d.Findings, fmt.Sprint(f))
			}
		}
	}
	v.Title = v.T("invoice.title") + " " + inv.Number
	v.Data = d
	c.render(w, http.StatusOK, "invoice", v)
	return nil
}

// documentFile serves a document's archived PDF or XML, the bytes the API
// serves: the PDF inline (the document page shows it in a frame of this
// site only) unless ?download=1, the XML as a download.
func (c *Console) documentFile(kind string) projectHandler {
	return func(c *Console, w http.ResponseWriter, r *http.Request, v *view) error {
		inv, err := c.document(r, v)
		if err != nil {
			return err
		}
		doc, err := c.queries.Document(r.Context(), v.Member.ProjectID, inv, kind)
		if err != nil {
			return err
		}
		disposition := "attachment"
		if kind == "pdf" && r.URL.Query().Get("download") == "" {
			disposition = "inline"
			// Only this route may be framed, and only by the console itself.
			w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'self'")
			w.Header().Set("X-Frame-Options", "SAMEORIGIN")
		}
		w.Header().Set("Content-Type", query.DocumentType(kind))
		w.Header().Set("Content-Disposition", disposition+`; filename="`+query.DocumentFileName(inv, kind)+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		_, err = w.Write(doc)
		return err
	}
}

type activityData struct {
	RequestID, Key, Status, Path, From, To string
	Requests                               []query.RequestRecord
	Next                                   string
}

// NextQuery is the query of the listing's next page.
func (d activityData) NextQuery() string {
	q := url.Values{"cursor": {d.Next}}
	for k, val := range map[string]string{"key": d.Key, "status": d.Status, "path": d.Path, "from": d.From, "to": d.To} {
		if val != "" {
			q.Set(k, val)
		}
	}
	return q.Encode()
}

// parseMoment reads a time filter: YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC).
func parseMoment(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", time.DateOnly, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, apperr.Field(field, "a time YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC), got %q", s)
}

// activity searches the project's API requests of the last 30 days.
func (c *Console) activity(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	d := activityData{RequestID: strings.TrimSpace(q.Get("requestId")), Key: strings.TrimSpace(q.Get("key")), Status: q.Get("status"),
		Path: strings.TrimSpace(q.Get("path")), From: q.Get("from"), To: q.Get("to")}
	f := query.RequestFilter{RequestID: d.RequestID, KeyPrefix: d.Key, PathPrefix: d.Path}
	var err error
	if d.Status != "" {
		if f.Status, err = strconv.Atoi(d.Status); err != nil || f.Status < 100 || f.Status > 599 {
			return apperr.Field("status", "an HTTP status from 100 to 599, got %q", d.Status)
		}
	}
	if f.From, err = parseMoment("from", d.From); err != nil {
		return err
	}
	if f.To, err = parseMoment("to", d.To); err != nil {
		return err
	}
	if !f.To.IsZero() && len(d.To) == len(time.DateOnly) {
		f.To = f.To.AddDate(0, 0, 1) // the whole day
	}
	d.Requests, d.Next, _, err = c.queries.SearchRequests(r.Context(), v.Member.ProjectID, f, q.Get("cursor"), listPage, c.cfg.Now())
	if err != nil {
		return err
	}
	v.Title = v.T("activity.title")
	v.Data = d
	c.render(w, http.StatusOK, "activity", v)
	return nil
}

func (c *Console) request(w http.ResponseWriter, r *http.Request, v *view) error {
	rec, err := c.queries.Request(r.Context(), v.Member.ProjectID, r.PathValue("request"))
	if err != nil {
		return err
	}
	v.Title = v.T("activity.request") + " " + rec.RequestID
	v.Data = rec
	c.render(w, http.StatusOK, "request", v)
	return nil
}

type exportsData struct {
	Year                  int
	From, To, Quarter, Mo string
	Years                 []int // an auditor's
}

// exports is the page of the downloads: DATEV, OSS, EC sales list.
func (c *Console) exports(w http.ResponseWriter, r *http.Request, v *view) error {
	now := c.cfg.Now().UTC()
	y := now.Year()
	if ys := auditYears(v.Member); len(ys) > 0 {
		y = ys[len(ys)-1]
	}
	d := exportsData{Year: y, From: fmt.Sprintf("%d-01-01", y), To: fmt.Sprintf("%d-12-31", y),
		Quarter: fmt.Sprintf("%d-Q%d", y, (int(now.Month())-1)/3+1), Mo: fmt.Sprintf("%d-%02d", y, now.Month()), Years: auditYears(v.Member)}
	v.Title = v.T("exports.title")
	v.Data = d
	c.render(w, http.StatusOK, "exports", v)
	return nil
}

// downloadYears are the years a download's parameters reach (DATEV from and
// to, OSS quarter, EC sales list period, archive year); nil when they
// cannot be read (the download itself then answers why).
func downloadYears(kind string, q url.Values) []int {
	year := func(s string) int {
		if len(s) < 4 {
			return 0
		}
		y, err := strconv.Atoi(s[:4])
		if err != nil {
			return 0
		}
		return y
	}
	var ys []int
	switch kind {
	case query.DownloadDATEV:
		ys = []int{year(q.Get("from")), year(q.Get("to"))}
	case query.DownloadOSS:
		ys = []int{year(q.Get("quarter"))}
	case query.DownloadECSL:
		ys = []int{year(q.Get("period"))}
	case query.DownloadArchive:
		ys = []int{year(q.Get("year"))}
	}
	for _, y := range ys {
		if y == 0 {
			return nil
		}
	}
	return ys
}

// download streams an export or report through the API's own handler; an
// auditor gets only those of the years under audit.
func (c *Console) download(kind string) projectHandler {
	return func(c *Console, w http.ResponseWriter, r *http.Request, v *view) error {
		if auditYears(v.Member) != nil {
			ys := downloadYears(kind, r.URL.Query())
			if ys == nil {
				return apperr.Field("year", "the period's year is missing")
			}
			for _, y := range ys {
				if !yearAllowed(v.Member, y) {
					return errNotFound
				}
			}
		}
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(query.DownloadTimeout + 5*time.Second))
		return c.queries.ServeDownload(w, r, v.Member.ProjectID, kind)
	}
}

type archiveData struct {
	Year    int
	Years   []int
	Entries []query.ArchiveEntry
	Next    string
	Verify  *query.VerifyReport
}

// archiveYear is the year of an archive page: ?year=, else the newest year
// the member may see (an auditor's newest year under audit).
func archiveYear(r *http.Request, v *view, now time.Time) (int, error) {
	y := now.UTC().Year()
	if ys := auditYears(v.Member); len(ys) > 0 {
		y = ys[len(ys)-1]
	}
	if s := r.URL.Query().Get("year"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || len(s) != 4 || n < 2000 {
			return 0, apperr.Field("year", "a year YYYY, got %q", s)
		}
		y = n
	}
	if !yearAllowed(v.Member, y) {
		return 0, errNotFound
	}
	return y, nil
}

// archive lists the year's archived documents with their objects and hash chain.
func (c *Console) archive(w http.ResponseWriter, r *http.Request, v *view) error {
	y, err := archiveYear(r, v, c.cfg.Now())
	if err != nil {
		return err
	}
	d := archiveData{Year: y, Years: auditYears(v.Member)}
	var more bool
	d.Entries, d.Next, more, err = c.queries.ArchiveEntries(r.Context(), v.Member.ProjectID, y, r.URL.Query().Get("cursor"), listPage)
	if err != nil {
		return err
	}
	if !more {
		d.Next = ""
	}
	v.Title = fmt.Sprintf("%s %d", v.T("archive.title"), y)
	v.Data = d
	c.render(w, http.StatusOK, "archive", v)
	return nil
}

// verify re-reads and checks the year's archived objects and hash chains
// (as o2i archive verify does) and shows the result.
func (c *Console) verify(w http.ResponseWriter, r *http.Request, v *view) error {
	y, err := archiveYear(r, v, c.cfg.Now())
	if err != nil {
		return err
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(query.DownloadTimeout + 5*time.Second))
	rep, err := c.queries.VerifyArchive(r.Context(), v.Member.ProjectID, y, nil)
	if err != nil {
		return err
	}
	v.Title = fmt.Sprintf("%s %d", v.T("archive.verify.title"), y)
	v.Data = archiveData{Year: y, Years: auditYears(v.Member), Verify: &rep}
	c.render(w, http.StatusOK, "verify", v)
	return nil
}

func decodeJSON(b []byte, v any) error { return json.Unmarshal(b, v) }
