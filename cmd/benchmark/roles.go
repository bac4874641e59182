package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/render"
)

// roleConfig sizes the roles stage.
type roleConfig struct {
	duration time.Duration // each load run (wrk), and each number-range loop
	conns    int           // connections of the api loads
	invoices int           // orders the invoicer drains
	mails    int           // e-mails the mailer sends
}

// Where the measured role and the roles beside it serve their metrics.
var (
	roleMetricsAddr    = localAddr(18084)
	supportMetricsAddr = localAddr(18085)
)

// roleRun is what one role did in one phase: items, the CPU time of its
// process and the wall time.
type roleRun struct {
	items int64
	cpu   time.Duration
	wall  time.Duration
}

func (r roleRun) perCore() float64 { return float64(r.items) / max(r.cpu.Seconds(), 1e-3) }
func (r roleRun) perSecond() float64 {
	return float64(r.items) / max(r.wall.Seconds(), 1e-3)
}

// busy is the share of its core the process used.
func (r roleRun) busy() float64 { return r.cpu.Seconds() / max(r.wall.Seconds(), 1e-3) }

func (r roleRun) String() string {
	return fmt.Sprintf("%.0f/s per CPU-second (%d in %s, its core %.0f %% busy, %.0f/s of wall time)",
		r.perCore(), r.items, r.wall.Round(time.Millisecond), 100*r.busy(), r.perSecond())
}

