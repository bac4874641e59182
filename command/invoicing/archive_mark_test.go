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
	// The invoice as the archiving reads it: the events the marks publish
	// reach the stack's projector, which needs every field.
	inv, err := v.svc.ArchivableInvoice(ctx, v.project, d.ID)
	if err != nil {
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

// TestThePipelinesUpdatesCanBeHOT: PostgreSQL writes an update's new row
// version as a HOT update (in the row's own page, no index entry written)
// only when no index names a column it changes (its key, expressions or
// predicate) and the page has room. For each update the pipeline makes of
// every document, no index of its table names what it changes, and the
// table leaves room in its pages (fillfactor below 100):
//   - the archived and the failed mark of invoices (migration 00220);
//   - the order's save when it is invoiced (00223);
//   - the manifest's stored mark (00223).
//
// An index that names one of them, or a table filled to the last byte,
// makes every such update write an entry in every index of the table.
func TestThePipelinesUpdatesCanBeHOT(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	for _, c := range []struct {
		update, table string
		changes       string // a regexp of the columns it changes
		maxFill       int
	}{
		{"the archived and the failed mark", "invoices", `status|archived_at|version|failure_reason|failure_task_id`, 70},
		{"the order's save when it is invoiced", "orders", `status|correction_pending|version|updated_at|invoiced_at|holds`, 80},
		{"the manifest's stored mark", "archive_manifests", `stored_at`, 70},
	} {
		rows, err := pool.Query(ctx, `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid)
			FROM pg_index WHERE indrelid = $1::regclass`, c.table)
		if err != nil {
			t.Fatal(err)
		}
		defs := map[string]string{}
		var name, def string
		if _, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error { defs[name] = def; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(defs) == 0 {
			t.Fatalf("%s: no index of %s read", c.update, c.table)
		}
		changed := regexp.MustCompile(`\b(` + c.changes + `)\b`)
		for name, def := range defs {
			if m := changed.FindString(def); m != "" {
				t.Errorf("%s: index %s names %s, which the update changes: %s", c.update, name, m, def)
			}
		}
		var fill int
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT split_part(o, '=', 2)::int FROM unnest(reloptions) o WHERE o LIKE 'fillfactor=%'), 100)
			FROM pg_class WHERE oid = $1::regclass`, c.table).Scan(&fill); err != nil {
			t.Fatal(err)
		}
		if fill > c.maxFill {
			t.Errorf("%s: %s fills its pages to %d %%, want at most %d %% (room for the new version)", c.update, c.table, fill, c.maxFill)
		}
	}
}
