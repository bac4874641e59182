package invoicing_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestArchiveRepairMovesPastDocumentsItCannotArchive: the repair takes a
// page of documents by when they are due; two that can never be archived
// (their XML cannot be rendered) fill the first page, fail and wait their
// backoff, and the next round takes the document behind them instead of
// taking the same two again: it stores and anchors it, and, as its number
// comes after theirs, it waits for them to be chained (its own backoff),
// which a document of another number range would not.
//
// Any invoicer repairs any project's documents, and the invoicers of other
// tests on the shared stack run beside this one: when one of them holds the
// third document's claim after the rounds (no attempt recorded yet, its
// lease running), the scenario runs again in a new project, at most three
// times; the assertions are those of the last run.
func TestArchiveRepairMovesPastDocumentsItCannotArchive(t *testing.T) {
	t.Parallel()
	for try := 1; ; try++ {
		if !repairMovesPast(t, try == 3) {
			return
		}
	}
}

// repairMovesPast runs the scenario of
// TestArchiveRepairMovesPastDocumentsItCannotArchive once in a new project.
// It reports true, asserting nothing, when another invoicer held the third
// document's claim and last is false.
func repairMovesPast(t *testing.T, last bool) (disturbed bool) {
	t.Helper()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	var ids []string
	for i := range 3 {
		d := v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("R%d", i)), "")))
		ids = append(ids, d[0].ID)
	}
	// Issued two to four minutes ago, the oldest first; the two oldest are broken.
	for i, id := range ids {
		if _, err := v.pool.Exec(ctx, `UPDATE invoices SET created_at = now() - ($2 || ' minutes')::interval WHERE id = $1`,
			id, fmt.Sprint(4-i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.pool.Exec(ctx, `UPDATE invoices SET xml = convert_to('<broken', 'UTF8') WHERE id = ANY($1::uuid[])`, ids[:2]); err != nil {
		t.Fatal(err)
	}
	iv := v.invoicer(workingArchive(t))
	iv.ScopeRepair(v.project, 2)
	status := func(id string) (s string, attempts int, waiting bool) {
		err := v.pool.QueryRow(ctx, `SELECT i.status, coalesce(r.attempts, 0), coalesce(r.next_attempt_at > now(), false)
			FROM invoices i LEFT JOIN archive_repairs r ON r.invoice_id = i.id WHERE i.id = $1`, id).Scan(&s, &attempts, &waiting)
		if err != nil {
			t.Fatal(err)
		}
		return s, attempts, waiting
	}
	for round := 1; round <= 2; round++ {
		if err := iv.ArchiveStuck(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if s, attempts, waiting := status(ids[2]); s == "created" && attempts == 0 && waiting && !last {
		return true // claimed by another invoicer of the shared stack
	}
	if s, attempts, waiting := status(ids[2]); s != "created" || attempts != 1 || !waiting || !v.anchored(ids[2]) {
		t.Errorf("the document behind the two broken ones: %s, %d attempts, waiting %v, anchored %v after two rounds; want created, "+
			"1 attempt, waiting, anchored (it comes after them in number order)", s, attempts, waiting, v.anchored(ids[2]))
	}
	for _, id := range ids[:2] {
		if s, attempts, waiting := status(id); s != "created" || attempts != 1 || !waiting {
			t.Errorf("broken document %s: %s, %d attempts, waiting %v; want created, 1 attempt, waiting its backoff", id, s, attempts, waiting)
		}
	}
	return false
}

// TestTwoInvoicersNeverRetryTheSameItem: two invoicers claim the due items
// of the retry table at the same time, a few at a time, until none is
// left: every item is claimed exactly once (a claimed item is another's
// only when its lease has run out).
func TestTwoInvoicersNeverRetryTheSameItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	group := "o2i-invoicer-test-claims-" + uuid.NewString()[:8]
	const n = 60
	for i := range n {
		if _, err := v.pool.Exec(ctx, `INSERT INTO invoicing_dead_letters (id, project_id, order_id, order_no, event_id, payload, error, attempts,
				next_retry_at, consumer_group) VALUES ($1, $2, $3, $4, 'e', '\x00', 'timeout', 1, now() - interval '1 second', $5)`,
			uuid.NewString(), v.project, uuid.NewString(), fmt.Sprintf("C-%d", i), group); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for range 2 {
		iv := invoicing.NewInvoicer(invoicing.New(v.pool), workingArchive(t), testenv.KafkaBrokers())
		iv.UseGroup(event.TopicOrders, group)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ids, err := iv.ClaimRetries(ctx, 3, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ids) == 0 {
					return
				}
				mu.Lock()
				for _, id := range ids {
					claimed[id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d items claimed, want %d", len(claimed), n)
	}
	for id, c := range claimed {
		if c != 1 {
			t.Errorf("item %s claimed %d times", id, c)
		}
	}
	// Claimed, they are not due before their lease runs out.
	iv := invoicing.NewInvoicer(invoicing.New(v.pool), workingArchive(t), testenv.KafkaBrokers())
	iv.UseGroup(event.TopicOrders, group)
	if ids, err := iv.ClaimRetries(ctx, n, time.Minute); err != nil || len(ids) != 0 {
		t.Errorf("claimed again within the lease: %d, %v", len(ids), err)
	}
}

// TestArchiveRepairTakesTheChainsHead: after an outage every document of a
// number range may have an open item in the retry table, all due at once;
// each retry of a later document waits for the first one in vain. The
// repair, which leaves a document with an open retry item to that retry,
// claims the first document of the range not archived all the same (and
// only that one), archives it and then the ones after it in number order.
func TestArchiveRepairTakesTheChainsHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	var ids []string
	for i := range 3 {
		d := v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("H%d", i)), "")))
		ids = append(ids, d[0].ID)
	}
	group := "o2i-invoicer-test-head-" + uuid.NewString()[:8]
	for _, id := range ids {
		if _, err := v.pool.Exec(ctx, `UPDATE invoices SET created_at = now() - interval '3 minutes' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		// Its order's retry item, due in an hour (after the repair's round).
		if _, err := v.pool.Exec(ctx, `INSERT INTO invoicing_dead_letters (id, project_id, order_id, order_no, event_id, payload, error, attempts,
				next_retry_at, consumer_group) SELECT $1, project_id, order_id, order_no, 'e', '\x00', 'object store down', 1, now() + interval '1 hour', $3
			FROM invoices WHERE id = $2`, uuid.NewString(), id, group); err != nil {
			t.Fatal(err)
		}
	}
	iv := v.invoicer(workingArchive(t))
	iv.ScopeRepair(v.project, 10)
	if err := iv.ArchiveStuck(ctx); err != nil {
		t.Fatal(err)
	}
	status := func(id string) (s string, claimed bool) {
		if err := v.pool.QueryRow(ctx, `SELECT i.status, EXISTS (SELECT 1 FROM archive_repairs r WHERE r.invoice_id = i.id)
			FROM invoices i WHERE i.id = $1`, id).Scan(&s, &claimed); err != nil {
			t.Fatal(err)
		}
		return s, claimed
	}
	if s, _ := status(ids[0]); s != "archived" {
		t.Errorf("the range's first document with an open retry item: %s, want archived by the repair", s)
	}
	for _, id := range ids[1:] {
		if s, claimed := status(id); s != "archived" || claimed {
			t.Errorf("a document behind it: %s, claimed by the repair %v; want archived after it, unclaimed", s, claimed)
		}
	}
}
