package projection_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/event"
)

// TestFailedDocumentIsProjected: a document failed in archiving carries its
// reason and task in the invoice view and shows as failed in its order's
// status record (PostgreSQL and Redis alike); archived by the retry it
// carries neither, whatever order the events arrive in.
func TestFailedDocumentIsProjected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	orderID, invID, task := uuid.NewString(), uuid.NewString(), uuid.NewString()
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	change := func(typ string, status string, version int64, reason, taskID string) event.Event {
		ev := invoiceEvent(t, typ, f.project, "FD-1", invID, "TEST-2026-FD1", status, version, t0)
		var inv event.Invoice
		if err := json.Unmarshal(ev.Data, &inv); err != nil {
			t.Fatal(err)
		}
		inv.FailureReason, inv.TaskID = reason, taskID
		ev, err := event.New(typ, f.project, "invoice", invID, "FD-1", version, time.Now(), inv)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	created := change(event.InvoiceCreated, "created", 1, "", "")
	failed := change(event.InvoiceFailed, "failed", 2, "archive invoice: the bucket does not exist", task)
	archived := change(event.InvoiceArchived, "archived", 3, "", "")
	view := func() (status string, reason, taskID *string) {
		t.Helper()
		if err := f.pool.QueryRow(context.Background(), `SELECT status, failure_reason, failure_task_id::text FROM `+f.tables.Invoices+`
			WHERE id = $1`, invID).Scan(&status, &reason, &taskID); err != nil {
			t.Fatal(err)
		}
		return status, reason, taskID
	}
	docStatus := func() string {
		t.Helper()
		got, _ := f.status("FD-1") // checks that Redis says the same as PostgreSQL
		if got.Status != "invoiced" || len(got.Invoices) != 1 {
			t.Fatalf("order status %+v, want invoiced with one document", got)
		}
		return got.Invoices[0].Status
	}

	f.apply(orderEvent(t, event.OrderUpdated, f.project, "FD-1", orderID, 2, "invoiced", "fulfilled"), created, failed)
	if status, reason, taskID := view(); status != "failed" || reason == nil || *reason != "archive invoice: the bucket does not exist" ||
		taskID == nil || *taskID != task {
		t.Errorf("invoice view while failed: %s %v %v", status, reason, taskID)
	}
	if s := docStatus(); s != "failed" {
		t.Errorf("order's document %s, want failed", s)
	}

	f.apply(archived, failed, created) // the retry, then late copies
	if status, reason, taskID := view(); status != "archived" || reason != nil || taskID != nil {
		t.Errorf("invoice view after the retry: %s %v %v, want archived without failure", status, reason, taskID)
	}
	if s := docStatus(); s != "archived" {
		t.Errorf("order's document %s, want archived", s)
	}
}
