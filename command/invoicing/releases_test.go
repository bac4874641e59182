package invoicing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// dueService is a service order paid with store credit: due at once.
func dueService(orderNo string) string {
	return fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Beratung","quantity":1,"unitNetCents":1000,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":1190,"externalRef":"ref-%s"}],"grossTotalCents":1190}`, orderNo, orderNo)
}

// TestSweepSkipsAnUnreadableHeldOrderAndGoesOn: orders of a project
// without a seller name are held by the project's one task, decided before
// anything is computed. The name is then set without the fix being
// reported (as before releases were reported): the sweep probes the task
// with its least recently checked order each round. The first probe cannot
// be read: skipped, logged, counted, and it goes to the end of the line
// (the sweep never starts over, the next round does not take it again).
// The next probe is invoiced and reports the cause fixed, so the releases
// invoice the task's other order; the task then holds the unreadable order
// alone.
func TestSweepSkipsAnUnreadableHeldOrderAndGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, func(s *project.Settings) { *s = testenv.DemoSeller(); s.SellerName = "" })
	var ids []string
	var task string
	for i := range 3 {
		no := uniqueNo(fmt.Sprintf("SW%d", i))
		id := v.place(dueService(no))
		_, err := v.svc.IssueInvoices(ctx, v.project, id, invoicing.IssueDates{IssueDate: issueDay})
		var held *invoicing.HeldError
		if !errors.As(err, &held) || held.Kind != orders.TaskSellerDataIncomplete || held.TaskID == "" {
			t.Fatalf("IssueInvoices = %v, want a hold %s", err, orders.TaskSellerDataIncomplete)
		}
		if task != "" && held.TaskID != task {
			t.Fatalf("order %d held by task %s, the first by %s: want one task of the project", i, held.TaskID, task)
		}
		task = held.TaskID
		ids = append(ids, id)
	}
	var open int
	if err := v.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND status = 'open'`, v.project).Scan(&open); err != nil || open != 1 {
		t.Fatalf("%d open tasks (%v), want 1", open, err)
	}
	for _, st := range []struct {
		sql string
		arg string
	}{
		// Unreadable before the cause is fixed: an invoicer beside the test
		// could otherwise invoice the order from its event in between.
		{`UPDATE orders SET content = jsonb_set(content, '{items}', '"unreadable"') WHERE id = $1`, ids[1]},
		{`UPDATE projects SET settings = settings || '{"sellerName":"Muster Handel GmbH"}' WHERE id = $1`, v.project},
		{`UPDATE held_orders SET checked_at = '2000-01-01' WHERE project_id = $1`, v.project},
		{`UPDATE held_orders SET checked_at = '1999-01-01' WHERE order_id = $1`, ids[1]},
	} {
		if _, err := v.pool.Exec(ctx, st.sql, st.arg); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
	}
	iv := invoicing.NewInvoicer(v.svc, workingArchive(t), nil)
	status := func(id string) (order string, released bool, checked time.Time) {
		t.Helper()
		if err := v.pool.QueryRow(ctx, `SELECT o.status, h.released_at IS NOT NULL, h.checked_at FROM orders o JOIN held_orders h ON h.order_id = o.id
			WHERE o.id = $1 AND h.task_id = $2`, id, task).Scan(&order, &released, &checked); err != nil {
			t.Fatal(err)
		}
		return order, released, checked
	}
	// Round 1 probes the unreadable order (the count is the instance's over
	// every project of the stack: others may have unreadable ones too).
	if err := iv.ReleaseHolds(ctx); err != nil {
		t.Fatal(err)
	}
	o, released, checked := status(ids[1])
	if o != "created" || released || checked.Year() < 2026 || iv.Unreadable.Load() < 1 {
		t.Errorf("unreadable order: %s, released %v, checked %s, counted %d; want created, held, checked now, counted", o, released, checked, iv.Unreadable.Load())
	}
	// Round 2 probes the next one: invoiced, the cause reported fixed; the
	// releases invoice the third. (An invoicer running beside the test
	// may invoice them first, from their events: the outcome is the same.)
	// The unreadable order, just checked, is not taken again.
	if err := iv.ReleaseHolds(ctx); err != nil {
		t.Fatal(err)
	}
	// Another invoicer of the stack that invoiced one of the task's orders
	// from its event reports the cause fixed, and then re-probes the orders
	// checked before (by design): only without such a report must the
	// order be left alone.
	var fixedSince bool
	if err := v.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cause_fixes WHERE task_id = $1 AND fixed_at > $2)`, task, checked).Scan(&fixedSince); err != nil {
		t.Fatal(err)
	}
	if _, _, again := status(ids[1]); !again.Equal(checked) && !fixedSince {
		t.Errorf("the next round took the unreadable order again (checked %s, then %s)", checked, again)
	}
	// The releases invoice the other two. Another invoicer of the stack
	// (the package's other tests run theirs, each releasing every project's
	// fixed orders) may have claimed one first: it is then that invoicer's
	// under its lease, and this one releases it once the lease is given
	// back or runs out. Once this invoicer's own round is over, a claim
	// still running is another's.
	claimedElsewhere := func(id string) bool {
		var claimed bool
		if err := v.pool.QueryRow(ctx, `SELECT coalesce(claimed_until > now(), false) FROM held_orders WHERE order_id = $1 AND task_id = $2`,
			id, task).Scan(&claimed); err != nil {
			t.Fatal(err)
		}
		return claimed
	}
	elsewhere := 0 // orders still under another invoicer's lease
	testenv.Eventually(t, 30*time.Second, "the task's two readable orders invoiced and released, or under another invoicer's lease", func() bool {
		if _, err := iv.ReleaseFixed(ctx); err != nil {
			t.Fatal(err)
		}
		elsewhere = 0
		for _, i := range []int{0, 2} {
			if o, released, _ := status(ids[i]); o == "invoiced" && released {
				continue
			}
			if !claimedElsewhere(ids[i]) {
				return false
			}
			elsewhere++
		}
		return true
	})
	if o, released, _ := status(ids[1]); o != "created" || released {
		t.Errorf("unreadable order after the release: %s, released %v", o, released)
	}
	var held int
	var taskStatus string
	if err := v.pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM held_orders h WHERE h.task_id = t.id AND h.released_at IS NULL)
		FROM tasks t WHERE id = $1`, task).Scan(&taskStatus, &held); err != nil || taskStatus != "open" || held < 1 || held > 1+elsewhere {
		t.Errorf("task %s holding %d (%v), want open holding the unreadable order (and %d under another invoicer's lease)", taskStatus, held, err, elsewhere)
	}
}

