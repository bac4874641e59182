package command

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/store"
)

// Group commit of new orders. Under load, PostgreSQL spends most of its CPU
// per transaction (statement start, commit, WAL flush), not per row: one
// statement that creates ten orders costs a fraction of ten statements.
// So new orders that arrive while others are being written wait for the
// next statement and are created together with them, in one transaction:
//
//   - An order that finds no statement in flight is written at once, alone;
//     batches form only while a statement runs, so an idle service adds no
//     delay.
//   - Every order of a batch gets exactly what the one-statement path would
//     have given it: the idempotency key's advisory lock, its stored
//     response, the order, its order.created event and its idempotency
//     record, all committed together or not at all.
//   - A batch never holds two orders with the same idempotency key, orderNo
//     or paymentRef; the later one waits for the next batch and then sees
//     the earlier one as a committed row, as it would one statement later.
//   - The statement reads the projects' test modes once and sets each
//     order's itself; the orders_test_mode trigger runs only for rows that
//     arrive without one (migration 00195), so a batch's orders cost no
//     PL/pgSQL call and query each.
//   - Any error of the batch statement (a paymentRef taken by an existing
//     order, a deadlock, a lost connection) rolls the whole batch back, and
//     each of its orders is then written alone on the one-statement path,
//     which answers each error for its own order.

const (
	// One statement in flight, and a second only while the first has been
	// in flight for createStall (store.Batcher): with one runner a batch
	// held 14.5 orders on a two-core machine against 7.5 with two, and
	// PostgreSQL spent a fifth less CPU per order (docs/performance.md,
	// round 8). A batch grows to createMaxBatch when statements are slow, so
	// one runner does not cap the rate.
	createStall    = 5 * time.Millisecond
	createMaxBatch = 100 // orders per statement
)

// createItem is one new order waiting for its batch.
type createItem struct {
	args createArgs
	done chan createResult
}

// createResult is what the statement said about one order. fallback asks
// the caller to write it alone (the batch failed).
type createResult struct {
	locked     bool
	prevHash   []byte
	prevStatus *int16
	prevBody   []byte
	inserted   bool
	fallback   bool
}

type createBatcher struct {
	pool *pgxpool.Pool

	// What was written: statements, orders in them, orders that fell back.
	statements, orders, fallbacks atomic.Int64
	sizes                         prometheus.Histogram
	fallbackCount                 prometheus.Counter
	stallRunners                  prometheus.Counter

	batches store.Batcher[*createItem]
}

func newCreateBatcher(pool *pgxpool.Pool) *createBatcher {
	b := &createBatcher{
		pool: pool,
		sizes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "o2i_order_create_batch_orders", Help: "New orders per group-commit statement.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 100},
		}),
		fallbackCount: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "o2i_order_create_fallbacks_total", Help: "New orders written alone after their batch failed.",
		}),
		stallRunners: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "o2i_order_create_stall_runners_total", Help: "Runners started beside a group-commit statement in flight for 5 ms or longer.",
		}),
	}
	b.batches = store.Batcher[*createItem]{Stall: createStall, Take: b.take, Write: b.write, OnStallRunner: b.stallRunners.Inc}
	return b
}

// create writes one new order, in a batch with others arriving meanwhile.
func (b *createBatcher) create(ctx context.Context, a createArgs) (createResult, error) {
	it := &createItem{args: a, done: make(chan createResult, 1)}
	b.batches.Add(it)
	select {
	case r := <-it.done:
		return r, nil
	case <-ctx.Done():
		// The batch may still commit the order; a retry with the same key
		// then gets the stored response.
		return createResult{}, ctx.Err()
	}
}

// take splits the waiting orders into the next batch and the rest: oldest
// first, at most createMaxBatch, no two orders sharing an idempotency key,
// orderNo or paymentRef. The rest reuses pending's array.
func (b *createBatcher) take(pending []*createItem) (batch, rest []*createItem) {
	batch = make([]*createItem, 0, min(len(pending), createMaxBatch))
	seen := make(map[string]struct{}, 3*cap(batch))
	rest = pending[:0]
	for _, it := range pending {
		ks := it.args.uniqueKeys()
		clash := len(batch) == createMaxBatch
		for _, k := range ks {
			if _, ok := seen[k]; ok {
				clash = true
			}
		}
		if clash {
			rest = append(rest, it)
			continue
		}
		for _, k := range ks {
			seen[k] = struct{}{}
		}
		batch = append(batch, it)
	}
	return batch, rest
}

