package orders

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestOpenTaskOnceUnderConcurrency: writers that open the same task at once,
// each in its own transaction, leave exactly one open task (the partial
// unique index decides, not a check before the insert); once it is
// resolved, the cause can open a new one.
func TestOpenTaskOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	open := func() {
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := store.WithTx(ctx, pool, func(tx pgx.Tx) error {
					return OpenTask(ctx, tx, pid, TaskPaymentAmountMismatch, "ORDER-1", map[string]any{"orderNo": "ORDER-1"})
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	count := func(status string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND subject = 'ORDER-1' AND status = $2`, pid, status).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	open()
	if n := count("open"); n != 1 {
		t.Fatalf("%d open tasks after 16 concurrent writers, want 1", n)
	}
	if _, err := pool.Exec(ctx, `UPDATE tasks SET status = 'resolved', resolved_at = now() WHERE project_id = $1 AND subject = 'ORDER-1'`, pid); err != nil {
		t.Fatal(err)
	}
	open()
	if open, resolved := count("open"), count("resolved"); open != 1 || resolved != 1 {
		t.Errorf("after the resolution: %d open, %d resolved, want 1 and 1", open, resolved)
	}
}

// TestMayBeHeld: only an order whose holds column names a task needs its
// holds released and its hold tasks resolved when it is invoiced.
func TestMayBeHeld(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		holds string
		want  bool
	}{
		{"", false},
		{"[]", false},
		{" [] ", false},
		{"null", false},
		{`[{"type":"order_not_invoiceable","taskId":"0b6f1a8e-6d7c-4f59-9d43-8d1b2f0e7c11"}]`, true},
		{`[{"type":"seller_data_incomplete","taskId":"a"},{"type":"invoice_validation_failed","taskId":"b"}]`, true},
		{"[ ]", true}, // not what PostgreSQL writes: treated as a hold, the release then changes nothing
	} {
		var holds []byte
		if c.holds != "" {
			holds = []byte(c.holds)
		}
		if got := MayBeHeld(holds); got != c.want {
			t.Errorf("MayBeHeld(%q) = %v, want %v", c.holds, got, c.want)
		}
	}
}
