package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// txBatchFixture is a table of its own (with a deferred unique constraint,
// checked at COMMIT) and a pool of one connection (a transaction left open
// would block the next use).
type txBatchFixture struct {
	pool  *pgxpool.Pool
	table string
}

func newTxBatchFixture(t *testing.T) *txBatchFixture {
	t.Helper()
	ctx := context.Background()
	f := &txBatchFixture{table: "txbatch_test_" + uuid.NewString()[:8]}
	var err error
	if f.pool, err = store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.pool.Close)
	if _, err := f.pool.Exec(ctx, `CREATE TABLE `+f.table+` (k text, v int NOT NULL,
		CONSTRAINT `+f.table+`_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.pool.Exec(context.Background(), `DROP TABLE `+f.table) })
	return f
}

func (f *txBatchFixture) insert(b *pgx.Batch, k string, v int) {
	b.Queue(`INSERT INTO `+f.table+` (k, v) VALUES ($1, $2)`, k, v)
}

// keys gives the committed keys, and checks that the pool's one connection
// is free and outside any transaction.
func (f *txBatchFixture) keys(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if s := conn.Conn().PgConn().TxStatus(); s != 'I' {
		t.Fatalf("the connection is left in a transaction (status %c)", s)
	}
	rows, err := conn.Query(ctx, `SELECT k FROM `+f.table)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, k := range ks {
		out[k] = true
	}
	return out
}

// Not parallel: store.RoundTrips counts every pool's round trips.
func TestTxBatchCommitsInTwoRoundTrips(t *testing.T) {
	f := newTxBatchFixture(t)
	ctx := context.Background()
	trips := testutil.ToFloat64(store.RoundTrips)
	first := store.TxBatch()
	f.insert(first, "a", 1)
	var read int
	first.Queue(`SELECT count(*) FROM ` + f.table).QueryRow(func(r pgx.Row) error { return r.Scan(&read) })
	err := store.WithTxBatch(ctx, f.pool, first, func(tx pgx.Tx) (*pgx.Batch, error) {
		if read != 1 {
			t.Errorf("fn ran before first's results were read: count %d", read)
		}
		last := &pgx.Batch{}
		f.insert(last, "b", 2)
		return last, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(store.RoundTrips) - trips; n != 2 {
		t.Errorf("%.0f round trips, want 2 (BEGIN and COMMIT in the batches)", n)
	}
	if got := f.keys(t); !got["a"] || !got["b"] || len(got) != 2 {
		t.Errorf("committed %v, want a and b", got)
	}
}

func TestTxBatchCommitsNothingOnAnyFailure(t *testing.T) {
	cases := []struct {
		name  string
		first func(f *txBatchFixture, b *pgx.Batch)
		fn    func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error)
		is    func(error) bool
	}{
		{
			name:  "a statement of the first batch fails",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1); b.Queue(`SELECT 1/0`) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				return nil, errors.New("fn ran after a failed first batch")
			},
			is: pgCode("22012"),
		},
		{
			name:  "fn fails",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				if _, err := tx.Exec(context.Background(), `INSERT INTO `+f.table+` (k, v) VALUES ('b', 2)`); err != nil {
					return nil, err
				}
				return nil, errFn
			},
			is: func(err error) bool { return errors.Is(err, errFn) },
		},
		{
			name:  "a statement of the last batch fails: the COMMIT behind it does not run",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				last := &pgx.Batch{}
				f.insert(last, "b", 2)
				last.Queue(`INSERT INTO ` + f.table + ` (k, v) VALUES ('c', NULL)`)
				return last, nil
			},
			is: pgCode("23502"),
		},
		{
			name:  "the COMMIT fails (a deferred unique constraint)",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				last := &pgx.Batch{}
				f.insert(last, "a", 2)
				return last, nil
			},
			is: pgCode("23505"),
		},
		{
			name:  "fn went on after a statement failed",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				_, _ = tx.Exec(context.Background(), `SELECT 1/0`) // ignored: the transaction has failed
				return nil, nil
			},
			is: func(err error) bool { return errors.Is(err, pgx.ErrTxCommitRollback) },
		},
		{
			name:  "an assert_true of the last batch is false",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				last := &pgx.Batch{}
				last.Queue(`WITH u AS (UPDATE `+f.table+` SET v = v + 1 WHERE k = 'a' RETURNING v)
					SELECT assert_true(min(v) = $1, 'v is ' || min(v)) FROM u`, 3)
				return last, nil
			},
			is: func(err error) bool { return pgCode("P0004")(err) && errorMessage(err) == "v is 2" },
		},
		{
			name:  "the last batch reads a result",
			first: func(f *txBatchFixture, b *pgx.Batch) { f.insert(b, "a", 1) },
			fn: func(f *txBatchFixture, tx pgx.Tx) (*pgx.Batch, error) {
				last := &pgx.Batch{}
				last.Queue(`SELECT 1`).Exec(func(pgconn.CommandTag) error { return nil })
				return last, nil
			},
			is: func(err error) bool { return errors.Is(err, store.ErrCommitReads) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTxBatchFixture(t)
			first := store.TxBatch()
			c.first(f, first)
			err := store.WithTxBatch(context.Background(), f.pool, first, func(tx pgx.Tx) (*pgx.Batch, error) { return c.fn(f, tx) })
			if err == nil || !c.is(err) {
				t.Fatalf("error %v, not the one expected", err)
			}
			if got := f.keys(t); len(got) != 0 {
				t.Errorf("committed %v, want nothing", got)
			}
		})
	}
}

var errFn = errors.New("fn failed")

func pgCode(code string) func(error) bool {
	return func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == code
	}
}

func errorMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return ""
}