// write runs one batch statement and hands every order its result.
func (b *createBatcher) write(batch []*createItem) {
	// Sorted by orderNo, concurrent batches take the orderNo index entries
	// in one order and cannot deadlock on them.
	slices.SortFunc(batch, func(x, y *createItem) int {
		if c := strings.Compare(x.args.projectID, y.args.projectID); c != 0 {
			return c
		}
		return strings.Compare(x.args.orderNo, y.args.orderNo)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() {
		// Never leave a waiting order without an answer.
		if p := recover(); p != nil {
			slog.Error("create orders: panic", "panic", p)
			for _, it := range batch {
				select {
				case it.done <- createResult{fallback: true}:
				default:
				}
			}
		}
	}()
	results, err := b.exec(ctx, batch)
	b.statements.Add(1)
	b.orders.Add(int64(len(batch)))
	b.sizes.Observe(float64(len(batch)))
	if err != nil {
		b.fallbacks.Add(int64(len(batch)))
		b.fallbackCount.Add(float64(len(batch)))
	}
	for i, it := range batch {
		if err != nil {
			it.done <- createResult{fallback: true}
			continue
		}
		it.done <- results[i]
	}
}

const createOrdersSQL = `WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[],
    $8::text[], $9::bytea[], $10::bytea[], $11::timestamptz[], $12::text[], $13::text[], $14::text[], $15::text[],
    $16::bytea[], $17::bytea[], $19::text[], $20::text[])
  WITH ORDINALITY AS i(lock_key, project_id, key, id, order_no, payment_ref, requires_shipping,
    content, content_hash, invoice_hash, at, topic, msg_key, event_id, event_type, payload, body, traceparent, tracestate, n)),
lk AS (SELECT i.*, pg_try_advisory_xact_lock(i.lock_key) AS ok FROM input i),
mode AS (
  SELECT p.id, p.test_mode FROM projects p WHERE p.id IN (SELECT DISTINCT project_id::uuid FROM input)),
prev AS (
  SELECT lk.n, k.request_hash, k.response_status, k.response_body FROM lk
  JOIN idempotency_keys k ON k.project_id = lk.project_id::uuid AND k.endpoint = $18 AND k.key = lk.key),
ins AS (
  INSERT INTO orders (id, project_id, order_no, payment_ref, requires_shipping, content, content_hash, invoice_hash, created_at, updated_at, test_mode)
  SELECT lk.id::uuid, lk.project_id::uuid, lk.order_no, NULLIF(lk.payment_ref, ''), lk.requires_shipping, lk.content::jsonb,
    lk.content_hash, lk.invoice_hash, lk.at, lk.at, coalesce(mode.test_mode, false)
  FROM lk LEFT JOIN mode ON mode.id = lk.project_id::uuid
  WHERE lk.ok AND NOT EXISTS (SELECT 1 FROM prev WHERE prev.n = lk.n) ORDER BY lk.n
  ON CONFLICT ON CONSTRAINT orders_order_no_key DO NOTHING
  RETURNING id::text),
ob AS (
  INSERT INTO outbox (project_id, topic, msg_key, event_id, event_type, payload, traceparent, tracestate)
  SELECT lk.project_id::uuid, lk.topic, lk.msg_key, lk.event_id::uuid, lk.event_type, lk.payload,
    nullif(lk.traceparent, ''), nullif(lk.tracestate, '')
  FROM lk JOIN ins ON ins.id = lk.id ORDER BY lk.n),
idem AS (
  INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status, response_body)
  SELECT lk.project_id::uuid, $18, lk.key, lk.content_hash, 201, lk.body FROM lk JOIN ins ON ins.id = lk.id)
SELECT lk.ok, prev.request_hash, prev.response_status, prev.response_body, ins.id IS NOT NULL
FROM lk LEFT JOIN prev ON prev.n = lk.n LEFT JOIN ins ON ins.id = lk.id ORDER BY lk.n`

// exec runs the batch statement; results are in batch order.
func (b *createBatcher) exec(ctx context.Context, batch []*createItem) ([]createResult, error) {
	n := len(batch)
	var (
		lockKeys   = make([]int64, n)
		projects   = make([]string, n)
		keys       = make([]string, n)
		ids        = make([]string, n)
		orderNos   = make([]string, n)
		paymentRef = make([]string, n) // "" for none: a []string takes pgx's plan without reflection
		shipping   = make([]bool, n)
		contents   = make([]string, n)
		hashes     = make([][]byte, n)
		invHashes  = make([][]byte, n)
		ats        = make([]time.Time, n)
		topics     = make([]string, n)
		msgKeys    = make([]string, n)
		eventIDs   = make([]string, n)
		eventTypes = make([]string, n)
		payloads   = make([][]byte, n)
		bodies     = make([][]byte, n)
		parents    = make([]string, n)
		states     = make([]string, n)
	)
	for i, it := range batch {
		a := it.args
		lockKeys[i], projects[i], keys[i], ids[i], orderNos[i] = a.lockKey, a.projectID, a.key, a.id, a.orderNo
		if a.paymentRef != nil {
			paymentRef[i] = *a.paymentRef
		}
		shipping[i], contents[i], hashes[i], invHashes[i] = a.requiresShipping, string(a.content), a.contentHash, a.invoiceHash
		ats[i], bodies[i] = a.at, a.body
		topics[i], msgKeys[i], eventIDs[i], eventTypes[i], payloads[i] = a.event.Topic, a.event.Key, a.event.EventID, a.event.Type, a.event.Payload
		parents[i], states[i] = a.event.Traceparent, a.event.Tracestate
	}
	conn, err := store.Acquire(ctx, b.pool) // a busy pool fails the batch at once: each order then answers 503 alone
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, createOrdersSQL, lockKeys, projects, keys, ids, orderNos, paymentRef, shipping,
		contents, hashes, invHashes, ats, topics, msgKeys, eventIDs, eventTypes, payloads, bodies, endpointOrders, parents, states)
	if err != nil {
		return nil, fmt.Errorf("create orders: %w", err)
	}
	defer rows.Close()
	out := make([]createResult, 0, n)
	for rows.Next() {
		var r createResult
		if err := rows.Scan(&r.locked, &r.prevHash, &r.prevStatus, &r.prevBody, &r.inserted); err != nil {
			return nil, fmt.Errorf("create orders: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("create orders: %w", err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("create orders: %d results for %d orders", len(out), n)
	}
	return out, nil
}
