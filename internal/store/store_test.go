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

// TestUUIDArraysFromStrings: through a pool of Open, UUIDs given as strings
// reach a uuid[] parameter as they are: canonical ones (sent in binary),
// others PostgreSQL reads (braces, sent as text), and one it cannot read
// fails as PostgreSQL says.
func TestUUIDArraysFromStrings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{[]string{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "FFFFFFFF-0000-4000-8000-000000000001"},
			[]string{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "ffffffff-0000-4000-8000-000000000001"}},
		{[]string{"{0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}"}, []string{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}},
	} {
		var got []string
		if err := pool.QueryRow(ctx, `SELECT array_agg(u::text ORDER BY o) FROM unnest($1::uuid[]) WITH ORDINALITY AS x(u, o)`, c.in).Scan(&got); err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if len(got) != len(c.want) || got[0] != c.want[0] || got[len(got)-1] != c.want[len(c.want)-1] {
			t.Errorf("%q read back as %q, want %q", c.in, got, c.want)
		}
	}
	var n int
	err = pool.QueryRow(ctx, `SELECT cardinality($1::uuid[])`, []string{"not a uuid"}).Scan(&n)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
		t.Errorf("an unreadable UUID: %v, want PostgreSQL's 22P02", err)
	}
}
