package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/testenv"
)

// writes measures POST /v1/orders with realistic orders, the projection lag
// meanwhile, and pgbench inserting one ~1 KB JSONB row per transaction at
// the same concurrency (the database's own ceiling on this machine).
func (b *bench) writes(ctx context.Context, conns int, d time.Duration) ([]result, error) {
	if err := b.serve(ctx); err != nil {
		return nil, err
	}
	pg1, err := b.pgbench(ctx, conns, d)
	if err != nil {
		return nil, err
	}
	log.Printf("writes: pgbench %s", pg1)

	_, keys, err := b.newProject(ctx, "bench writes "+time.Now().Format(time.RFC3339), 16)
	if err != nil {
		return nil, err
	}
	// Warm-up: the projectors must have joined their consumer group before
	// the lag is measured (a join can wait for a former member's session).
	if err := b.probeProjection(ctx, keys[0]); err != nil {
		return nil, err
	}
	defer b.drainOutbox(ctx) // leave no backlog to the next run
	before, err := b.histogram("o2i_projection_lag_seconds")
	if err != nil {
		return nil, err
	}
	// wrk drives the load (far less CPU than a Go client on these two
	// shared cores); every request is a new order with its own orderNo and
	// Idempotency-Key, unique per wrk run and thread.
	// What an order costs the database: group-commit statements (one round
	// trip each) and committed transactions of the whole service (relay,
	// projector and request log included) per accepted order, over the
	// warm-up and the measured run together.
	orders0, statements0, err := b.sumCount("o2i_order_create_batch_orders")
	if err != nil {
		return nil, err
	}
	stalls0 := b.counter("o2i_order_create_stall_runners_total", true)
	var commits0 int64
	if err := b.pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits0); err != nil {
		return nil, err
	}
	b.profileAs = "writes"
	lat, err := b.wrk(ctx, b.baseURL, writeScript(keys), conns, d)
	if err != nil {
		return nil, err
	}
	if lat.non2xx > 0 {
		return nil, fmt.Errorf("POST /v1/orders: %d of %d responses were not 2xx", lat.non2xx, lat.total)
	}
	log.Printf("writes: orders %s; %s", lat, lat.cost())
	orders1, statements1, err := b.sumCount("o2i_order_create_batch_orders")
	if err != nil {
		return nil, err
	}
	stalls := b.counter("o2i_order_create_stall_runners_total", true) - stalls0
	_, _ = b.pool.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	var commits1 int64
	if err := b.pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits1); err != nil {
		return nil, err
	}
	perStatement := (orders1 - orders0) / max(statements1-statements0, 1)
	perOrder := float64(commits1-commits0) / max(orders1-orders0, 1)
	log.Printf("writes: %.1f orders per group-commit statement (%.0f statements; a second runner started %.0f times beside a statement in flight for 5 ms), %.2f committed transactions per order in the whole database",
		perStatement, statements1-statements0, stalls, perOrder)
	// Let the projector finish what the load produced before reading the lag.
	time.Sleep(2 * time.Second)
	after, err := b.histogram("o2i_projection_lag_seconds")
	if err != nil {
		return nil, err
	}
	p99, events := quantile(before, after, 0.99)
	p50, _ := quantile(before, after, 0.50)
	// The ceiling again: the machine's load moves between runs, and the
	// share is taken of the mean of the runs before and after.
	pg2, err := b.pgbench(ctx, conns, d)
	if err != nil {
		return nil, err
	}
	log.Printf("writes: pgbench again %s", pg2)
	return []result{
		{
			What: fmt.Sprintf("POST /v1/orders, realistic orders (~1 KB), %d connections, synchronous_commit on", conns),
			Measured: fmt.Sprintf("%.0f accepted orders/s, p50 %s, p99 %s (wrk) = %.0f %% of the ceiling (its mean); %.1f orders per insert statement (a second statement beside a stalled one %.0f times), %.2f transactions per order (all roles); %s%s",
				lat.rps, ms(lat.p50), ms(lat.p99), 200*lat.rps/(pg1.tps+pg2.tps), perStatement, stalls, perOrder, lat.cost(), loadAverage()),
			Ceiling: fmt.Sprintf("pgbench, one ~1 KB JSONB row per transaction, %d clients, before and after: %s; %s", conns, pg1, pg2),
			Target:  "≥ 35 % of the ceiling, p99 < 25 ms",
		},
		{
			What:     "projection lag (event committed → visible in GET) while the write load runs",
			Measured: fmt.Sprintf("p50 %.0f ms, p99 %.0f ms over %d events", p50*1000, p99*1000, events),
			Ceiling:  "-",
			Target:   "p99 < 250 ms",
		},
	}, nil
}

