package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestProjectCauseIsOneTaskAndReleasesInParallel: a project without seller
// data takes 500 due orders; they are held by ONE open task (not 500),
// which counts them, names a sample, is mailed once, is found by
// GET /v1/tasks?orderNo= and is named by each order's holds[]. A recheck
// while the data is missing is refused, a dismissal of the hold too, and
// both are scoped to the key's project. Setting the seller data with
// o2i project set releases all 500 through the invoicer's workers, with a
// second invoicer instance releasing beside the service's: each order is
// invoiced exactly once, the numbers have no gap, the task is resolved.
func TestProjectCauseIsOneTaskAndReleasesInParallel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := projectWithoutSellerData(t, pool)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	sfx := uuid.NewString()[:8]
	const n = 500
	orderNo := func(i int) string { return fmt.Sprintf("CAUSE-%s-%03d", sfx, i) }

	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if r := c.Do("POST", "/v1/orders", key, creditOrder(orderNo(i), "1", 1000, 1190), "Idempotency-Key", orderNo(i)); r.Status != http.StatusCreated {
					t.Errorf("order %s: %d %s", orderNo(i), r.Status, r.Body)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// One task holds all 500.
	testenv.Eventually(t, 120*time.Second, "500 orders held", func() bool {
		var held int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM held_orders WHERE project_id = $1 AND released_at IS NULL`, pid).Scan(&held)
		return err == nil && held == n
	})
	var taskID string
	var open int
	if err := pool.QueryRow(ctx, `SELECT count(*), min(id::text) FROM tasks WHERE project_id = $1 AND status = 'open'`, pid).Scan(&open, &taskID); err != nil || open != 1 {
		t.Fatalf("%d open tasks (%v), want 1", open, err)
	}
	var mails, invoices int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM mail_deliveries WHERE project_id = $1 AND kind = 'task'),
		(SELECT count(*) FROM invoices WHERE project_id = $1)`, pid).Scan(&mails, &invoices); err != nil || mails != 1 || invoices != 0 {
		t.Errorf("%d urgent notices (want 1), %d invoices (want 0): %v", mails, invoices, err)
	}
	r := c.Do("GET", "/v1/tasks?orderNo="+orderNo(n-1), key, nil)
	list, _ := r.JSON(t)["data"].([]any)
	if r.Status != 200 || len(list) != 1 {
		t.Fatalf("tasks of order %s: %d %s", orderNo(n-1), r.Status, r.Body)
	}
	task := list[0].(map[string]any)
	sample, _ := task["heldOrderSample"].([]any)
	if task["id"] != taskID || task["type"] != "seller_data_incomplete" || task["heldOrders"] != float64(n) || len(sample) != 10 || task["orderNo"] != nil {
		t.Errorf("the shared task: %v", task)
	}
	waitStatus(t, c, key, orderNo(7), func(d map[string]any) bool {
		hs, _ := d["holds"].([]any)
		return len(hs) == 1 && hs[0].(map[string]any)["taskId"] == taskID && hs[0].(map[string]any)["type"] == "seller_data_incomplete"
	})

	// Recheck and dismissal: refused while the cause is there, scoped.
	wantCode := func(r apitest.Response, status, want int, code string) {
		t.Helper()
		if got, _ := r.ErrorCode(t); status != want || got != code {
			t.Errorf("status %d code %q, want %d %q", status, got, want, code)
		}
	}
	r = c.Do("POST", "/v1/tasks/"+taskID+"/recheck", key, nil)
	wantCode(r, r.Status, 409, "cause_not_fixed")
	r = c.Do("POST", "/v1/tasks/"+taskID+"/dismiss", key, nil)
	wantCode(r, r.Status, 409, "task_is_a_hold")
	reader := testenv.Key(t, pool, pid, "invoices:read")
	r = c.Do("POST", "/v1/tasks/"+taskID+"/recheck", reader, nil)
	wantCode(r, r.Status, 403, "forbidden")
	other := testenv.Key(t, pool, testenv.Project(t, pool, true))
	r = c.Do("POST", "/v1/tasks/"+taskID+"/recheck", other, nil)
	wantCode(r, r.Status, 404, "task_not_found")
	r = c.Do("POST", "/v1/tasks/"+taskID+"/dismiss", other, nil)
	wantCode(r, r.Status, 404, "task_not_found")

	// A second invoicer instance releases beside the service's own.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	second := invoicing.NewInvoicer(invoicing.New(pool), archive.New(testenv.S3(t), testenv.Env("O2I_S3_BUCKET")), testenv.KafkaBrokers())
	second.Workers = 4
	secondDone := make(chan int)
	go func() {
		total := 0
		defer func() { secondDone <- total }()
		for rctx.Err() == nil {
			k, err := second.ReleaseFixed(rctx)
			if err != nil && rctx.Err() == nil {
				t.Errorf("second invoicer: %v", err)
			}
			total += k
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// The seller data is set as o2i project set sets it.
	if out, err := runCmd(t, "project", "set", "--project", pid, "--seller-name", "Muster Handel GmbH", "--seller-vat-id", "DE123456789"); err != nil {
		t.Fatalf("o2i project set: %v\n%s", err, out)
	}
	testenv.Eventually(t, 180*time.Second, "500 orders invoiced", func() bool {
		var k int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE project_id = $1`, pid).Scan(&k)
		return err == nil && k >= n
	})
	stop()
	t.Logf("the second invoicer evaluated %d of the %d held orders", <-secondDone, n)

	var docs, orders, minSeq, maxSeq, seqs int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT order_id), min(seq), max(seq), count(DISTINCT seq) FROM invoices WHERE project_id = $1`, pid).
		Scan(&docs, &orders, &minSeq, &maxSeq, &seqs); err != nil {
		t.Fatal(err)
	}
	if docs != n || orders != n || minSeq != 1 || maxSeq != n || seqs != n {
		t.Errorf("%d documents of %d orders, numbers %d..%d (%d distinct), want %d each, 1..%d", docs, orders, minSeq, maxSeq, seqs, n, n)
	}
	testenv.Eventually(t, 30*time.Second, "the task resolved", func() bool {
		var status string
		err := pool.QueryRow(ctx, `SELECT status FROM tasks WHERE id = $1`, taskID).Scan(&status)
		return err == nil && status == "resolved"
	})
	r = c.Do("GET", "/v1/tasks/"+taskID, key, nil)
	if d, _ := r.JSON(t)["data"].(map[string]any); r.Status != 200 || d["heldOrders"] != float64(0) {
		t.Errorf("the resolved task: %d %s", r.Status, r.Body)
	}
	// Still found by its orders; its recheck has nothing to do.
	if r := c.Do("GET", "/v1/tasks?orderNo="+orderNo(3), key, nil); r.Status != 200 || len(r.JSON(t)["data"].([]any)) != 1 {
		t.Errorf("tasks of a released order: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/v1/tasks/"+taskID+"/recheck", key, nil); r.Status != 200 {
		t.Errorf("recheck of the resolved task: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, orderNo(7), func(d map[string]any) bool {
		return d["status"] == "invoiced" && len(d["holds"].([]any)) == 0
	})
}

// projectWithoutSellerData is a new project (test mode) whose seller has no
// name, VAT ID or tax number: its due orders are held by one
// seller_data_incomplete task.
func projectWithoutSellerData(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	pid := testenv.Project(t, pool, true)
	if _, err := project.Apply(context.Background(), pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.SellerName, s.SellerVATID, s.SellerTaxNumber = "", "", ""
	}}); err != nil {
		t.Fatal(err)
	}
	return pid
}
