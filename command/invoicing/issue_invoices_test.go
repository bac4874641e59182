package invoicing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// invoicing is a project with the write endpoints, for the invoicing tests.
type invoicingEnv struct {
	t       *testing.T
	pool    *pgxpool.Pool
	svc     *invoicing.Service
	url     string
	project string
	key     string
}

func newInvoicing(t *testing.T, testMode bool, settings func(*project.Settings)) *invoicingEnv {
	t.Helper()
	pool := testenv.Pool(t)
	srv := httptest.NewServer((&httpx.Server{Routes: command.New(pool).Routes(), Auth: apikey.NewAuthenticator(pool)}).Handler())
	t.Cleanup(srv.Close)
	id := testenv.Project(t, pool, testMode)
	if settings != nil {
		if _, err := project.Apply(context.Background(), pool, id, project.Update{Settings: settings}); err != nil {
			t.Fatal(err)
		}
	}
	return &invoicingEnv{t: t, pool: pool, svc: invoicing.New(pool), url: srv.URL, project: id, key: testenv.Key(t, pool, id)}
}

// send posts an order body with a fresh Idempotency-Key and returns the
// status and the raw body.
func (v *invoicingEnv) send(body string) (int, []byte) {
	v.t.Helper()
	req, _ := http.NewRequest("POST", v.url+"/v1/orders", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+v.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes()
}

// place posts an order and returns its id.
func (v *invoicingEnv) place(body string) string {
	v.t.Helper()
	status, raw := v.send(body)
	var out httpx.Envelope[command.OrderResult]
	if err := json.Unmarshal(raw, &out); err != nil || status != http.StatusCreated {
		v.t.Fatalf("POST /v1/orders: %d %s", status, raw)
	}
	return out.Data.ID
}

func simpleOrder(orderNo string, extra string) string {
	return fmt.Sprintf(`{"orderNo":%q,"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"%s},
		"items":[{"name":"Tee","quantity":2,"unitNetCents":1000,"taxRate":7},{"name":"Tasse","quantity":1,"unitGrossCents":1190,"taxRate":19}],
		"requiresShipping":true,"shippingGrossCents":490}`, orderNo, extra)
}

func uniqueNo(prefix string) string { return prefix + "-" + uuid.NewString()[:13] }

var issueDay = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func (v *invoicingEnv) issue(orderID string) []invoicing.Issued {
	v.t.Helper()
	out, err := v.svc.IssueInvoices(context.Background(), v.project, orderID, invoicing.IssueDates{IssueDate: issueDay})
	if err != nil {
		v.t.Fatalf("IssueInvoices: %v", err)
	}
	return out
}

func TestIssueInvoicesNumbersValidatesAndRecords(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	first := v.issue(v.place(simpleOrder("I-1", "")))
	second := v.issue(v.place(simpleOrder("I-2", "")))
	if len(first) != 1 || first[0].Number != "TEST-2026-000001" || first[0].Status != "created" {
		t.Fatalf("first order: %+v", first)
	}
	if len(second) != 1 || second[0].Number != "TEST-2026-000002" {
		t.Fatalf("second order: %+v", second)
	}
	// Issuing again changes nothing.
	orderID := ""
	if err := v.pool.QueryRow(context.Background(), `SELECT order_id::text FROM invoices WHERE id = $1`, first[0].ID).Scan(&orderID); err != nil {
		t.Fatal(err)
	}
	if again := v.issue(orderID); len(again) != 1 || again[0].ID != first[0].ID {
		t.Errorf("second call: %+v, want the same document", again)
	}
	var status string
	var version int64
	var xml []byte
	var gross int64
	if err := v.pool.QueryRow(context.Background(), `SELECT o.status, o.version, i.xml, i.total_gross_cents FROM orders o JOIN invoices i ON i.order_id = o.id
		WHERE i.id = $1`, first[0].ID).Scan(&status, &version, &xml, &gross); err != nil {
		t.Fatal(err)
	}
	if status != "invoiced" || version < 2 {
		t.Errorf("order status %q version %d, want invoiced and a new version", status, version)
	}
	// 2 x 10.00 at 7 % + 11.90 gross at 19 % + 4.90 shipping paid: 21.40 + 11.90 + 4.90.
	if gross != 3820 {
		t.Errorf("gross %d, want 3820", gross)
	}
	if fs := einvoice.CheckXML(xml); !einvoice.Valid(fs) {
		t.Errorf("stored XML breaks rules: %v", fs)
	}
	if !bytes.Contains(xml, []byte("TEST-2026-000001")) {
		t.Error("XML lacks the invoice number")
	}
	var events []string
	rows, err := v.pool.Query(context.Background(), `SELECT event_type FROM outbox WHERE project_id = $1 ORDER BY id`, v.project)
	if err != nil {
		t.Fatal(err)
	}
	events, _ = pgx.CollectRows(rows, pgx.RowTo[string])
	// The relay may already have published (and deleted) some rows; what is
	// left must not contain anything but order and invoice events.
	for _, e := range events {
		if e != "order.created" && e != "order.updated" && e != "invoice.created" {
			t.Errorf("unexpected event %s", e)
		}
	}
}

// The order's save checks the version it stores inside its statement: the
// transaction's COMMIT goes out in the same batch, so a mismatch found by
// the client after reading the result would come after the commit.
func TestOrderSaveAtAStaleVersionCommitsNothing(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	ctx := context.Background()
	id := v.place(simpleOrder(uniqueNo("SV"), ""))
	state := func() (version int64, status string) {
		t.Helper()
		if err := v.pool.QueryRow(ctx, `SELECT version, status FROM orders WHERE id = $1`, id).Scan(&version, &status); err != nil {
			t.Fatal(err)
		}
		return version, status
	}
	version, status := state()
	err := v.svc.SaveOrderAt(ctx, v.project, id, version-1)
	if want := fmt.Sprintf("version %d stored, %d expected", version+1, version); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("save at a stale version: %v, want an error naming %q", err, want)
	}
	if got, _ := state(); got != version {
		t.Errorf("after the refused save: version %d, want %d (nothing committed)", got, version)
	}
	if err := v.svc.SaveOrderAt(ctx, v.project, id, version); err != nil {
		t.Fatalf("save at the order's version: %v", err)
	}
	if got, gotStatus := state(); got != version+1 || gotStatus != status {
		t.Errorf("after the save: version %d, status %s, want %d and %s", got, gotStatus, version+1, status)
	}
}

