package query_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/query"
)

// invoiceChange is an invoice event of version v with the document's state
// after it.
func (e *env) invoiceChange(typ string, inv event.Invoice) event.Event {
	e.t.Helper()
	ev, err := event.New(typ, e.project, "invoice", inv.ID, inv.OrderNo, inv.Version, time.Now(), inv)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// TestFailedInvoiceShowsReasonAndTask: a document failed in archiving is
// listed as failed with its reason and task, its metadata shows both, its
// order stays invoiced with the document failed, its PDF and XML are 409
// (retry later); the archived document after the retry shows neither, and
// a late copy of the failure changes nothing.
func TestFailedInvoiceShowsReasonAndTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id, task := uuid.NewString(), uuid.NewString()
	t0 := time.Now()
	doc := event.Invoice{ID: id, ProjectID: e.project, OrderNo: "FA-1", Number: "TEST-2026-FA1", Status: "created", Version: 1,
		Type: "invoice", Format: "zugferd", IssueDate: "2026-11-22", Currency: "EUR", TotalNetCents: 10000, TotalTaxCents: 1900,
		TotalGrossCents: 11900, TestMode: true, CreatedAt: t0}
	failed := doc
	failed.Status, failed.Version, failed.FailureReason, failed.TaskID = "failed", 2, "archive invoice "+id+": the bucket does not exist", task
	e.apply(e.order("FA-1", 1, "invoiced", "fulfilled"), e.invoiceChange(event.InvoiceCreated, doc), e.invoiceChange(event.InvoiceFailed, failed))

	want := query.Invoice{ID: id, Number: "TEST-2026-FA1", Status: "failed", URL: "/v1/invoices/" + id, OrderNo: "FA-1",
		Type: "invoice", Format: "zugferd", IssueDate: "2026-11-22", Currency: "EUR",
		TotalNetCents: 10000, TotalTaxCents: 1900, TotalGrossCents: 11900, TestMode: true,
		PDFURL: "/v1/invoices/" + id + "/pdf", XMLURL: ptr("/v1/invoices/" + id + "/xml"),
		CreatedAt: t0.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), FailureReason: ptr(failed.FailureReason), FailureTaskID: ptr(task)}
	metadata := func() query.Invoice {
		t.Helper()
		r := e.c.Do("GET", "/v1/invoices/"+id, e.key, nil)
		var body httpx.Envelope[query.Invoice]
		if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != 200 {
			t.Fatalf("metadata: %d %s (%v)", r.Status, r.Body, err)
		}
		return body.Data
	}
	orderInvoices := func() []readmodel.InvoiceRef {
		t.Helper()
		r := e.c.Do("GET", "/v1/orders/FA-1", e.key, nil)
		var body httpx.Envelope[readmodel.OrderStatus]
		if err := json.Unmarshal(r.Body, &body); err != nil || r.Status != 200 {
			t.Fatalf("order status: %d %s (%v)", r.Status, r.Body, err)
		}
		if body.Data.Status != "invoiced" {
			t.Errorf("order status %q, want invoiced", body.Data.Status)
		}
		return body.Data.Invoices
	}

	if diff := cmp.Diff(want, metadata()); diff != "" {
		t.Errorf("failed document's metadata (-want +got):\n%s", diff)
	}
	if p, r := e.list("?status=failed&orderNo=FA-1"); r.Status != 200 || len(p.Data) != 1 || !cmp.Equal(p.Data[0], want) {
		t.Errorf("listing of failed documents: %d %s", r.Status, r.Body)
	}
	ref := readmodel.InvoiceRef{ID: id, Number: "TEST-2026-FA1", Status: "failed", URL: "/v1/invoices/" + id, Type: "invoice"}
	if diff := cmp.Diff([]readmodel.InvoiceRef{ref}, orderInvoices()); diff != "" {
		t.Errorf("order's documents while failed (-want +got):\n%s", diff)
	}
	for _, path := range []string{"/v1/invoices/" + id + "/pdf", "/v1/invoices/TEST-2026-FA1/xml"} {
		r := e.c.Do("GET", path, e.key, nil)
		if code, _ := r.ErrorCode(t); r.Status != http.StatusConflict || code != "document_not_archived" || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s while failed: %d %q Retry-After %q, want 409 document_not_archived with Retry-After", path, r.Status, code, r.Header.Get("Retry-After"))
		}
	}

	// The retry archives it; the failure's event delivered again changes nothing.
	archived := doc
	at := t0.Add(time.Minute)
	archived.Status, archived.Version, archived.ArchivedAt = "archived", 3, &at
	e.apply(e.invoiceChange(event.InvoiceArchived, archived))
	e.apply(e.invoiceChange(event.InvoiceFailed, failed))
	want.Status, want.FailureReason, want.FailureTaskID = "archived", nil, nil
	want.ArchivedAt = ptr(at.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano))
	if diff := cmp.Diff(want, metadata()); diff != "" {
		t.Errorf("archived after the retry (-want +got):\n%s", diff)
	}
	if p, r := e.list("?status=failed&orderNo=FA-1"); r.Status != 200 || len(p.Data) != 0 {
		t.Errorf("failed documents after the retry: %d %s", r.Status, r.Body)
	}
	ref.Status = "archived"
	if diff := cmp.Diff([]readmodel.InvoiceRef{ref}, orderInvoices()); diff != "" {
		t.Errorf("order's documents after the retry (-want +got):\n%s", diff)
	}
}