// writeScript is the wrk script of the write load: orderJSON with a fresh
// orderNo (= Idempotency-Key, paymentRef pi_<orderNo>) per request.
func writeScript(keys []string) string {
	tmpl := strings.Replace(string(orderJSON("ORDERNO", 0)), "ORDERNO", "%s", 2)
	tmpl = strings.Replace(tmpl, "kunde0@", "kunde%d@", 1)
	return fmt.Sprintf(`
local keys = %s
local template = %s
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local counter = 0
local prefix
function init(args)
  prefix = "W-" .. os.time() .. "-" .. tid .. "-"
end
request = function()
  counter = counter + 1
  local no = prefix .. counter
  return wrk.format("POST", "/v1/orders", {
    ["Authorization"] = "Bearer " .. keys[(counter %% #keys) + 1],
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = no,
  }, string.format(template, no, no, counter))
end`, luaStrings(keys), strconv.Quote(tmpl))
}

// orderJSON is a realistic order body: three lines at two rates, shipping,
// full addresses; about 1 KB.
func orderJSON(orderNo string, n int64) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":%q,"paymentGateway":"stripe","financialStatus":"paid","email":"kunde%d@example.com","currency":"EUR","requiresShipping":true,
"billingAddress":{"country_code":"DE","name":"Erika Musterfrau","company_name":"Musterfrau Handels KG","street":"Lindenstraße 12","additional_address_line":"Hinterhaus, 2. OG","postal_code":"50667","city":"Köln"},
"shippingAddress":{"country_code":"DE","name":"Erika Musterfrau","street":"Lindenstraße 12","postal_code":"50667","city":"Köln"},
"items":[{"name":"Bio-Kaffee Espresso 1 kg","quantity":2,"unitGrossCents":1899,"taxRate":7,"sku":"KAF-ESP-1000","productId":"p-1001"},
{"name":"Keramiktasse handgemacht","quantity":1,"unitGrossCents":2490,"taxRate":19,"sku":"TAS-KER-01","productId":"p-2002"},
{"name":"Entkalker 500 ml","quantity":1,"unitGrossCents":799,"taxRate":19,"sku":"ENT-500","productId":"p-3003","discountNetCents":100}],
"shippingGrossCents":490}`, orderNo, "pi_"+orderNo, n))
}

var pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchRun is one pgbench run: its rate and the latency of its
// transactions (from its per-transaction log), the database's own tail
// beside which the POST's p99 is read.
type pgbenchRun struct {
	tps      float64
	p50, p99 time.Duration
}

func (r pgbenchRun) String() string {
	return fmt.Sprintf("%.0f tps, p50 %s, p99 %s", r.tps, ms(r.p50), ms(r.p99))
}

// pgbench inserts one ~1 KB JSONB row per transaction with conns clients.
func (b *bench) pgbench(ctx context.Context, conns int, d time.Duration) (pgbenchRun, error) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
		if len(matches) == 0 {
			return pgbenchRun{}, fmt.Errorf("pgbench not found (Debian package postgresql-contrib or postgresql)")
		}
		bin = matches[len(matches)-1]
	}
	if _, err := b.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_jsonb (id bigserial PRIMARY KEY, doc jsonb NOT NULL)`); err != nil {
		return pgbenchRun{}, err
	}
	doc := strings.ReplaceAll(string(orderJSON("PGBENCH", 1)), "\n", "")
	script := filepath.Join(b.dir, "insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO bench_jsonb (doc) VALUES ('"+strings.ReplaceAll(doc, "'", "''")+"');\n"), 0o644); err != nil {
		return pgbenchRun{}, err
	}
	// -l: one line per transaction (its latency in µs third), in a file
	// per thread named by the prefix.
	logs, err := os.MkdirTemp(b.dir, "pgbench-log-")
	if err != nil {
		return pgbenchRun{}, err
	}
	defer os.RemoveAll(logs)
	out, err := exec.CommandContext(ctx, bin, "-n", "-c", strconv.Itoa(conns), "-j", "2", "-T", strconv.Itoa(int(d.Seconds())),
		"-l", "--log-prefix", filepath.Join(logs, "tx"), "-f", script, testenv.Env("O2I_DATABASE_URL")).CombinedOutput()
	if err != nil {
		return pgbenchRun{}, fmt.Errorf("pgbench: %v: %s", err, out)
	}
	m := pgbenchTPS.FindStringSubmatch(string(out))
	if m == nil {
		return pgbenchRun{}, fmt.Errorf("pgbench output without tps:\n%s", out)
	}
	_, _ = b.pool.Exec(ctx, `TRUNCATE bench_jsonb`)
	run := pgbenchRun{}
	if run.tps, err = strconv.ParseFloat(m[1], 64); err != nil {
		return pgbenchRun{}, err
	}
	files, _ := filepath.Glob(filepath.Join(logs, "tx.*"))
	var lat []time.Duration
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return pgbenchRun{}, err
		}
		l, err := pgbenchLatencies(data)
		if err != nil {
			return pgbenchRun{}, fmt.Errorf("pgbench log %s: %w", filepath.Base(f), err)
		}
		lat = append(lat, l...)
	}
	if len(lat) == 0 {
		return pgbenchRun{}, fmt.Errorf("pgbench wrote no transaction log")
	}
	run.p50, run.p99 = medianAndP99(lat)
	return run, nil
}