func TestIssueInvoicesOfAnUnknownOrder(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	_, err := v.svc.IssueInvoices(context.Background(), v.project, uuid.NewString(), invoicing.IssueDates{IssueDate: issueDay})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.NotFound || ae.Code != "order_not_found" {
		t.Fatalf("issue of an unknown order: %v, want order_not_found", err)
	}
}

func TestInvoiceNumbersAreGaplessUnderConcurrency(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, false, nil)
	var ids []string
	for i := range 24 {
		ids = append(ids, v.place(simpleOrder(fmt.Sprintf("C-%d", i), "")))
	}
	var mu sync.Mutex
	var numbers []string
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := v.svc.IssueInvoices(context.Background(), v.project, id, invoicing.IssueDates{IssueDate: issueDay})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			numbers = append(numbers, out[0].Number)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Strings(numbers)
	for i, n := range numbers {
		if want := fmt.Sprintf("RE-2026-%06d", i+1); n != want {
			t.Fatalf("numbers %v: position %d is %s, want %s", numbers, i, n, want)
		}
	}
}

func TestRolledBackInvoicingGivesItsNumberBack(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	id := v.place(simpleOrder("RB-1", ""))
	// A transaction that takes numbers and rolls back.
	tx, err := v.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(context.Background(), `INSERT INTO number_ranges (project_id, range_key, next_seq) VALUES ($1, 'TEST-2026', 6)
		ON CONFLICT (project_id, range_key) DO UPDATE SET next_seq = number_ranges.next_seq + 5`, v.project); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := v.issue(id); out[0].Number != "TEST-2026-000001" {
		t.Errorf("number %s after a rolled-back reservation, want TEST-2026-000001", out[0].Number)
	}
}

func TestGiftCardsGetTheirOwnDocument(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	id := v.place(`{"orderNo":"G-1","billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Buch","quantity":1,"unitGrossCents":2140,"taxRate":7},{"name":"Geschenkgutschein","quantity":1,"unitGrossCents":5000,"giftCard":true}],"requiresShipping":true}`)
	out := v.issue(id)
	if len(out) != 2 || out[0].Number != "TEST-2026-000001" || out[1].Number != "TEST-2026-000002" {
		t.Fatalf("documents %+v, want two consecutive numbers", out)
	}
	var kinds []string
	rows, _ := v.pool.Query(context.Background(), `SELECT type FROM invoices WHERE order_id = $1 ORDER BY seq`, id)
	kinds, _ = pgx.CollectRows(rows, pgx.RowTo[string])
	if fmt.Sprint(kinds) != "[invoice voucher_sale]" {
		t.Errorf("document types %v", kinds)
	}
}