// roles measures what one process of each role sustains on one core: the
// role's process alone runs with GOMAXPROCS=1, pinned to the last core (taskset),
// the roles it needs beside it in a process pinned to the other cores, the
// engines and the load generator wherever the kernel puts them. One role at
// a time: api orders/s, relay events/s, projector events/s, api status
// reads/s, invoicer archived invoices/s, mails/s; then the serialisation
// point, the numbers one number range issues per second. Beside the rates
// it measures what an order costs in PostgreSQL (tables, WAL), the archive
// and Redis, and computes the capacity plan from them (capacity.go).
func (b *bench) roles(ctx context.Context, cfg roleConfig) ([]result, roleFigures, error) {
	var f roleFigures
	if cfg.duration < 2*time.Second || cfg.conns < 1 || cfg.invoices < 2 || cfg.mails < 1 {
		return nil, f, fmt.Errorf("roles: -duration must be at least 2s, -write-conns positive, -role-invoices at least 2 and -role-mails positive")
	}
	b.stopServer()
	if err := waitNoInvoicer(ctx, 3*time.Minute); err != nil {
		return nil, f, err
	}
	if err := b.invoicerCaughtUp(ctx); err != nil {
		return nil, f, err
	}
	measured, support := pinCores()
	if measured == "" {
		log.Printf("roles: taskset or a second core is missing: the role's process runs with GOMAXPROCS=1, not pinned")
	}
	// 64 keys: each has the default rate limit (1000 requests/s).
	projectID, keys, err := b.newProject(ctx, "bench roles "+time.Now().Format(time.RFC3339), 64)
	if err != nil {
		return nil, f, err
	}
	defer b.stopServer()

	// 1. api: POST /v1/orders, nothing else of the service running (the outbox grows).
	b.server = b.pinned(measured, []string{"serve", "--roles", "api"}, "O2I_HTTP_ADDR="+b.addr, "O2I_METRICS_ADDR="+benchMetricsAddr)
	if err := b.startWaiting(ctx, b.server, b.baseURL+"/api/health"); err != nil {
		return nil, f, err
	}
	wal0, db0, err := b.storage(ctx)
	if err != nil {
		return nil, f, err
	}
	cpu0, t0 := b.cpuOf(b.server), time.Now()
	lat, err := b.wrk(ctx, b.baseURL, writeScript(keys), cfg.conns, cfg.duration)
	if err != nil {
		return nil, f, err
	}
	if lat.non2xx > 0 {
		return nil, f, fmt.Errorf("POST /v1/orders: %d of %d responses were not 2xx", lat.non2xx, lat.total)
	}
	var orders int64
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE project_id = $1`, projectID).Scan(&orders); err != nil {
		return nil, f, err
	}
	write := roleRun{items: orders, cpu: b.cpuOf(b.server) - cpu0, wall: time.Since(t0)}
	log.Printf("roles: api orders: %s; wrk %s", write, lat)
	wal1, _, err := b.storage(ctx)
	if err != nil {
		return nil, f, err
	}

	// 2. relay: publishes the outbox the orders left.
	relay, err := b.drainRole(ctx, measured, "relay", "o2i_outbox_published_total", 2*time.Minute, func() (bool, error) {
		n, err := b.outboxLeft(ctx)
		return n == 0, err
	})
	if err != nil {
		return nil, f, err
	}
	log.Printf("roles: relay: %s", relay)

	// 3. projector: applies the orders' events (and whatever its group has not seen yet).
	projected, err := b.drainRole(ctx, measured, "projector", "o2i_projection_events_total", 3*time.Minute, func() (bool, error) {
		var n int64
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM order_view WHERE project_id = $1`, projectID).Scan(&n)
		return n >= orders, err
	})
	if err != nil {
		return nil, f, err
	}
	log.Printf("roles: projector: %s", projected)
	wal2, db2, err := b.storage(ctx)
	if err != nil {
		return nil, f, err
	}
	redisBytes, err := b.statusViewBytes(ctx, projectID)
	if err != nil {
		return nil, f, err
	}

	// 4. api: GET /v1/orders/{orderNo} over the projected orders.
	reads, readLat, err := b.roleReads(ctx, projectID, keys, cfg)
	if err != nil {
		return nil, f, err
	}
	log.Printf("roles: api reads: %s; wrk %s", reads, readLat)

	// 5. invoicer: credit-covered orders accepted while no invoicer runs
	// (relay and projector beside, on the other cores), then the invoicer
	// alone on its core drains them.
	side := b.onCores(support, []string{"serve", "--roles", "relay,projector"}, "O2I_METRICS_ADDR="+supportMetricsAddr)
	if err := side.Start(); err != nil {
		return nil, f, fmt.Errorf("start relay and projector: %w", err)
	}
	b.worker = side
	invProject, invKeys, err := b.newProject(ctx, "bench roles invoices "+time.Now().Format(time.RFC3339), 8)
	if err != nil {
		return nil, f, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	if err := b.postOrders(ctx, client, invKeys, fmt.Sprintf("ROLE-%d-", time.Now().Unix()), cfg.invoices, 16, creditOrder); err != nil {
		return nil, f, err
	}
	if err := b.waitOutbox(ctx, 2*time.Minute); err != nil {
		return nil, f, err
	}
	published0, _ := metricSum(supportMetricsAddr, "o2i_outbox_published_total")
	wal3, db3, err := b.storage(ctx)
	if err != nil {
		return nil, f, err
	}
	invoicer, err := b.drainRole(ctx, measured, "invoicer", "", 4*time.Minute, func() (bool, error) {
		archived, failed, err := b.invoiceCounts(ctx, invProject)
		if err == nil && failed > 0 {
			err = fmt.Errorf("%d invoices failed", failed)
		}
		return archived >= cfg.invoices, err
	})
	if err != nil {
		return nil, f, err
	}
	// Items and wall time from the invoices themselves: first to last archived.
	var firstAt, lastAt time.Time
	if err := b.pool.QueryRow(ctx, `SELECT min(archived_at), max(archived_at) FROM invoices WHERE project_id = $1 AND status = 'archived'`,
		invProject).Scan(&firstAt, &lastAt); err != nil {
		return nil, f, err
	}
	invoicer.items, invoicer.wall = int64(cfg.invoices), max(lastAt.Sub(firstAt), time.Millisecond)
	log.Printf("roles: invoicer: %s", invoicer)
	// The events of the invoicing reach the read models before the sizes are taken.
	if err := b.waitOutbox(ctx, time.Minute); err != nil {
		return nil, f, err
	}
	sleep(ctx, 2*time.Second)
	published1, _ := metricSum(supportMetricsAddr, "o2i_outbox_published_total")
	wal4, db4, err := b.storage(ctx)
	if err != nil {
		return nil, f, err
	}
	var archiveBytes float64
	if err := b.pool.QueryRow(ctx, `SELECT coalesce(sum(size), 0)::float8 / $2 FROM archive_objects WHERE project_id = $1`,
		invProject, cfg.invoices).Scan(&archiveBytes); err != nil {
		return nil, f, err
	}

	// 6. mails: the invoicer role alone sends the documents of the drain
	// (test documents are never mailed: the bench marks their blocked
	// deliveries due, so the mailer sends them to the local SMTP sink).
	mails, err := b.roleMails(ctx, measured, invProject, cfg.mails)
	if err != nil {
		return nil, f, err
	}
	log.Printf("roles: mails: %s", mails)
	b.stopServer()

	// 7. the serialisation point.
	nCounter, nIssuing, nSpread, err := b.numberRange(ctx, projectID, cfg.duration)
	if err != nil {
		return nil, f, err
	}
	log.Printf("roles: number range: %.0f numbers/s, counter alone; %.0f/s with the issuing work inside the lock; %.0f/s over 32 ranges",
		nCounter, nIssuing, nSpread)

	// Per order with its invoice: the accept, relay and projection of the
	// orders (per order) and the invoicing run (per invoice, which includes
	// its credit order's own events).
	walPerOrder := float64(wal2-wal0)/float64(orders) + float64(wal4-wal3)/float64(cfg.invoices)
	dbPerOrder := float64(db2-db0)/float64(orders) + float64(db4-db3)/float64(cfg.invoices)
	eventsPerOrder := 1 + (published1-published0)/float64(cfg.invoices)
	f = roleFigures{
		OrdersPerCore: write.perCore(), ReadsPerCore: reads.perCore(), RelayEventsPerCore: relay.perCore(),
		ProjectionEventsPerCore: projected.perCore(), InvoicesPerCore: invoicer.perCore(), MailsPerSecond: mails.perSecond(),
		RangeNumbersPerSecond: nIssuing, EventsPerOrder: eventsPerOrder, DBBytesPerOrder: dbPerOrder, WALBytesPerOrder: walPerOrder,
		ArchiveBytesPerInvoice: archiveBytes, RedisBytesPerOrder: redisBytes,
	}
	log.Printf("roles: per order: WAL %s (accept %s), PostgreSQL %s, archive %s, Redis %s, %.1f events",
		bytesHuman(walPerOrder), bytesHuman(float64(wal1-wal0)/float64(orders)), bytesHuman(dbPerOrder), bytesHuman(archiveBytes),
		bytesHuman(redisBytes), eventsPerOrder)

	pin := "GOMAXPROCS=1, pinned to core " + measured
	if measured == "" {
		pin = "GOMAXPROCS=1, not pinned (no taskset)"
	}
	row := func(what string, r roleRun, extra string) result {
		return result{
			What:     "one core, " + what + " (" + pin + ")",
			Measured: fmt.Sprintf("%.0f/s per CPU-second of the process%s", r.perCore(), extra),
			Ceiling:  fmt.Sprintf("%d in %.1f s of wall time = %.0f/s, its core %.0f %% busy", r.items, r.wall.Seconds(), r.perSecond(), 100*r.busy()),
			Target:   "-",
		}
	}
	return []result{
		row(fmt.Sprintf("api: POST /v1/orders, realistic orders (~1 KB), %d connections, the api alone", cfg.conns), write,
			fmt.Sprintf("; wrk p50 %s, p99 %s", ms(lat.p50), ms(lat.p99))),
		row("relay: events published from the outbox the orders left", relay, ""),
		row("projector: events applied to the read models and Redis", projected, ""),
		row(fmt.Sprintf("api: GET /v1/orders/{orderNo}, %d connections", cfg.conns), reads, fmt.Sprintf("; wrk p50 %s, p99 %s", ms(readLat.p50), ms(readLat.p99))),
		row(fmt.Sprintf("invoicer: %d credit-covered orders drained to archived invoices (relay, projector beside on the other core)", cfg.invoices), invoicer, ""),
		{
			What:     "one core, invoicer: e-mails of archived documents sent by its mailer to the local SMTP sink (" + pin + ")",
			Measured: fmt.Sprintf("%.0f mails/s of wall time (its pool of O2I_MAIL_CONCURRENCY workers, default 8)", mails.perSecond()),
			Ceiling:  fmt.Sprintf("%d mails, %.1f CPU ms each", mails.items, float64(mails.cpu.Microseconds())/1000/float64(max(mails.items, 1))),
			Target:   "-",
		},
		{
			What: "one core, the serialisation point: one number range, 32 concurrent issuers, each number a committed transaction (synchronous_commit on)",
			Measured: fmt.Sprintf("N = %.0f numbers/s with the issuing work (compute, CII XML, validation, a 7 KB row) inside the range's lock; "+
				"%.0f/s for the counter alone", nIssuing, nCounter),
			Ceiling: fmt.Sprintf("the same counter over 32 ranges (ranges per project and year): %.0f numbers/s", nSpread),
			Target:  "-",
		},
	}, f, nil
}