// TestProductCauseIsOneTaskPerProduct: under accrual accounting, services
// without period of a product without revenue recognition are held by one
// task of that product; setting the recognition reports it fixed in the
// same statement, and ReleaseFixed invoices them and resolves the task.
func TestProductCauseIsOneTaskPerProduct(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newInvoicing(t, true, nil)
	product := uniqueNo("abo")
	var ids []string
	var task string
	for i := range 3 {
		no := uniqueNo(fmt.Sprintf("PR%d", i))
		id := v.place(fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
			"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
			"items":[{"name":"Abo","productId":%q,"quantity":1,"unitGrossCents":1190,"taxRate":19}],
			"creditRedemptions":[{"type":"referral_credit","amountCents":1190,"externalRef":"ref-%s"}],"grossTotalCents":1190}`, no, product, no))
		_, err := v.svc.IssueInvoices(ctx, v.project, id, invoicing.IssueDates{IssueDate: issueDay})
		var held *invoicing.HeldError
		if !errors.As(err, &held) || held.Kind != orders.HoldRevenueRecognition || (task != "" && held.TaskID != task) {
			t.Fatalf("order %d: %v (task %v), want held by the product's one task %s", i, err, held, task)
		}
		task = held.TaskID
		ids = append(ids, id)
	}
	months := 12
	settings, err := command.RevenueRecognitionSettings(&months)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := command.ConfigureProduct(ctx, v.pool, v.project, product, settings); err != nil {
		t.Fatal(err)
	}
	var fixed int
	if err := v.pool.QueryRow(ctx, `SELECT count(*) FROM cause_fixes WHERE task_id = $1`, task).Scan(&fixed); err != nil || fixed != 1 {
		t.Fatalf("cause reported fixed %d times (%v), want 1", fixed, err)
	}
	iv := invoicing.NewInvoicer(v.svc, workingArchive(t), nil)
	testenv.Eventually(t, 30*time.Second, "the product's orders invoiced", func() bool {
		if _, err := iv.ReleaseFixed(ctx); err != nil {
			t.Fatal(err)
		}
		var invoiced int
		err := v.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE id = ANY($1::uuid[]) AND status = 'invoiced'`, ids).Scan(&invoiced)
		return err == nil && invoiced == len(ids)
	})
	testenv.Eventually(t, 30*time.Second, "the product's task resolved", func() bool {
		if _, err := iv.ReleaseFixed(ctx); err != nil {
			t.Fatal(err)
		}
		var status string
		err := v.pool.QueryRow(ctx, `SELECT status FROM tasks WHERE id = $1`, task).Scan(&status)
		return err == nil && status == "resolved"
	})
}
