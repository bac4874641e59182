package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestQueryWaitsForAConnectionAtMostAcquireTimeout: with the only
// connection taken, a read answers Unavailable after AcquireTimeout instead
// of waiting for its context; rows read to the end or closed give their
// connection back.
func TestQueryWaitsForAConnectionAtMostAcquireTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	for i := 0; i < 3; i++ { // would hang on the second round if a connection leaked
		rows, err := store.Query(ctx, pool, `SELECT generate_series(1, 3)`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil || len(got) != 3 {
			t.Fatalf("round %d: %v %v", i, got, err)
		}
		var n int
		if err := store.QueryRow(ctx, pool, `SELECT 41 + 1`).Scan(&n); err != nil || n != 42 {
			t.Fatalf("round %d: QueryRow %d %v", i, n, err)
		}
		if err := store.QueryRow(ctx, pool, `SELECT 1 WHERE false`).Scan(&n); !errors.Is(err, pgx.ErrNoRows) {
			t.Fatalf("round %d: no row gave %v, want pgx.ErrNoRows", i, err)
		}
	}

	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	var n int
	err = store.QueryRow(wctx, pool, `SELECT 1`).Scan(&n)
	if apperr.KindOf(err) != apperr.Unavailable {
		t.Fatalf("exhausted pool: %v, want an Unavailable error", err)
	}
	if waited := time.Since(start); waited > store.AcquireTimeout+5*time.Second {
		t.Errorf("waited %s for a connection, want about %s", waited, store.AcquireTimeout)
	}
}

// TestSessionTimeouts: the pool's sessions carry the statement and
// idle-in-transaction limits, and a statement past its limit is ended.
func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 2,
		store.StatementTimeout(300*time.Millisecond), store.IdleInTransactionTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var st, idle string
	if err := pool.QueryRow(ctx, `SELECT current_setting('statement_timeout'), current_setting('idle_in_transaction_session_timeout')`).Scan(&st, &idle); err != nil {
		t.Fatal(err)
	}
	if st != "300ms" || idle != "2s" {
		t.Errorf("statement_timeout %q, idle_in_transaction_session_timeout %q; want 300ms and 2s", st, idle)
	}
	_, err = pool.Exec(ctx, `SELECT pg_sleep(2)`)
	if !pgconn.Timeout(err) && !isQueryCanceled(err) {
		t.Errorf("a 2 s statement under a 300 ms limit: %v, want it cancelled (57014)", err)
	}
}

func isQueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}