// pinCores returns the core list of the measured role's process (the last
// core) and of the processes beside it (the others); empty where taskset
// or a second core is missing.
func pinCores() (measured, support string) {
	n := runtime.NumCPU()
	if _, err := exec.LookPath("taskset"); err != nil || n < 2 {
		return "", ""
	}
	if n == 2 {
		return "1", "0"
	}
	return strconv.Itoa(n - 1), fmt.Sprintf("0-%d", n-2)
}

// pinned is a service process with GOMAXPROCS=1, run under taskset on the
// cores given (none: not pinned).
func (b *bench) pinned(cores string, args []string, env ...string) *exec.Cmd {
	return b.onCores(cores, args, append(env, "GOMAXPROCS=1")...)
}

// onCores is a service process run under taskset on the cores given (none:
// not pinned).
func (b *bench) onCores(cores string, args []string, env ...string) *exec.Cmd {
	c := b.command(args, env...)
	if cores != "" {
		if path, err := exec.LookPath("taskset"); err == nil {
			c.Path = path
			c.Args = append([]string{"taskset", "-c", cores, b.bin}, args...)
		}
	}
	return c
}

// startWaiting starts c and waits until url answers 200, and fails when c
// ended meanwhile (then another process answers: its figures would not be c's).
func (b *bench) startWaiting(ctx context.Context, c *exec.Cmd, url string) error {
	if err := c.Start(); err != nil {
		return fmt.Errorf("start %s: %w", b.bin, err)
	}
	if err := waitHTTP(ctx, url); err != nil {
		return err
	}
	if !running(c.Process.Pid) {
		return fmt.Errorf("%s answers, but the process under test (pid %d) has ended: another process listens there", url, c.Process.Pid)
	}
	return nil
}

