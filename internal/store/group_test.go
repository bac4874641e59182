package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// groupFixture is a table of its own and a group over a pool, with both of
// the group's runners held in a statement that waits for an advisory lock
// the test holds: what is added meanwhile waits for one pipeline.
type groupFixture struct {
	pool  *pgxpool.Pool
	group *store.Group
	table string
	lock  int64
}

func newGroupFixture(t *testing.T) *groupFixture {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := &groupFixture{pool: pool, group: store.NewGroup(pool, "test", 16, 30*time.Second),
		table: "group_test_" + uuid.NewString()[:8], lock: time.Now().UnixNano()}
	if _, err := pool.Exec(ctx, `CREATE TABLE `+f.table+` (k text PRIMARY KEY, tx bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP TABLE `+f.table) })
	return f
}

// hold stalls both runners (each in a statement waiting for the test's
// lock) and returns the function that lets them go on, with the answers of
// those two statements.
func (f *groupFixture) hold(t *testing.T) (release func() []error) {
	t.Helper()
	ctx := context.Background()
	holder, err := f.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, f.lock); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			errs[i] = f.group.QueryRow(ctx, fmt.Sprint("held", i), `SELECT pg_advisory_xact_lock($1)`, []any{f.lock},
				func(row pgx.Row) error { return row.Scan(nil) })
		})
		// The runner of this statement waits for the lock; once it has
		// stalled, the next statement starts the second runner.
		testenv.Eventually(t, 10*time.Second, "a runner waiting for the lock", func() bool {
			var waiting int
			_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
				AND (classid::bigint << 32) | objid::bigint = $1`, f.lock).Scan(&waiting)
			return waiting == i+1
		})
		if i == 0 { // its batch in flight past the stall: the next statement starts the second runner
			testenv.Eventually(t, 10*time.Second, "the first runner stalled", f.group.StartsRunner)
		}
	}
	return func() []error {
		if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, f.lock); err != nil {
			t.Fatal(err)
		}
		holder.Release()
		wg.Wait()
		return errs
	}
}

// answer is what one statement of a test gave its caller.
type answer struct {
	tx  int64
	err error
}

// insert sends an insert of each key through the group, each returning
// its transaction's id, releases the held runners once all of them wait and
// returns each one's answer.
func (f *groupFixture) insert(t *testing.T, keys []string, release func() []error) []answer {
	t.Helper()
	answers := make([]answer, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			var tx int64
			err := f.group.QueryRow(context.Background(), k, `INSERT INTO `+f.table+` (k, tx) VALUES ($1, txid_current())
				ON CONFLICT (k) DO NOTHING RETURNING tx`, []any{k}, func(row pgx.Row) error { return row.Scan(&tx) })
			answers[i] = answer{tx, err}
		})
	}
	f.released(t, len(keys), release)
	wg.Wait()
	return answers
}

// released waits until n statements wait behind the held runners, then
// releases them; a held statement fails the test.
func (f *groupFixture) released(t *testing.T, n int, release func() []error) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "the statements waiting for a runner", func() bool { return f.group.Waiting() == n })
	for _, err := range release() {
		if err != nil {
			t.Errorf("a held statement: %v", err)
		}
	}
}

// TestGroupCommitsWaitingStatementsInOnePipeline: statements that wait while
// both runners are held go in one pipeline, one transaction: each gets its
// own row and all the same transaction id; one that gives no row gets
// pgx.ErrNoRows alone.
func TestGroupCommitsWaitingStatementsInOnePipeline(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO `+f.table+` (k, tx) VALUES ('k4', 0)`); err != nil {
		t.Fatal(err) // k4 is there already: its insert does nothing and returns no row
	}
	keys := []string{"k3", "k1", "k4", "k0", "k2"}
	answers := f.insert(t, keys, f.hold(t))
	tx := answers[0].tx
	for i, a := range answers {
		switch keys[i] {
		case "k4":
			if !errors.Is(a.err, pgx.ErrNoRows) {
				t.Errorf("%s (no row): %v, want pgx.ErrNoRows", keys[i], a.err)
			}
		default:
			if a.err != nil || a.tx != tx || tx == 0 {
				t.Errorf("%s: tx %d, %v; want the pipeline's tx %d", keys[i], a.tx, a.err, tx)
			}
		}
	}
	var rows, txs int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT tx) FROM `+f.table+` WHERE k <> 'k4'`).Scan(&rows, &txs); err != nil {
		t.Fatal(err)
	}
	if rows != 4 || txs != 1 {
		t.Errorf("%d rows in %d transactions, want 4 in 1", rows, txs)
	}
}

// TestGroupSendsEachStatementAloneWhenThePipelineIsRefused: one statement
// that PostgreSQL refuses (a unique violation) rolls its pipeline back;
// then each statement is sent alone: that one fails with its own error, the
// others commit, each in a transaction of its own.
func TestGroupSendsEachStatementAloneWhenThePipelineIsRefused(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	release := f.hold(t)
	answers := make([]answer, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			var tx int64
			sql := `INSERT INTO ` + f.table + ` (k, tx) VALUES ($1, txid_current()) RETURNING tx`
			if i == 2 { // always refused: one key twice
				sql = `INSERT INTO ` + f.table + ` (k, tx) VALUES ($1, txid_current()), ($1, txid_current()) RETURNING tx`
			}
			err := f.group.QueryRow(ctx, fmt.Sprint("k", i), sql, []any{fmt.Sprint("k", i)}, func(row pgx.Row) error { return row.Scan(&tx) })
			answers[i] = answer{tx, err}
		})
	}
	f.released(t, 4, release)
	wg.Wait()
	txs := map[int64]bool{}
	for i, a := range answers {
		if i == 2 {
			if !store.IsUniqueViolation(a.err, "") {
				t.Errorf("the refused statement: %v, want its unique violation", a.err)
			}
			continue
		}
		if a.err != nil || a.tx == 0 {
			t.Errorf("statement %d: tx %d, %v; want it committed alone", i, a.tx, a.err)
		}
		txs[a.tx] = true
	}
	if len(txs) != 3 {
		t.Errorf("the three good statements committed in %d transactions, want 3 (each alone)", len(txs))
	}
	var rows int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.table).Scan(&rows); err != nil || rows != 3 {
		t.Errorf("%d rows (%v), want the three good ones", rows, err)
	}
}
