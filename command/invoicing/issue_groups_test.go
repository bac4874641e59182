package invoicing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// queueBehindRange locks the counter row of the project's test range of
// 2026 in a transaction of the test's own, runs first (which must start one
// issue call) and waits until that call's transaction waits for the row,
// then runs rest (which must start queued more calls) and waits until they
// all wait for the next group. release rolls the test's transaction back:
// the first call goes on, and the queued ones go together after it.
func (v *invoicingEnv) queueBehindRange(first, rest func(), queued int) (release func()) {
	v.t.Helper()
	ctx := context.Background()
	v.svc.KeepIssueGroupsTogether()
	pattern, err := billing.ParseNumberPattern(billing.TestNumberPattern)
	if err != nil {
		v.t.Fatal(err)
	}
	tx, err := v.pool.Begin(ctx)
	if err != nil {
		v.t.Fatal(err)
	}
	v.t.Cleanup(func() { _ = tx.Rollback(ctx) }) // a failure leaves no lock behind
	var pid int
	if err := tx.QueryRow(ctx, `INSERT INTO number_ranges (project_id, range_key, next_seq) VALUES ($1, $2, 1)
		ON CONFLICT (project_id, range_key) DO UPDATE SET next_seq = number_ranges.next_seq RETURNING pg_backend_pid()`,
		v.project, pattern.RangeKey(2026)).Scan(&pid); err != nil {
		v.t.Fatal(err)
	}
	first()
	testenv.Eventually(v.t, 30*time.Second, "an issuing transaction waiting for the number range", func() bool {
		var waiting int
		if err := v.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&waiting); err != nil {
			v.t.Fatal(err)
		}
		return waiting > 0
	})
	rest()
	testenv.Eventually(v.t, 30*time.Second, fmt.Sprintf("%d issue calls queued", queued), func() bool {
		return v.svc.IssuesWaiting(v.project) >= queued
	})
	return func() {
		if err := tx.Rollback(ctx); err != nil {
			v.t.Error(err)
		}
	}
}

// issueAll issues the orders at the same time: the first alone, the
// others queued behind it while the project's number range is held, so
// that they go in one group; out[i] and errs[i] are the answer for ids[i].
func (v *invoicingEnv) issueAll(ids []string) (out [][]invoicing.Issued, errs []error) {
	v.t.Helper()
	out, errs = make([][]invoicing.Issued, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	issue := func(i int) {
		wg.Go(func() {
			out[i], errs[i] = v.svc.IssueInvoices(context.Background(), v.project, ids[i], invoicing.IssueDates{IssueDate: issueDay})
		})
	}
	release := v.queueBehindRange(func() { issue(0) }, func() {
		for i := 1; i < len(ids); i++ {
			issue(i)
		}
	}, len(ids)-1)
	release()
	wg.Wait()
	return out, errs
}

// placeEach places n orders, body(i) the i-th, and returns their ids.
func (v *invoicingEnv) placeEach(n int, body func(i int) string) []string {
	v.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = v.place(body(i))
	}
	return ids
}

func buyerOrder(orderNo, buyer, extra string) string {
	return fmt.Sprintf(`{"orderNo":%q,"billingAddress":{"country_code":"DE","name":%q,"street":"Weg 1","postal_code":"10115","city":"Berlin"%s},
		"items":[{"name":"Tee","quantity":2,"unitNetCents":1000,"taxRate":7}],"requiresShipping":true}`, orderNo, buyer, extra)
}

func TestOrdersIssuedAtOnceShareATransactionAndKeepTheirOwnDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	v.issue(v.place(simpleOrder("GR-0", ""))) // number 1: the range's row exists
	const n = 10
	buyer := func(i int) string { return fmt.Sprintf("Łucja Groß-Èze %d", i+1) }
	ids := v.placeEach(n, func(i int) string { return buyerOrder(fmt.Sprintf("GR-%d", i+1), buyer(i), "") })
	// The second order twice in the group: issued once, both calls answered with it.
	out, errs := v.issueAll(append(slices.Clone(ids), ids[1]))
	var numbers []string
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(out[i]) != 1 || out[i][0].Status != "created" {
			t.Fatalf("call %d: documents %+v", i, out[i])
		}
		if i < n {
			numbers = append(numbers, out[i][0].Number)
		}
	}
	if out[n][0].ID != out[1][0].ID {
		t.Errorf("the order issued twice at once got documents %s and %s", out[1][0].ID, out[n][0].ID)
	}
	slices.Sort(numbers)
	for i, no := range numbers {
		if want := fmt.Sprintf("TEST-2026-%06d", i+2); no != want {
			t.Fatalf("numbers %v: position %d is %s, want %s (gapless after the first)", numbers, i, no, want)
		}
	}
	// Each document is its own order's: its number and its buyer in its XML.
	for i, id := range ids {
		var orderID, xml string
		var docs int
		if err := v.pool.QueryRow(ctx, `SELECT order_id::text, convert_from(xml, 'UTF8'),
				(SELECT count(*) FROM invoices WHERE order_id = $2) FROM invoices WHERE id = $1`,
			out[i][0].ID, id).Scan(&orderID, &xml, &docs); err != nil {
			t.Fatal(err)
		}
		if orderID != id || docs != 1 || !strings.Contains(xml, out[i][0].Number) || !strings.Contains(xml, buyer(i)) {
			t.Errorf("order %d: document of order %s, %d documents, XML with its number %t and its buyer %t",
				i, orderID, docs, strings.Contains(xml, out[i][0].Number), strings.Contains(xml, buyer(i)))
		}
		var status string
		if err := v.pool.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1`, id).Scan(&status); err != nil || status != "invoiced" {
			t.Errorf("order %d: status %q (%v)", i, status, err)
		}
	}
	// The first order alone, the nine queued behind it (and the second one's
	// second call) together: two transactions.
	var txs int
	if err := v.pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM invoices WHERE order_id = ANY($1::uuid[])`, ids).Scan(&txs); err != nil {
		t.Fatal(err)
	}
	if txs != 2 {
		t.Errorf("%d orders issued in %d transactions, want 2: the first alone, the queued ones together", n, txs)
	}
}

