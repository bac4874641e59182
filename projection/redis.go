package projection

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// A Redis status record must never stay stale after a failed write: the API
// serves Redis first. Two ways were possible: block the batch and retry Redis
// until it answers (offsets not committed meanwhile), or commit the batch and
// keep a durable mark that a loop repairs. The projector marks: blocking
// would also stop the PostgreSQL read model during a Redis outage, which is
// exactly when the API reads PostgreSQL instead (new orders would be 404
// until Redis is back). A mark is written only when Redis failed, after the
// batch's transaction; a crash before it leaves the offsets uncommitted, so
// the batch is delivered again and refreshes Redis anew.

// refreshRedis copies the batch's status records to Redis. When Redis fails,
// or is known to be failing (repair.down), the orders are marked in
// projection_redis_dirty for the repair loop instead. Only when the mark
// cannot be written either does the batch fail (not committed, delivered
// again).
func (p *Projector) refreshRedis(ctx context.Context, rows []statusRow) error {
	if len(rows) == 0 {
		return nil
	}
	if !p.repair.down.Load() || !p.repair.running.Load() {
		err := putRedisWithin(ctx, p.rdb, rows)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.redisErrors.Inc()
		if p.repair.down.CompareAndSwap(false, true) {
			slog.Warn("projector: redis refresh failed; orders are marked for repair until Redis answers",
				"orders", len(rows), "err", err)
			select {
			case p.repair.kick <- struct{}{}:
			default:
			}
		}
	}
	if err := p.markDirty(ctx, rows); err != nil {
		return fmt.Errorf("redis refresh failed, and marking %d orders for repair too: %w", len(rows), err)
	}
	return nil
}

// putRedisWithin is putRedis bounded by redisTimeout.
func putRedisWithin(ctx context.Context, rdb *redis.Client, rows []statusRow) error {
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	return putRedis(rctx, rdb, rows)
}

// markDirty marks the rows' orders; a mark already there gets a new value,
// so that a repair round that read the old one leaves it.
func (p *Projector) markDirty(ctx context.Context, rows []statusRow) error {
	seen := make(map[orderRef]bool, len(rows))
	var projects, orders []string
	for _, r := range rows {
		if !seen[r.ref] {
			seen[r.ref] = true
			projects, orders = append(projects, r.ref.projectID), append(orders, r.ref.orderNo)
		}
	}
	mctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	_, err := p.pool.Exec(mctx, `INSERT INTO projection_redis_dirty (orders_table, project_id, order_no)
		SELECT $1, k.project_id, k.order_no FROM unnest($2::uuid[], $3::text[]) AS k(project_id, order_no)
		ORDER BY k.project_id, k.order_no
		ON CONFLICT (orders_table, project_id, order_no) DO UPDATE SET mark = EXCLUDED.mark, marked_at = now()`,
		p.tables.Orders, projects, orders)
	return err
}

// repairLoop copies the status records of marked orders to Redis until ctx
// ends: at once when a batch marked orders, then again with backoff while
// Redis fails, and every repairEvery for marks of other replicas or of a
// process that stopped.
func (p *Projector) repairLoop(ctx context.Context) {
	p.repair.running.Store(true)
	defer p.repair.running.Store(false)
	var backoff time.Duration // > 0 while Redis fails
	next := repairEvery
	for {
		kick := p.repair.kick
		if backoff > 0 {
			kick = nil // a failing Redis is tried on the backoff only
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-kick:
		case <-t.C:
		}
		t.Stop()
		n, err := p.repairRound(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if backoff == 0 {
				slog.Warn("projector: redis repair failed, retrying with backoff", "err", err)
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), repairMaxBackoff)
			next = backoff
		default:
			if backoff > 0 || n > 0 {
				slog.Info("projector: redis repaired", "orders", n)
			}
			backoff, next = 0, repairEvery
			if n == repairBatch {
				next = 0 // more are waiting
			}
		}
	}
}

// dirtyMark is one order's mark as a repair round read it.
type dirtyMark struct {
	ref  orderRef
	mark int64
}

// repairRound copies up to repairBatch marked orders from the orders table
// to Redis and deletes the marks it read (a mark set again meanwhile stays
// for the next round). It returns how many orders it copied.
func (p *Projector) repairRound(ctx context.Context) (int, error) {
	marks, err := p.dirtyMarks(ctx)
	if err != nil {
		return 0, fmt.Errorf("read marks: %w", err)
	}
	if len(marks) == 0 {
		p.redisDirty.Set(0)
		p.repair.down.Store(false)
		return 0, nil
	}
	refs := make([]orderRef, len(marks))
	projects, orders, values := make([]string, len(marks)), make([]string, len(marks)), make([]int64, len(marks))
	for i, m := range marks {
		refs[i] = m.ref
		projects[i], orders[i], values[i] = m.ref.projectID, m.ref.orderNo, m.mark
	}
	lctx, cancel := context.WithTimeout(ctx, dbTimeout)
	rows, err := loadStatus(lctx, p.pool, p.tables.Orders, refs)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("read status records: %w", err)
	}
	if err := putRedisWithin(ctx, p.rdb, rows); err != nil {
		if ctx.Err() == nil {
			p.redisErrors.Inc()
		}
		p.repair.down.Store(true)
		return 0, fmt.Errorf("redis: %w", err)
	}
	// Redis answers: batches write it directly again (older marks are
	// repaired meanwhile; a record never replaces a newer one).
	p.repair.down.Store(false)
	dctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := p.pool.Exec(dctx, `DELETE FROM projection_redis_dirty d
		USING unnest($2::uuid[], $3::text[], $4::bigint[]) AS k(project_id, order_no, mark)
		WHERE d.orders_table = $1 AND d.project_id = k.project_id AND d.order_no = k.order_no AND d.mark = k.mark`,
		p.tables.Orders, projects, orders, values); err != nil {
		return 0, fmt.Errorf("delete marks: %w", err)
	}
	var left int64
	if err := p.pool.QueryRow(dctx, `SELECT count(*) FROM projection_redis_dirty WHERE orders_table = $1`,
		p.tables.Orders).Scan(&left); err == nil {
		p.redisDirty.Set(float64(left))
	}
	return len(marks), nil
}

func (p *Projector) dirtyMarks(ctx context.Context) ([]dirtyMark, error) {
	qctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	rows, err := p.pool.Query(qctx, `SELECT project_id::text, order_no, mark FROM projection_redis_dirty
		WHERE orders_table = $1 ORDER BY mark LIMIT $2`, p.tables.Orders, repairBatch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (dirtyMark, error) {
		var m dirtyMark
		err := row.Scan(&m.ref.projectID, &m.ref.orderNo, &m.mark)
		return m, err
	})
}