// cpuOf is the CPU time the process of c has used so far.
func (b *bench) cpuOf(c *exec.Cmd) time.Duration {
	if c == nil || c.Process == nil {
		return 0
	}
	return processTimes()[c.Process.Pid].cpu
}

// drainRole runs role alone in a pinned process until done says so (polled
// every 100 ms, at most limit) and returns its items (the growth of the
// counter metric), the CPU time of its process (start included: small) and
// the wall time from the first item seen to the last.
func (b *bench) drainRole(ctx context.Context, cores, role, counter string, limit time.Duration, done func() (bool, error)) (roleRun, error) {
	c := b.pinned(cores, []string{"serve", "--roles", role}, "O2I_METRICS_ADDR="+roleMetricsAddr)
	if err := c.Start(); err != nil {
		return roleRun{}, fmt.Errorf("start the %s: %w", role, err)
	}
	defer stopProcess(c)
	deadline := time.Now().Add(limit)
	var first, last time.Time
	var items float64
	for {
		ok, err := done()
		if err != nil {
			return roleRun{}, fmt.Errorf("%s: %w", role, err)
		}
		now := time.Now()
		if counter != "" {
			if cur, err := metricSum(roleMetricsAddr, counter); err == nil && cur > items {
				if first.IsZero() {
					first = now
				}
				items, last = cur, now
			}
		} else if first.IsZero() {
			first = now
		}
		if ok {
			if counter == "" {
				last = now
			}
			break
		}
		if now.After(deadline) {
			return roleRun{}, fmt.Errorf("the %s did not finish within %s", role, limit)
		}
		sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return roleRun{}, ctx.Err()
		}
	}
	return roleRun{items: int64(items), cpu: b.cpuOf(c), wall: max(last.Sub(first), time.Millisecond)}, nil
}

