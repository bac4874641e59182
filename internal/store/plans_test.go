package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestGenericPlansKeepsALookupByKeysOnItsGenericPlan: a lookup by an array
// of keys, whose custom plans look cheaper than its generic one, is planned
// anew at every execution; after store.GenericPlans in its pipeline it runs
// on the generic plan every time, and the connection keeps the server's
// plan_cache_mode for the statements of its next transactions.
func TestGenericPlansKeepsALookupByKeysOnItsGenericPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.Env("O2I_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	table := "plans_test_" + uuid.NewString()[:8]
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id uuid PRIMARY KEY, v text NOT NULL);
		INSERT INTO `+table+` SELECT gen_random_uuid(), 'x' FROM generate_series(1, 5000); ANALYZE `+table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), `DROP TABLE `+table) })
	var ids []uuid.UUID
	if err := conn.QueryRow(ctx, `SELECT array_agg(id) FROM (SELECT id FROM `+table+` LIMIT 2) s`).Scan(&ids); err != nil {
		t.Fatal(err)
	}

	// plans runs sql's lookup n times, each in a pipeline of its own (after
	// store.GenericPlans when generic), and returns how the prepared
	// statement was planned on the connection.
	plans := func(sql string, n int, generic bool) (genericPlans, customPlans int64) {
		t.Helper()
		for range n {
			b := &pgx.Batch{}
			if generic {
				b.Queue(`SELECT ` + store.GenericPlans)
			}
			var got int
			b.Queue(sql, ids).QueryRow(func(row pgx.Row) error { return row.Scan(&got) })
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				t.Fatal(err)
			}
			if got != 2 {
				t.Fatalf("the lookup found %d rows, want 2", got)
			}
		}
		if err := conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, sql).
			Scan(&genericPlans, &customPlans); err != nil {
			t.Fatal(err)
		}
		return genericPlans, customPlans
	}
	const n = 8
	lookup := `SELECT count(*)::int FROM ` + table + ` WHERE id = ANY($1::uuid[])`
	if g, c := plans(lookup, n, false); c != n || g != 0 {
		t.Fatalf("without GenericPlans: %d generic and %d custom plans, want %d custom (else this lookup proves nothing)", g, c, n)
	}
	lookup += ` AND v = 'x'` // another prepared statement
	if g, c := plans(lookup, n, true); g != n || c != 0 {
		t.Errorf("after GenericPlans: %d generic and %d custom plans, want %d generic", g, c, n)
	}
	var mode string
	if err := conn.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Errorf("the connection after the pipelines: plan_cache_mode %q, %v; want auto", mode, err)
	}
}
