package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestForeignKeysAreIndexed: a foreign key whose columns lead no index
// makes every look-up by them, and every delete of a row it references (the
// check that nothing still refers to it, or the cascade), read the whole
// referencing table. Every foreign key of the schema has such an index,
// except the ones below: they refer to rows that are never deleted and the
// service never looks them up by, or the service looks them up only by a
// partial index. A partial index counts only when it leaves out nothing
// but the rows without a key. Migration 00225 added the indexes of
// payments and provider_refunds by order_id, which the issue of every paid
// order reads.
func TestForeignKeysAreIndexed(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	unindexed := map[string]string{ // constraint: why no index
		"mail_deliveries_project_id_fkey":        "projects are never deleted; the service reads deliveries by invoice, task or due time",
		"invoicing_dead_letters_project_id_fkey": "projects are never deleted; dead letters are read by order or by retry time",
		"console_invitations_invited_by_fkey":    "console users are never deleted; invitations are read by token",
		"console_password_resets_user_id_fkey":   "console users are never deleted; resets are read by token",
		"console_audit_log_actor_id_fkey":        "console users are never deleted; the log is read by project and time",
		// Looked up only among the rows still in force, by a partial index
		// (console users are never deleted; an order only by a reset of
		// test data).
		"console_sessions_user_id_fkey": "a user's sessions are read among the unrevoked ones (console_sessions_user)",
		"held_orders_order_id_fkey":     "an order's holds are read among the unreleased ones (held_orders_of_order)",
	}
	rows, err := pool.Query(context.Background(), `SELECT c.conname, c.conrelid::regclass::text,
			(SELECT string_agg(a.attname, ', ' ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
				JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum)
		FROM pg_constraint c
		WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
		AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indisvalid
			AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
			AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey
			-- a partial index serves the key only when it leaves out no row with one
			AND (i.indpred IS NULL OR cardinality(c.conkey) = 1 AND pg_get_expr(i.indpred, i.indrelid) =
				'(' || (SELECT quote_ident(a.attname) FROM pg_attribute a WHERE a.attrelid = c.conrelid AND a.attnum = c.conkey[1]) || ' IS NOT NULL)'))
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var name, table, columns string
	var found []string
	if _, err := pgx.ForEachRow(rows, []any{&name, &table, &columns}, func() error {
		found = append(found, name)
		if _, ok := unindexed[name]; !ok {
			t.Errorf("foreign key %s of %s (%s) leads no index: its look-ups and the deletes it checks read the whole table", name, table, columns)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for name := range unindexed {
		if !slices.Contains(found, name) {
			t.Errorf("%s is listed as a foreign key without an index, but it has one now (or is gone): take it off the list", name)
		}
	}
}