func TestHeldOrdersTakeNoNumber(t *testing.T) {
	t.Parallel()
	noPhone := func(s *project.Settings) { *s = testenv.DemoSeller(); s.ContactPhone = "" }
	v := newInvoicing(t, true, noPhone)
	id := v.place(simpleOrder("H-1", `,"leitweg_id":"04011000-1234512345-06"`))
	_, err := v.svc.IssueInvoices(context.Background(), v.project, id, invoicing.IssueDates{IssueDate: issueDay})
	var held *invoicing.HeldError
	if !errors.As(err, &held) || held.Kind != orders.HoldContactPhone {
		t.Fatalf("err %v, want held %s", err, orders.HoldContactPhone)
	}
	// The phone is the project's: the project's one task of it holds the order.
	var tasks int
	if err := v.pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks t JOIN held_orders h ON h.task_id = t.id
		WHERE t.project_id = $1 AND t.kind = $2 AND t.subject = 'project' AND h.order_no = 'H-1' AND h.released_at IS NULL AND t.id::text = $3`,
		v.project, orders.HoldContactPhone, held.TaskID).Scan(&tasks); err != nil || tasks != 1 {
		t.Errorf("tasks %d (%v), want 1", tasks, err)
	}
	// Once the phone is set, the same order is issued as XRechnung with the first number.
	if _, err := project.Apply(context.Background(), v.pool, v.project, project.Update{Settings: func(s *project.Settings) { s.ContactPhone = "+49 30 1234567" }}); err != nil {
		t.Fatal(err)
	}
	out := v.issue(id)
	var format string
	if err := v.pool.QueryRow(context.Background(), `SELECT format FROM invoices WHERE id = $1`, out[0].ID).Scan(&format); err != nil {
		t.Fatal(err)
	}
	if out[0].Number != "TEST-2026-000001" || format != "xrechnung" {
		t.Errorf("after setting the phone: %+v format %s", out, format)
	}

	// Accrual accounting, a service without period and without product default: held.
	w := newInvoicing(t, true, nil)
	sid := w.place(`{"orderNo":"S-1","billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Abo","quantity":1,"unitNetCents":990,"taxRate":19}]}`)
	_, err = w.svc.IssueInvoices(context.Background(), w.project, sid, invoicing.IssueDates{IssueDate: issueDay})
	if !errors.As(err, &held) || held.Kind != orders.HoldRevenueRecognition {
		t.Fatalf("err %v, want held %s", err, orders.HoldRevenueRecognition)
	}
	// With a service period it is issued.
	pid := w.place(`{"orderNo":"S-2","billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Abo","quantity":1,"unitNetCents":990,"taxRate":19}],"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"}}`)
	if out := w.issue(pid); out[0].Number != "TEST-2026-000001" || out[0].Status != "created" {
		t.Errorf("service with period: %+v", out)
	}
}

func TestFailingValidationHoldsWithoutANumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A seller with a tax number but neither VAT ID nor register entry
	// cannot issue a valid invoice (BR-CO-26), which the project's settings
	// do not show before the order is computed: nothing is recorded, no
	// number is taken, and the order is held with its own task listing the
	// rules; once the seller data is there, the same order is issued with
	// the range's first number.
	v := newInvoicing(t, true, func(s *project.Settings) { *s = testenv.DemoSeller(); s.SellerVATID = "" })
	id := v.place(simpleOrder("F-1", ""))
	_, err := v.svc.IssueInvoices(ctx, v.project, id, invoicing.IssueDates{IssueDate: issueDay})
	var held *invoicing.HeldError
	if !errors.As(err, &held) || held.Kind != orders.TaskValidationFailed {
		t.Fatalf("IssueInvoices = %v, want a hold %s", err, orders.TaskValidationFailed)
	}
	var details []byte
	if err := v.pool.QueryRow(ctx, `SELECT details FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = 'F-1' AND status = 'open'`,
		v.project, orders.TaskValidationFailed).Scan(&details); err != nil {
		t.Fatalf("no review task: %v", err)
	}
	if !bytes.Contains(details, []byte("BR-CO-26")) {
		t.Errorf("task %s lacks the rule ids", details)
	}
	var docs, next int
	if err := v.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM invoices WHERE order_id = $1),
		coalesce((SELECT max(next_seq) FROM number_ranges WHERE project_id = $2), 1)`, id, v.project).Scan(&docs, &next); err != nil {
		t.Fatal(err)
	}
	if docs != 0 || next != 1 {
		t.Errorf("%d documents recorded, next number %d: a failing document must take no number", docs, next)
	}

	if _, err := project.Apply(ctx, v.pool, v.project, project.Update{Settings: func(s *project.Settings) { *s = testenv.DemoSeller() }}); err != nil {
		t.Fatal(err)
	}
	out := v.issue(id)
	if len(out) != 1 || out[0].Status != "created" || out[0].Number != "TEST-2026-000001" {
		t.Fatalf("after the fix: %+v", out)
	}
	var status string
	if err := v.pool.QueryRow(ctx, `SELECT status FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = 'F-1'`,
		v.project, orders.TaskValidationFailed).Scan(&status); err != nil || status != "resolved" {
		t.Errorf("task after the fix: %q %v", status, err)
	}
}

