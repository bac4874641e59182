package command

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/store"
)

// ResetResult counts what ResetTestData discarded.
type ResetResult struct {
	ProjectID      string   `json:"projectId"`
	Orders         int64    `json:"orders"`
	Invoices       int64    `json:"invoices"`
	Tasks          int64    `json:"tasks"`
	ArchiveObjects int      `json:"archiveObjects"`        // object versions removed from the test bucket
	ArchiveKept    int      `json:"archiveObjectsKept"`    // test documents archived under retention (before the test bucket existed): they stay until it ends
	NumberRanges   []string `json:"numberRangesRestarted"` // the test number ranges, restarted at 1
}

// testOrder is the condition on an order o of project $1 that a reset
// discards: its mode, fixed when it was received, is test, whatever the
// project's mode is now. A test order given a live document (possible
// before documents followed their order's mode) stays: a live document is
// never discarded.
const testOrder = `o.project_id = $1 AND o.test_mode
	AND NOT EXISTS (SELECT 1 FROM invoices l WHERE l.order_id = o.id AND NOT l.test_mode)`

// ResetTestData discards a project's test data, selected by each order's
// mode (fixed when it was received), not by the project's: the test orders
// (with their fulfillments, payments, dead letters, idempotency records,
// review tasks and status records in PostgreSQL and Redis), waiting or
// invoiced, and their documents (invoice rows, read-model rows, archive
// anchors and manifests, and the objects in the test bucket), and restarts
// their test number ranges at 1. Live orders and their documents are never
// touched; a test document of a live order (issued before documents
// followed their order's mode) stays, and so does its number range.
// Documents archived under retention cannot be removed and are counted as
// kept. Test events still on their way through the broker can recreate a
// status record; reset while no test order is in flight.
func (s *Service) ResetTestData(ctx context.Context, a *archive.Archive, rdb redis.Cmdable, projectID string) (res ResetResult, err error) {
	defer apperr.Wrap(&err, "reset test data of project %s", projectID)
	res.ProjectID, res.NumberRanges = projectID, []string{}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM projects WHERE id::text = $1)`, projectID).Scan(&exists); err != nil {
		return res, err
	}
	if !exists {
		return res, apperr.New(apperr.NotFound, "project_not_found", "no project %s", projectID)
	}
	// The archive first: a failure leaves the database as it was, and a
	// second run finds the same objects again.
	rows, err := s.pool.Query(ctx, `WITH docs AS (SELECT i.id FROM invoices i JOIN orders o ON o.id = i.order_id
			WHERE i.project_id = $1 AND i.test_mode AND `+testOrder+`)
		SELECT a.bucket, a.object_key FROM archive_objects a JOIN docs ON docs.id = a.invoice_id
		UNION SELECT '', k FROM docs, unnest(ARRAY[$1::text || '/invoices/' || docs.id || '.xml', $1::text || '/invoices/' || docs.id || '.pdf',
			$1::text || '/manifests/' || docs.id || '.json']) k
		WHERE NOT EXISTS (SELECT 1 FROM archive_objects a WHERE a.invoice_id = docs.id)`, projectID)
	if err != nil {
		return res, err
	}
	var bucket, key string
	type object struct{ bucket, key string }
	var objects []object
	if _, err := pgx.ForEachRow(rows, []any{&bucket, &key}, func() error { objects = append(objects, object{bucket, key}); return nil }); err != nil {
		return res, err
	}
	test := a.TestArchive()
	for _, o := range objects {
		if test == nil || (o.bucket != "" && o.bucket != test.Bucket()) {
			if o.bucket != "" {
				res.ArchiveKept++
			}
			continue
		}
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := test.RemoveKey(octx, o.key)
		cancel()
		if err != nil {
			return res, err
		}
		res.ArchiveObjects += n
	}
	var orderNos []string
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		res.Orders, res.Invoices, res.Tasks, orderNos, res.NumberRanges = 0, 0, 0, nil, []string{}
		rows, err := tx.Query(ctx, `SELECT o.id::text, o.order_no FROM orders o WHERE `+testOrder+` FOR UPDATE`, projectID)
		if err != nil {
			return err
		}
		var ids []string
		var id, no string
		if _, err := pgx.ForEachRow(rows, []any{&id, &no}, func() error { ids, orderNos = append(ids, id), append(orderNos, no); return nil }); err != nil {
			return err
		}
		// Their documents, and the number ranges that only they use.
		if rows, err = tx.Query(ctx, `SELECT id::text FROM invoices WHERE project_id = $1 AND order_id = ANY($2::uuid[]) AND test_mode`, projectID, ids); err != nil {
			return err
		}
		docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if rows, err = tx.Query(ctx, `SELECT DISTINCT range_key FROM invoices i WHERE i.id = ANY($2::uuid[])
			AND NOT EXISTS (SELECT 1 FROM invoices k WHERE k.project_id = $1 AND k.range_key = i.range_key AND k.id <> ALL($2::uuid[]))
			ORDER BY 1`, projectID, docs); err != nil {
			return err
		}
		if res.NumberRanges, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		exec := func(n *int64, sql string, args ...any) error {
			tag, err := tx.Exec(ctx, sql, args...)
			if err == nil && n != nil {
				*n = tag.RowsAffected()
			}
			return err
		}
		var sharedTasks int64
		defer func() { res.Tasks += sharedTasks }()
		steps := []struct {
			n    *int64
			sql  string
			args []any
		}{
			{nil, `DELETE FROM archive_objects WHERE invoice_id = ANY($1::uuid[])`, []any{docs}},
			{nil, `DELETE FROM archive_manifests WHERE project_id = $1 AND invoice_id = ANY($2::uuid[])`, []any{projectID, docs}},
			{nil, `DELETE FROM archive_repairs WHERE invoice_id = ANY($1::uuid[])`, []any{docs}},
			{nil, `DELETE FROM archive_pending WHERE invoice_id = ANY($1::uuid[])`, []any{docs}},
			// A task of a cause of the project or a product that held test
			// orders only goes with them.
			{&sharedTasks, `DELETE FROM tasks t WHERE t.project_id = $1 AND t.subject <> ALL($3)
				AND EXISTS (SELECT 1 FROM held_orders h WHERE h.task_id = t.id AND h.order_id = ANY($2::uuid[]))
				AND NOT EXISTS (SELECT 1 FROM held_orders h WHERE h.task_id = t.id AND h.order_id <> ALL($2::uuid[]))`, []any{projectID, ids, orderNos}},
			{&res.Tasks, `DELETE FROM tasks t WHERE t.project_id = $1 AND ((t.subject = ANY($2) AND t.kind NOT IN ('payment_without_order', 'credit_balance_mismatch'))
				OR t.details->>'invoiceId' = ANY($3))`, []any{projectID, orderNos, docs}},
			{&res.Invoices, `DELETE FROM invoices WHERE project_id = $1 AND id = ANY($2::uuid[])`, []any{projectID, docs}},
			{nil, `DELETE FROM invoice_view WHERE project_id = $1 AND id = ANY($2::uuid[])`, []any{projectID, docs}},
			{nil, `DELETE FROM number_ranges WHERE project_id = $1 AND range_key = ANY($2)`, []any{projectID, res.NumberRanges}},
			{nil, `DELETE FROM archive_chain_heads WHERE project_id = $1 AND range_key = ANY($2)`, []any{projectID, res.NumberRanges}},
			{nil, `DELETE FROM fulfillments WHERE order_id = ANY($1::uuid[])`, []any{ids}},
			{nil, `DELETE FROM payments WHERE order_id = ANY($1::uuid[])`, []any{ids}},
			{nil, `DELETE FROM invoicing_dead_letters WHERE order_id = ANY($1::uuid[])`, []any{ids}},
			{nil, `DELETE FROM idempotency_keys k WHERE k.project_id = $1
				AND EXISTS (SELECT 1 FROM unnest($2::text[]) id WHERE position(convert_to(id, 'UTF8') IN k.response_body) > 0)`, []any{projectID, ids}},
			{&res.Orders, `DELETE FROM orders WHERE id = ANY($1::uuid[])`, []any{ids}},
			{nil, `DELETE FROM order_view WHERE project_id = $1 AND order_no = ANY($2)`, []any{projectID, orderNos}},
			{nil, `DELETE FROM projection_redis_dirty WHERE project_id = $1 AND order_no = ANY($2)`, []any{projectID, orderNos}},
		}
		for _, st := range steps {
			if err := exec(st.n, st.sql, st.args...); err != nil {
				return fmt.Errorf("%.60s: %w", st.sql, err)
			}
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if rdb != nil && len(orderNos) > 0 {
		for start := 0; start < len(orderNos); start += 500 {
			batch := orderNos[start:min(start+500, len(orderNos))]
			keys := make([]string, len(batch))
			changes := make([]readmodel.Change, len(batch))
			for i, no := range batch {
				keys[i] = readmodel.OrderKey(projectID, no)
				// The API processes drop what they hold of the records.
				changes[i] = readmodel.Change{ProjectID: projectID, OrderNo: no, Rev: math.MaxInt64}
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			p := rdb.Pipeline()
			p.Del(rctx, keys...)
			readmodel.PublishChanges(rctx, p, changes)
			_, err := p.Exec(rctx)
			cancel()
			if err != nil && !errors.Is(err, redis.Nil) {
				return res, fmt.Errorf("redis: %w (the status records are gone from PostgreSQL; o2i projection rebuild repairs Redis)", err)
			}
		}
	}
	return res, nil
}
