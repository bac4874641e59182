package invoicing_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/testenv"
)

// The states of an issued document: created -> archived when archiving
// succeeds in the invoicer's tries, created -> failed when rendering or
// archiving still fails after them (the number stays taken), failed ->
// archived when the reconciler's retry completes that same document.

// workingArchive is the local stack's archive as the service configures it.
func workingArchive(t *testing.T) *archive.Archive {
	t.Helper()
	c := testenv.S3(t)
	return archive.New(c, testenv.Env("O2I_S3_BUCKET")).WithTest(archive.NewTest(c, testenv.Env("O2I_S3_TEST_BUCKET")))
}

// failingArchive is an archive whose bucket does not exist: every write
// fails, as in an object-store outage.
func failingArchive(t *testing.T) *archive.Archive {
	t.Helper()
	return archive.New(testenv.S3(t), "o2i-missing-"+strings.ReplaceAll(uuid.NewString(), "-", "")[:16])
}

// invoicer is an invoicer over v's service that archives in a and opens
// the review task of a failing event at its first failure. Its retry table
// items are its project's own (a group of its own): no invoicer running
// elsewhere retries them.
func (v *invoicingEnv) invoicer(a *archive.Archive) *invoicing.Invoicer {
	iv := invoicing.NewInvoicer(v.svc, a, testenv.KafkaBrokers())
	iv.AttemptTimeout, iv.RetriesBeforeTask = 20*time.Second, 0
	iv.UseGroup(event.TopicOrders, "o2i-invoicer-test-"+v.project)
	return iv
}

// dueOrder places a goods order that waits for its fulfillment (nothing in
// its own events makes it due) and returns its id with an order event that
// says it is due (shipped, paid with store credit): what makes the invoicer
// issue and archive its invoice.
func (v *invoicingEnv) dueOrder(orderNo string) (string, []byte) {
	v.t.Helper()
	id := v.place(simpleOrder(orderNo, ""))
	total := int64(4820)
	now := time.Now().UTC()
	ev, err := event.New(event.OrderFulfilled, v.project, "order", id, orderNo, 2, now, event.Order{
		ID: id, ProjectID: v.project, Status: "created", Version: 2, FulfillmentStatus: "fulfilled", CreatedAt: now, UpdatedAt: now,
		OrderContent: event.OrderContent{OrderNo: orderNo, RequiresShipping: true, FinancialStatus: "paid", GrossTotalCents: &total,
			CreditRedemptions: []event.CreditRedemption{{Type: "referral_credit", AmountCents: total, ExternalRef: "ref-" + orderNo}}}})
	if err != nil {
		v.t.Fatal(err)
	}
	raw, err := event.Encode(ev)
	if err != nil {
		v.t.Fatal(err)
	}
	return id, raw
}

// docState is an issued document as the write model has it.
type docState struct {
	id, number, status string
	version            int64
	reason, taskID     *string
	nextSeq            int64 // the number range's next number
}

// document returns the order's only document.
func (v *invoicingEnv) document(orderID string) docState {
	v.t.Helper()
	var d docState
	err := v.pool.QueryRow(context.Background(), `SELECT i.id::text, i.number, i.status, i.version, i.failure_reason, i.failure_task_id::text, r.next_seq
		FROM invoices i JOIN number_ranges r ON r.project_id = i.project_id AND r.range_key = i.range_key
		WHERE i.order_id = $1`, orderID).Scan(&d.id, &d.number, &d.status, &d.version, &d.reason, &d.taskID, &d.nextSeq)
	if err != nil {
		v.t.Fatalf("the order's document: %v", err)
	}
	return d
}

// invoiceEvents returns the events of the document in outbox order.
func (v *invoicingEnv) invoiceEvents(invoiceID string) []event.Event {
	v.t.Helper()
	rows, err := v.pool.Query(context.Background(), `SELECT payload FROM outbox WHERE project_id = $1 ORDER BY id`, v.project)
	if err != nil {
		v.t.Fatal(err)
	}
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		v.t.Fatal(err)
	}
	var out []event.Event
	for _, p := range payloads {
		ev, err := event.Decode(p)
		if err != nil {
			v.t.Fatal(err)
		}
		if ev.AggregateType == "invoice" && ev.AggregateID == invoiceID {
			out = append(out, ev)
		}
	}
	return out
}

