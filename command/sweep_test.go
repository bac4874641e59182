package command_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/command"
)

func TestSweepIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	oldKey, newKey := uuid.NewString(), uuid.NewString()
	for _, k := range []string{oldKey, newKey} {
		if r := e.do(http.MethodPost, "/v1/orders", k, mustJSON(t, order(uniqueNo("S")))); r.status != 201 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	// The old key was used just over the retention window ago.
	if _, err := e.pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - $3::interval
WHERE project_id = $1 AND key = $2`, e.project, oldKey, (command.IdempotencyTTL + time.Minute).String()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SweepIdempotency(ctx, time.Now().Add(-command.IdempotencyTTL)); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := e.pool.Query(ctx, `SELECT key FROM idempotency_keys WHERE project_id = $1`, e.project)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		left = append(left, k)
	}
	if len(left) != 1 || left[0] != newKey {
		t.Errorf("keys left %v, want only the recent one", left)
	}
	// The expired key is free again; the order itself is still idempotent by orderNo.
	if r := e.do(http.MethodPost, "/v1/orders", oldKey, mustJSON(t, order(uniqueNo("S2")))); r.status != 201 {
		t.Errorf("expired key reused: %d %s", r.status, r.body)
	}
}