// outboxLeft is the number of outbox rows not yet published.
func (b *bench) outboxLeft(ctx context.Context) (int64, error) {
	return outbox.Backlog(ctx, b.pool)
}

// storage returns the WAL position (bytes) and the database's size now.
func (b *bench) storage(ctx context.Context) (wal, size int64, err error) {
	err = b.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, pg_database_size(current_database())`).Scan(&wal, &size)
	return wal, size, err
}

// statusViewBytes is the mean MEMORY USAGE of up to 200 of the project's
// status views in Redis.
func (b *bench) statusViewBytes(ctx context.Context, projectID string) (float64, error) {
	rows, err := b.pool.Query(ctx, `SELECT order_no FROM order_view WHERE project_id = $1 LIMIT 200`, projectID)
	if err != nil {
		return 0, err
	}
	nos, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	var sum, n int64
	for _, no := range nos {
		v, err := b.rdb.MemoryUsage(ctx, readmodel.OrderKey(projectID, no)).Result()
		if err != nil {
			continue // not in Redis
		}
		sum, n = sum+v, n+1
	}
	if n == 0 {
		return 0, fmt.Errorf("no status view of project %s in Redis", projectID)
	}
	return float64(sum) / float64(n), nil
}

// roleReads reads the project's order status records with wrk through the
// api process that runs (b.server).
func (b *bench) roleReads(ctx context.Context, projectID string, keys []string, cfg roleConfig) (roleRun, wrkResult, error) {
	rows, err := b.pool.Query(ctx, `SELECT order_no FROM order_view WHERE project_id = $1 LIMIT 5000`, projectID)
	if err != nil {
		return roleRun{}, wrkResult{}, err
	}
	nos, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return roleRun{}, wrkResult{}, err
	}
	script := fmt.Sprintf(`
local keys = %s
local orders = %s
request = function()
  return wrk.format("GET", "/v1/orders/" .. orders[math.random(#orders)], {["Authorization"] = "Bearer " .. keys[math.random(#keys)]})
end`, luaStrings(keys), luaStrings(nos))
	cpu0, t0 := b.cpuOf(b.server), time.Now()
	before, _ := metricSum(benchMetricsAddr, "o2i_http_requests_total")
	lat, err := b.wrk(ctx, b.baseURL, script, cfg.conns, cfg.duration)
	if err != nil {
		return roleRun{}, wrkResult{}, err
	}
	if lat.non2xx > 0 {
		return roleRun{}, wrkResult{}, fmt.Errorf("GET /v1/orders/{orderNo}: %d of %d responses were not 2xx", lat.non2xx, lat.total)
	}
	after, err := metricSum(benchMetricsAddr, "o2i_http_requests_total")
	if err != nil {
		return roleRun{}, wrkResult{}, err
	}
	return roleRun{items: int64(after - before), cpu: b.cpuOf(b.server) - cpu0, wall: time.Since(t0)}, lat, nil
}

// roleMails marks up to n of the project's blocked deliveries due and
// runs the invoicer role alone until they are sent. The mailer reads the
// documents it sends from the live bucket, where test documents never go:
// the bench copies each PDF there first, under its key, locked for a day
// only.
func (b *bench) roleMails(ctx context.Context, cores, projectID string, n int) (roleRun, error) {
	rows, err := b.pool.Query(ctx, `SELECT id::text, invoice_id::text FROM mail_deliveries
		WHERE project_id = $1 AND status = 'blocked' AND invoice_id IS NOT NULL LIMIT $2`, projectID, n)
	if err != nil {
		return roleRun{}, err
	}
	type delivery struct{ id, invoiceID string }
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (delivery, error) {
		var d delivery
		return d, r.Scan(&d.id, &d.invoiceID)
	})
	if err != nil {
		return roleRun{}, err
	}
	if len(ds) == 0 {
		return roleRun{}, fmt.Errorf("the drain left no delivery to send")
	}
	live, err := newArchive()
	if err != nil {
		return roleRun{}, err
	}
	until := time.Now().Add(24 * time.Hour)
	ids := make([]string, len(ds))
	for i, d := range ds {
		key := archive.InvoicePDFKey(projectID, d.invoiceID)
		pdf, _, err := live.For(true).Get(ctx, key)
		if err != nil {
			return roleRun{}, fmt.Errorf("test PDF of invoice %s: %w", d.invoiceID, err)
		}
		if _, err := live.Put(ctx, key, pdf, "application/pdf", until); err != nil {
			return roleRun{}, err
		}
		ids[i] = d.id
	}
	tag, err := b.pool.Exec(ctx, `UPDATE mail_deliveries SET status = 'pending', next_attempt_at = now() WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		return roleRun{}, err
	}
	due := tag.RowsAffected()
	sent := func() (int64, error) {
		var k int64
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM mail_deliveries WHERE project_id = $1 AND status = 'sent'`, projectID).Scan(&k)
		return k, err
	}
	var firstAt time.Time
	var firstCPU time.Duration
	c := b.pinned(cores, []string{"serve", "--roles", "invoicer"}, "O2I_METRICS_ADDR=")
	if err := c.Start(); err != nil {
		return roleRun{}, err
	}
	defer stopProcess(c)
	deadline := time.Now().Add(3 * time.Minute)
	var k, kFirst int64
	for {
		if k, err = sent(); err != nil {
			return roleRun{}, err
		}
		if k > 0 && firstAt.IsZero() {
			firstAt, firstCPU, kFirst = time.Now(), b.cpuOf(c), k
		}
		if k >= due {
			break
		}
		if time.Now().After(deadline) {
			return roleRun{}, fmt.Errorf("%d of %d e-mails sent after 3 minutes", k, due)
		}
		sleep(ctx, 50*time.Millisecond)
		if ctx.Err() != nil {
			return roleRun{}, ctx.Err()
		}
	}
	// From the first sent to the last: the process's start is left out.
	return roleRun{items: k - kFirst, cpu: b.cpuOf(c) - firstCPU, wall: max(time.Since(firstAt), time.Millisecond)}, nil
}

// takeNumberSQL is the statement the issuing transaction takes its numbers
// with (command's takeNumbers; a test keeps the two the same): an upsert
// of the range's row, which stays locked until the transaction ends.
const takeNumberSQL = `INSERT INTO number_ranges (project_id, range_key, next_seq) VALUES ($1, $2, $3 + 1)
		ON CONFLICT (project_id, range_key) DO UPDATE SET next_seq = number_ranges.next_seq + $3
		RETURNING next_seq - $3`

// numberRange measures the serialisation point: 32 concurrent issuers,
// each number its own committed transaction, against one range (the
// counter alone; then with an issuing transaction's work inside the lock:
// compute and render the typical invoice, validate it, write a row of its
// XML), and the counter alone over 32 ranges.
func (b *bench) numberRange(ctx context.Context, projectID string, d time.Duration) (counter, issuing, spread float64, err error) {
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 32)
	if err != nil {
		return 0, 0, 0, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_issued (id bigserial PRIMARY KEY, range_key text NOT NULL, seq bigint NOT NULL, xml bytea NOT NULL)`); err != nil {
		return 0, 0, 0, err
	}
	defer func() { _, _ = b.pool.Exec(context.WithoutCancel(ctx), `TRUNCATE bench_issued`) }()
	run := fmt.Sprintf("BENCH-%d-", time.Now().UnixNano())
	typical := billing.Typical()
	loop := func(ranges int, work bool) (float64, error) {
		var n atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		end := time.Now().Add(d)
		start := time.Now()
		for w := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("%s%d-%t", run, w%ranges, work)
				for time.Now().Before(end) && ctx.Err() == nil {
					err := issueOne(ctx, pool, projectID, key, work, typical)
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return 0, firstErr
		}
		return float64(n.Load()) / time.Since(start).Seconds(), nil
	}
	if counter, err = loop(1, false); err != nil {
		return 0, 0, 0, err
	}
	if issuing, err = loop(1, true); err != nil {
		return 0, 0, 0, err
	}
	if spread, err = loop(32, false); err != nil {
		return 0, 0, 0, err
	}
	return counter, issuing, spread, nil
}

// issueOne takes one number of the range in its own transaction; with
// work, the issuing work follows while the range's row stays locked.
func issueOne(ctx context.Context, pool *pgxpool.Pool, projectID, key string, work bool, order billing.Scenario) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return store.WithTx(ctx, pool, func(tx pgx.Tx) error {
		var seq int64
		if err := tx.QueryRow(ctx, takeNumberSQL, projectID, key, 1).Scan(&seq); err != nil {
			return fmt.Errorf("number range: %w", err)
		}
		if !work {
			return nil
		}
		docs, err := order.Documents()
		if err != nil {
			return err
		}
		xml, err := render.CII(docs[0])
		if err != nil {
			return err
		}
		if findings := einvoice.CheckXML(xml); !einvoice.Valid(findings) {
			return fmt.Errorf("the typical invoice breaks %v", einvoice.RuleIDs(findings))
		}
		_, err = tx.Exec(ctx, `INSERT INTO bench_issued (range_key, seq, xml) VALUES ($1, $2, $3)`, key, seq, xml)
		return err
	})
}

// metricSum is the sum of every series of a metric (counter or gauge) at
// a metrics address.
func metricSum(addr, name string) (float64, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: status %d", addr, resp.StatusCode)
	}
	return sumExposition(resp.Body, name), nil
}

