package invoicing_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestMarkArchivedWritesNothingWhenTheInvoiceChanged: every write of the
// archived mark hangs on its status update. With the invoice at another
// version than the one read, nothing is written (no manifest anchor, no
// e-mail delivery, no event, the invoice unchanged); at the version read,
// all of it, with the event at that version plus one; a second mark with
// the same version writes nothing more. The document's archive_pending row
// stays until the mark that writes, and goes with it.
func TestMarkArchivedWritesNothingWhenTheInvoiceChanged(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	ctx := context.Background()
	order := strings.Replace(simpleOrder(uniqueNo("MK"), ""), `{"orderNo":`, `{"email":"max@example.com","orderNo":`, 1)
	d := v.issue(v.place(order))[0]
	inv := event.Invoice{ID: d.ID, ProjectID: v.project, Number: d.Number, Status: "created", TestMode: true}
	if err := v.pool.QueryRow(ctx, `SELECT order_id::text, order_no FROM invoices WHERE id = $1`, d.ID).Scan(&inv.OrderID, &inv.OrderNo); err != nil {
		t.Fatal(err)
	}
	a := archive.NewTest(testenv.S3(t), "mark-test")
	st := archive.Stored{Key: archive.ManifestKey(v.project, d.ID), VersionID: "v1", SHA256: strings.Repeat("a", 64), Size: 10,
		RetainUntil: time.Now().AddDate(10, 0, 0)}
	type state struct {
		status                 string
		version                int64
		anchors, mails, events int
		pending                int
	}
	read := func() state {
		t.Helper()
		var s state
		if err := v.pool.QueryRow(ctx, `SELECT i.status, i.version,
				(SELECT count(*) FROM archive_objects WHERE invoice_id = i.id AND kind = 'manifest'),
				(SELECT count(*) FROM mail_deliveries WHERE invoice_id = i.id),
				(SELECT count(*) FROM outbox WHERE event_type = $2 AND position(convert_to(i.id::text, 'UTF8') IN payload) > 0),
				(SELECT count(*) FROM archive_pending WHERE invoice_id = i.id)
			FROM invoices i WHERE i.id = $1`, d.ID, event.InvoiceArchived).Scan(&s.status, &s.version, &s.anchors, &s.mails, &s.events,
			&s.pending); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Changed since it was read (version 1): the mark writes nothing.
	if _, err := v.pool.Exec(ctx, `UPDATE invoices SET version = version + 1 WHERE id = $1`, d.ID); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name    string
		version int64 // read
		done    bool
		want    state
	}{
		{"read before a change", 1, false, state{"created", 2, 0, 0, 0, 1}},
		{"read at the stored version", 2, true, state{"archived", 3, 1, 1, 1, 0}},
		{"marked again with the same version", 2, false, state{"archived", 3, 1, 1, 1, 0}},
	} {
		inv.Version = step.version
		done, err := v.svc.MarkArchived(ctx, a, inv, st, time.Now().UTC())
		if err != nil || done != step.done {
			t.Fatalf("%s: done %v, %v; want %v", step.name, done, err, step.done)
		}
		if got := read(); got != step.want {
			t.Errorf("%s: %+v, want %+v", step.name, got, step.want)
		}
	}
}

// TestNoIndexOfInvoicesNamesWhatTheMarksChange: the archived mark and the
// failed mark change status, archived_at, version, failure_reason and
// failure_task_id. With none of them in an index of invoices (its columns,
// expressions or predicate), PostgreSQL can write the new row version as a
// HOT update: in the row's own page, no index entry written (migration
// 00220). An index that names one of them makes every mark write an entry
// in every index of the table.
func TestNoIndexOfInvoicesNamesWhatTheMarksChange(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	rows, err := pool.Query(context.Background(), `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid)
		FROM pg_index WHERE indrelid = 'invoices'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	var name, def string
	if _, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error { defs[name] = def; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(defs) == 0 {
		t.Fatal("no index of invoices read")
	}
	changed := regexp.MustCompile(`\b(status|archived_at|version|failure_reason|failure_task_id)\b`)
	for name, def := range defs {
		if m := changed.FindString(def); m != "" {
			t.Errorf("index %s names %s, which the marks change: %s", name, m, def)
		}
	}
}