// lastInvoiceEvent returns the document's newest event and its data.
func (v *invoicingEnv) lastInvoiceEvent(invoiceID string) (string, event.Invoice) {
	v.t.Helper()
	evs := v.invoiceEvents(invoiceID)
	if len(evs) == 0 {
		v.t.Fatalf("no event of invoice %s", invoiceID)
	}
	last := evs[len(evs)-1]
	var inv event.Invoice
	if err := json.Unmarshal(last.Data, &inv); err != nil {
		v.t.Fatal(err)
	}
	return last.Type, inv
}

// task returns the id and status of the order's invoicing_failed task, or
// empty strings when it has none.
func (v *invoicingEnv) task(orderNo string) (id, status string) {
	v.t.Helper()
	err := v.pool.QueryRow(context.Background(), `SELECT id::text, status FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3
		ORDER BY created_at DESC LIMIT 1`, v.project, invoicing.TaskInvoicingFailed, orderNo).Scan(&id, &status)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		v.t.Fatal(err)
	}
	return id, status
}

// deadLetter returns whether the order has an open dead letter.
func (v *invoicingEnv) openDeadLetter(orderID string) bool {
	v.t.Helper()
	var open bool
	if err := v.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM invoicing_dead_letters WHERE order_id = $1 AND resolved_at IS NULL)`,
		orderID).Scan(&open); err != nil {
		v.t.Fatal(err)
	}
	return open
}

func TestIssuedDocumentCreatedToArchived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	id, due := v.dueOrder(uniqueNo("CA"))
	if err := v.invoicer(workingArchive(t)).Process(ctx, due); err != nil {
		t.Fatal(err)
	}
	d := v.document(id)
	if d.status != "archived" || d.version != 2 || d.reason != nil || d.taskID != nil || d.nextSeq != 2 {
		t.Errorf("document %+v, want archived, version 2, no failure, one number taken", d)
	}
	if v.openDeadLetter(id) {
		t.Error("a dead letter for an order archived in time")
	}
	var types []string
	for _, ev := range v.invoiceEvents(d.id) {
		types = append(types, ev.Type)
	}
	if want := []string{event.InvoiceCreated, event.InvoiceArchived}; strings.Join(types, ",") != strings.Join(want, ",") {
		t.Errorf("events %v, want %v", types, want)
	}
}

// failedDocument issues an order's invoice with an invoicer whose archive
// fails in every try and returns the order's number, id and document.
func (v *invoicingEnv) failedDocument() (string, string, docState) {
	v.t.Helper()
	orderNo := uniqueNo("CF")
	id, due := v.dueOrder(orderNo)
	if err := v.invoicer(failingArchive(v.t)).Process(context.Background(), due); err != nil {
		v.t.Fatal(err)
	}
	v.t.Cleanup(func() { // no retries of it by invoicers running elsewhere
		_, _ = v.pool.Exec(context.Background(), `UPDATE invoicing_dead_letters SET resolved_at = now() WHERE order_id = $1 AND resolved_at IS NULL`, id)
	})
	return orderNo, id, v.document(id)
}

func TestIssuedDocumentCreatedToFailed(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	orderNo, id, failed := v.failedDocument()
	taskID, taskStatus := v.task(orderNo)
	if failed.status != "failed" || failed.version != 2 || failed.nextSeq != 2 {
		t.Fatalf("document %+v, want failed, version 2, one number taken", failed)
	}
	if failed.reason == nil || !strings.Contains(*failed.reason, "archive invoice "+failed.id) {
		t.Errorf("failure reason %v, want the archiving error", failed.reason)
	}
	if taskStatus != "open" || failed.taskID == nil || *failed.taskID != taskID {
		t.Errorf("failure task %v, want the open %s task %s (%s)", failed.taskID, invoicing.TaskInvoicingFailed, taskID, taskStatus)
	}
	if !v.openDeadLetter(id) {
		t.Error("no open dead letter")
	}
	typ, inv := v.lastInvoiceEvent(failed.id)
	if typ != event.InvoiceFailed || inv.Status != "failed" || inv.Version != 2 || inv.Number != failed.number ||
		inv.TaskID != taskID || inv.FailureReason != *failed.reason {
		t.Errorf("last event %s %+v, want invoice.failed with the reason and the task", typ, inv)
	}
}

func TestIssuedDocumentFailedToArchived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	orderNo, id, failed := v.failedDocument()
	if failed.status != "failed" {
		t.Fatalf("document %+v, want failed", failed)
	}
	// The reconciler's retry archives the same document under the same
	// number and resolves the task.
	if _, err := v.pool.Exec(ctx, `UPDATE invoicing_dead_letters SET next_retry_at = now() WHERE order_id = $1 AND resolved_at IS NULL`, id); err != nil {
		t.Fatal(err)
	}
	a := workingArchive(t)
	if err := v.invoicer(a).RetryDeadLetters(ctx); err != nil {
		t.Fatal(err)
	}
	archived := v.document(id)
	if archived.id != failed.id || archived.number != failed.number || archived.status != "archived" || archived.version != 3 ||
		archived.reason != nil || archived.taskID != nil || archived.nextSeq != 2 {
		t.Errorf("after the retry %+v, want %s archived under %s, version 3, no failure, no number taken", archived, failed.id, failed.number)
	}
	if _, err := a.For(true).Stat(ctx, archive.InvoicePDFKey(v.project, failed.id)); err != nil {
		t.Errorf("archived PDF: %v", err)
	}
	if _, status := v.task(orderNo); status != "resolved" || v.openDeadLetter(id) {
		t.Errorf("task %s, dead letter open %v: want both resolved", status, v.openDeadLetter(id))
	}
	typ, inv := v.lastInvoiceEvent(failed.id)
	if typ != event.InvoiceArchived || inv.Status != "archived" || inv.Version != 3 || inv.Number != failed.number ||
		inv.TaskID != "" || inv.FailureReason != "" || inv.ArchivedAt == nil {
		t.Errorf("last event %s %+v, want invoice.archived without a failure", typ, inv)
	}
}

// TestFailureBeforeANumberMarksNoDocument: an event that fails before a
// number is taken becomes a dead letter with its task, and no document.
func TestFailureBeforeANumberMarksNoDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	orderNo := uniqueNo("CN")
	id, due := v.dueOrder(orderNo)
	// The stored order cannot be read: issuing fails at once, for good.
	if _, err := v.pool.Exec(ctx, `UPDATE orders SET content = '{"items":"not a list"}' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // no retries of it by invoicers running elsewhere
		_, _ = v.pool.Exec(context.Background(), `UPDATE invoicing_dead_letters SET resolved_at = now() WHERE order_id = $1 AND resolved_at IS NULL`, id)
	})
	if err := v.invoicer(failingArchive(t)).Process(ctx, due); err != nil {
		t.Fatal(err)
	}
	var docs int
	if err := v.pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE order_id = $1`, id).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if _, status := v.task(orderNo); docs != 0 || status != "open" || !v.openDeadLetter(id) {
		t.Errorf("%d documents, task %q, dead letter %v: want none, an open task and a dead letter", docs, status, v.openDeadLetter(id))
	}
}

// TestFailedDocumentIsCancelledLikeAnyOther: a document failed in archiving
// is issued (its number is taken), so a correction cancels it like any
// other; only documents that broke rules (earlier versions) are not.
func TestFailedDocumentIsCancelledLikeAnyOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	_, id, failed := v.failedDocument()
	if failed.status != "failed" {
		t.Fatalf("document %+v, want failed", failed)
	}
	if _, err := v.pool.Exec(ctx, `UPDATE orders SET correction_pending = true WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	out, err := v.svc.CancelSuperseded(ctx, v.project, id, issueDay)
	if err != nil {
		t.Fatal(err)
	}
	var cancels string
	if len(out) == 1 {
		if err := v.pool.QueryRow(ctx, `SELECT cancels::text FROM invoices WHERE id = $1`, out[0].ID).Scan(&cancels); err != nil {
			t.Fatal(err)
		}
	}
	if len(out) != 1 || cancels != failed.id {
		t.Errorf("cancellations %+v (cancelling %q), want one of the failed document %s", out, cancels, failed.id)
	}
}