// sumExposition sums the samples of the metric name in a Prometheus text
// exposition (name alone or with labels; other metrics that start with
// the same letters are not counted).
func sumExposition(r io.Reader, name string) float64 {
	var sum float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// Markers of the capacity section in the operations guide.
const capacityStart, capacityEnd = "<!-- capacity:start -->", "<!-- capacity:end -->"

// capacityVolumes are the order volumes of the plan.
var capacityVolumes = []int64{1_000_000, 10_000_000, 100_000_000}

// writeCapacity renders the plan from f between the markers of the
// operations guide at path, and keeps f as JSON beside the bench's figures.
func writeCapacity(path, jsonPath string, f roleFigures, measured, machine string) (string, error) {
	rows, err := planCapacity(f, defaultAssumptions, capacityVolumes)
	if err != nil {
		return "", err
	}
	section := capacityMarkdown(f, defaultAssumptions, rows, measured, machine)
	if jsonPath != "" {
		raw, _ := json.MarshalIndent(struct {
			Measured string      `json:"measured"`
			Machine  string      `json:"machine"`
			Figures  roleFigures `json:"figures"`
		}{measured, machine, f}, "", "  ")
		if err := os.WriteFile(jsonPath, raw, 0o644); err != nil {
			return "", err
		}
	}
	if path == "" {
		return section, nil
	}
	return section, replaceBetween(path, capacityStart, capacityEnd, section)
}

// replaceBetween replaces the text between two markers of a file.
func replaceBetween(path, start, end, text string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(raw)
	i, j := strings.Index(s, start), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, start, end)
	}
	s = s[:i+len(start)] + "\n" + text + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