// pgbenchLatencies reads the latencies of a pgbench per-transaction log:
// "client_id transaction_no time script_no time_epoch time_us" a line,
// time in microseconds.
func pgbenchLatencies(data []byte) ([]time.Duration, error) {
	var out []time.Duration
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 6 {
			return nil, fmt.Errorf("line %d: %d fields, want 6: %q", i+1, len(f), line)
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || us < 0 {
			return nil, fmt.Errorf("line %d: latency %q is not a count of microseconds", i+1, f[2])
		}
		out = append(out, time.Duration(us)*time.Microsecond)
	}
	return out, nil
}

// probeProjection posts one order and waits until GET shows it.
func (b *bench) probeProjection(ctx context.Context, key string) error {
	orderNo := fmt.Sprintf("PROBE-%d", time.Now().UnixNano())
	req, _ := http.NewRequestWithContext(ctx, "POST", b.baseURL+"/v1/orders", bytes.NewReader(orderJSON(orderNo, 0)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", orderNo)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	start := time.Now()
	for time.Since(start) < 90*time.Second {
		if err := get(ctx, http.DefaultClient, b.baseURL+"/v1/orders/"+orderNo, key); err == nil {
			log.Printf("writes: projection ready after %s", time.Since(start).Round(time.Millisecond))
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the probe order was not projected within 90 s")
}

// drainOutbox waits (at most a minute) until the relay has published every
// event, so that a following run does not start with an old backlog.
func (b *bench) drainOutbox(ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if n, err := outbox.Backlog(ctx, b.pool); err != nil || n == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	log.Printf("writes: the outbox still holds unsent events after a minute")
}