func TestArchiveInvoiceIsWriteOnceAndRetriesFailedDocuments(t *testing.T) {
	t.Parallel()
	c := testenv.S3(t)
	a := archive.New(c, "test-cmd-archive-"+strings.ReplaceAll(uuid.NewString(), "-", "")[:12])
	if err := a.EnsureBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := newInvoicing(t, true, nil)
	doc := v.issue(v.place(simpleOrder("A-1", "")))[0]
	ctx := context.Background()
	for range 2 { // the second call changes nothing
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, doc.ID); err != nil {
			t.Fatal(err)
		}
	}
	var status string
	var version int64
	var stored []byte
	if err := v.pool.QueryRow(ctx, `SELECT status, version, xml FROM invoices WHERE id = $1`, doc.ID).Scan(&status, &version, &stored); err != nil {
		t.Fatal(err)
	}
	if status != "archived" || version != 2 {
		t.Errorf("status %s version %d, want archived 2", status, version)
	}
	// A ZUGFeRD invoice's XML is archived inside its PDF/A-3.
	pdf, _, err := a.Get(ctx, archive.InvoicePDFKey(v.project, doc.ID))
	if err == nil {
		var got []byte
		if got, err = archive.EmbeddedXML(pdf); err == nil && !bytes.Equal(got, stored) {
			err = errors.New("other bytes")
		}
	}
	if err != nil {
		t.Errorf("archived XML differs from the issued one (%v)", err)
	}
	// A document that broke rules (recorded as failed by earlier versions,
	// which kept such documents) is never archived.
	broken := v.issue(v.place(simpleOrder("A-2", "")))[0]
	if _, err := v.pool.Exec(ctx, `UPDATE invoices SET status = 'failed', failed_rules = '{BR-CO-26}' WHERE id = $1`, broken.ID); err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, broken.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Stat(ctx, archive.InvoicePDFKey(v.project, broken.ID)); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("a document that broke rules reached the archive: %v", err)
	}
	// A document failed in archiving is archived by the retry, under its
	// number, and its failure is cleared.
	failed := v.issue(v.place(simpleOrder("A-3", "")))[0]
	if _, err := v.pool.Exec(ctx, `UPDATE invoices SET status = 'failed', failure_reason = 'archive down', version = 2 WHERE id = $1`, failed.ID); err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, failed.ID); err != nil {
		t.Fatal(err)
	}
	var number string
	var reason *string
	if err := v.pool.QueryRow(ctx, `SELECT status, version, number, failure_reason FROM invoices WHERE id = $1`, failed.ID).
		Scan(&status, &version, &number, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "archived" || version != 3 || number != failed.Number || reason != nil {
		t.Errorf("failed document after the retry: %s version %d number %s reason %v, want archived 3 %s without reason",
			status, version, number, reason, failed.Number)
	}
	if _, err := a.Stat(ctx, archive.InvoicePDFKey(v.project, failed.ID)); err != nil {
		t.Errorf("the failed document's retry did not archive it: %v", err)
	}
}

// TestAnInvoicesXMLIsStoredWithLZ4: an issued invoice's XML and document
// are compressed with lz4 (migration 00224), not pglz, which cost about
// 150 µs of PostgreSQL's CPU an invoice under the number range's lock; and
// the XML reads back whole: it still passes the rules it was issued by.
func TestAnInvoicesXMLIsStoredWithLZ4(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	ctx := context.Background()
	d := v.issue(v.place(simpleOrder(uniqueNo("LZ"), "")))[0]
	var xmlMethod, documentMethod string // "none": stored uncompressed
	var xml []byte
	if err := v.pool.QueryRow(ctx, `SELECT coalesce(pg_column_compression(xml), 'none'), coalesce(pg_column_compression(document), 'none'), xml
		FROM invoices WHERE id = $1`, d.ID).Scan(&xmlMethod, &documentMethod, &xml); err != nil {
		t.Fatal(err)
	}
	if xmlMethod != "lz4" {
		t.Errorf("the XML (%d bytes) is stored compressed with %s, want lz4", len(xml), xmlMethod)
	}
	if documentMethod != "lz4" && documentMethod != "none" {
		t.Errorf("the document is stored compressed with %s, want lz4 (or not compressed)", documentMethod)
	}
	if fs := einvoice.CheckXML(xml); !einvoice.Valid(fs) || !strings.Contains(string(xml), "<ram:ID>"+d.Number+"</ram:ID>") {
		t.Errorf("the stored XML of %s does not read back as issued: %v", d.Number, fs)
	}
}