func TestAGroupWithABrokenDocumentIssuesEachOrderAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No VAT ID and no register entry: every document breaks BR-CO-26.
	v := newInvoicing(t, true, func(s *project.Settings) { *s = testenv.DemoSeller(); s.SellerVATID = "" })
	ids := v.placeEach(4, func(i int) string { return simpleOrder(fmt.Sprintf("GB-%d", i), "") })
	_, errs := v.issueAll(ids)
	for i, err := range errs {
		var held *invoicing.HeldError
		if !errors.As(err, &held) || held.Kind != orders.TaskValidationFailed {
			t.Errorf("order %d: %v, want held %s", i, err, orders.TaskValidationFailed)
		}
	}
	if f := v.svc.IssueGroupFallbacks(); f < 1 {
		t.Errorf("%v groups fell back to issuing alone, want at least one", f)
	}
	var docs, tasks, next int
	if err := v.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM invoices WHERE project_id = $1),
			(SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = $2 AND status = 'open'),
			coalesce((SELECT max(next_seq) FROM number_ranges WHERE project_id = $1), 1)`,
		v.project, orders.TaskValidationFailed).Scan(&docs, &tasks, &next); err != nil {
		t.Fatal(err)
	}
	if docs != 0 || tasks != len(ids) || next != 1 {
		t.Errorf("%d documents, %d open tasks, next number %d: want none recorded, a task per order, no number taken", docs, tasks, next)
	}
}

func TestAGroupHoldsSomeOrdersAndIssuesTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No contact phone: XRechnung orders wait for it, the others are issued.
	v := newInvoicing(t, true, func(s *project.Settings) { *s = testenv.DemoSeller(); s.ContactPhone = "" })
	ids := v.placeEach(6, func(i int) string {
		if i%2 == 1 {
			return simpleOrder(fmt.Sprintf("GH-%d", i), `,"leitweg_id":"04011000-1234512345-06"`)
		}
		return simpleOrder(fmt.Sprintf("GH-%d", i), "")
	})
	out, errs := v.issueAll(ids)
	var numbers []string
	taskIDs := map[string]bool{}
	for i, err := range errs {
		if i%2 == 1 {
			var held *invoicing.HeldError
			if !errors.As(err, &held) || held.Kind != orders.HoldContactPhone {
				t.Fatalf("XRechnung order %d: %v, want held %s", i, err, orders.HoldContactPhone)
			}
			taskIDs[held.TaskID] = true
			continue
		}
		if err != nil || len(out[i]) != 1 {
			t.Fatalf("order %d: %v %+v", i, err, out[i])
		}
		numbers = append(numbers, out[i][0].Number)
	}
	slices.Sort(numbers)
	if want := []string{"TEST-2026-000001", "TEST-2026-000002", "TEST-2026-000003"}; !slices.Equal(numbers, want) {
		t.Errorf("numbers %v, want %v", numbers, want)
	}
	if len(taskIDs) != 1 {
		t.Errorf("held by tasks %v, want the project's one", taskIDs)
	}
	var held int
	if err := v.pool.QueryRow(ctx, `SELECT count(*) FROM held_orders WHERE project_id = $1 AND released_at IS NULL`, v.project).Scan(&held); err != nil || held != 3 {
		t.Errorf("%d orders held (%v), want 3", held, err)
	}
}

func TestAnOrderLockedElsewhereHoldsNoOtherOrderOfItsGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	first, locked := v.place(simpleOrder("GL-0", "")), v.place(simpleOrder("GL-1", ""))
	others := []string{v.place(simpleOrder("GL-2", "")), v.place(simpleOrder("GL-3", ""))}
	// Another transaction keeps one order locked.
	lock, err := v.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Rollback(ctx) }) // a failure leaves no lock behind
	if _, err := lock.Exec(ctx, `SELECT 1 FROM orders WHERE id = $1 FOR UPDATE`, locked); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		id  string
		out []invoicing.Issued
		err error
	}
	done := make(chan answer, 4)
	issue := func(id string) {
		out, err := v.svc.IssueInvoices(ctx, v.project, id, invoicing.IssueDates{IssueDate: issueDay})
		done <- answer{id, out, err}
	}
	// The first order's transaction waits for the range; the others queue
	// behind it and go together, the locked order among them.
	release := v.queueBehindRange(func() { go issue(first) }, func() {
		for _, id := range append([]string{locked}, others...) {
			go issue(id)
		}
	}, 3)
	release()
	var numbers []string
	for range 3 {
		select {
		case a := <-done:
			if a.id == locked || a.err != nil || len(a.out) != 1 {
				t.Fatalf("order %s: %+v %v, before the locked order's lock was released", a.id, a.out, a.err)
			}
			numbers = append(numbers, a.out[0].Number)
		case <-time.After(30 * time.Second):
			t.Fatal("the other orders wait for the order locked elsewhere")
		}
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.id != locked || a.err != nil || len(a.out) != 1 {
		t.Fatalf("the locked order after its lock: %s %+v %v", a.id, a.out, a.err)
	}
	numbers = append(numbers, a.out[0].Number)
	slices.Sort(numbers)
	for i, no := range numbers {
		if want := fmt.Sprintf("TEST-2026-%06d", i+1); no != want {
			t.Fatalf("numbers %v, want 1 to 4 without a gap", numbers)
		}
	}
}
