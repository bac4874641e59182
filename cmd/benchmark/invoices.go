package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/render"
)

// invoiceConfig sizes the invoices stage.
type invoiceConfig struct {
	backlog  int           // orders accepted before the invoicer starts
	rate     int           // orders per second of the steady load
	steady   time.Duration // length of the steady load
	profile  string        // file for a CPU profile of the invoicer during the drain
	projects int           // projects the backlog is spread over (each has its own invoice number counter)
	payment  string        // how the backlog's orders are paid: credit (store credit) or card (the provider's webhook)
}

// The ways the drain's orders are paid (-invoice-payment).
const (
	paidByCredit = "credit" // store credit covers the order: due at once, issued without a payment
	paidByCard   = "card"   // the provider reports the card payment by webhook, matched by paymentRef
)

// paidBy describes the drain's orders by how they are paid.
func paidBy(payment string) string {
	if payment == paidByCard {
		return "card-paid (each payment reported by the provider's signed webhook before the drain, matched by paymentRef)"
	}
	return "credit-covered"
}

// benchWebhookSecret signs the card drain's payment webhooks.
const benchWebhookSecret = "whsec_bench"

// invoicerDebugAddr serves the invoicer process's pprof when a profile is asked for.
var invoicerDebugAddr = localAddr(18082)

// invoicerMetricsAddr is where the drain's invoicer serves its metrics.
var invoicerMetricsAddr = localAddr(18087)

// groupCommits says how many statements the invoicer's group commits
// (store.Group) sent per pipeline (the archived marks and the sent
// e-mails' records) and how many orders its issue groups took together.
func groupCommits(addr string) string {
	var parts []string
	for _, g := range []struct{ name, what string }{{"archived_mark", "archived marks"}, {"mail_sent", "sent records"}} {
		sum, count, err := sumCountAt(addr, "o2i_db_group_statements", `{group="`+g.name+`"}`)
		if err != nil {
			return "group commit: " + err.Error()
		}
		parts = append(parts, fmt.Sprintf("%s %.1f per pipeline (%.0f pipelines)", g.what, sum/max(count, 1), count))
	}
	out := "statements per group-commit pipeline: " + strings.Join(parts, ", ")
	// The issuing transactions of several orders of one project (the
	// invoicer's issue groups); the other orders went alone.
	sum, count, err := sumCountAt(addr, "o2i_invoicer_issue_group_orders", "")
	if err != nil {
		return out + "; issue groups: " + err.Error()
	}
	fallbacks, err := metricSum(addr, "o2i_invoicer_issue_group_fallbacks_total")
	if err != nil {
		return out + "; issue groups: " + err.Error()
	}
	return out + fmt.Sprintf("; orders issued in groups of several: %.0f in %.0f transactions (%.1f per transaction, %.0f fell back to one by one)",
		sum, count, sum/max(count, 1), fallbacks)
}

// roundTrips says how many round trips to PostgreSQL (store.RoundTrips)
// the drain cost per invoice in the invoicer's process (started for the
// drain) and in the service's (api, relay, projector; serviceBefore: its
// count when the drain started).
func roundTrips(serviceBefore float64, invoices int) string {
	invoicer, err := metricSum(invoicerMetricsAddr, "o2i_db_round_trips_total")
	if err != nil {
		return "round trips: " + err.Error()
	}
	service, err := metricSum(benchMetricsAddr, "o2i_db_round_trips_total")
	if err != nil {
		return "round trips: " + err.Error()
	}
	n := float64(max(invoices, 1))
	return fmt.Sprintf("PostgreSQL round trips per invoice: invoicer %.2f, service (api, relay, projector) %.2f", invoicer/n, (service-serviceBefore)/n)
}

// invoices measures the path the service exists for, an order becoming an
// archived invoice:
//
//   - drain: cfg.backlog digital orders, due at once (covered by store
//     credit, or paid by card: -invoice-payment), are accepted, and the
//     card payments reported, while no invoicer runs (the service runs api, relay and
//     projector), then the invoicer role is started in a process of its own
//     and drains them; archived invoices/s from the first to the last
//     archived_at. Its ceiling, measured in the same run with the service
//     stopped: the archive's two PUTs per ZUGFeRD invoice (archive.Put, COMPLIANCE
//     retention) at the invoicer's concurrency, and render.PDF alone.
//   - latency: all roles in one process, cfg.rate orders/s for cfg.steady;
//     order accepted (its 201) → invoice archived (archived_at), next to one
//     invoice's PDF rendering and archiving alone.
func (b *bench) invoices(ctx context.Context, cfg invoiceConfig) ([]result, error) {
	if cfg.backlog < 2 || cfg.rate < 1 || cfg.steady < time.Second || cfg.projects < 1 {
		return nil, fmt.Errorf("-invoice-orders must be at least 2, -invoice-rate, -invoice-projects at least 1, -invoice-for at least 1s")
	}
	if cfg.payment != paidByCredit && cfg.payment != paidByCard {
		return nil, fmt.Errorf("-invoice-payment must be %s or %s, got %q", paidByCredit, paidByCard, cfg.payment)
	}
	workers := invoicing.DefaultInvoicerWorkers // the invoicer's Workers (O2I_INVOICER_WORKERS unset)
	b.stopServer()                              // a former stage's service runs an invoicer
	if err := waitNoInvoicer(ctx, 3*time.Minute); err != nil {
		return nil, err
	}
	if err := b.invoicerCaughtUp(ctx); err != nil {
		return nil, err
	}

	// The backlog, with no invoicer running.
	if err := b.serveRoles(ctx, "api,relay,projector"); err != nil {
		return nil, err
	}
	// Statement statistics of the backlog's acceptance (API, relay,
	// projector) and, apart, of the drain.
	stats := resetStatements(ctx, b.pool)
	var drainProjects, keys, keyProjects []string // keyProjects[i]: the project of keys[i]
	for range cfg.projects {
		id, k, err := b.newProject(ctx, "bench invoices drain "+time.Now().Format(time.RFC3339), max(1, 16/cfg.projects))
		if err != nil {
			return nil, err
		}
		// A live project: its documents go to the locked bucket with
		// COMPLIANCE retention, as in production.
		live := false
		if _, err := project.Apply(ctx, b.pool, id, project.Update{TestMode: &live,
			Settings: func(s *project.Settings) { s.StripeWebhookSecret = benchWebhookSecret }}); err != nil {
			return nil, err
		}
		drainProjects, keys = append(drainProjects, id), append(keys, k...)
		for range k {
			keyProjects = append(keyProjects, id)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	prefix := fmt.Sprintf("INV-%d-", time.Now().Unix())
	start := time.Now()
	order := creditOrder
	if cfg.payment == paidByCard {
		order = cardOrder
	}
	if err := b.postOrders(ctx, client, keys, prefix, cfg.backlog, 16, order); err != nil {
		return nil, err
	}
	log.Printf("invoices: %d orders accepted in %s", cfg.backlog, time.Since(start).Round(time.Millisecond))
	if cfg.payment == paidByCard {
		start := time.Now()
		if err := b.postPayments(ctx, client, keyProjects, prefix, cfg.backlog, 8); err != nil {
			return nil, err
		}
		log.Printf("invoices: %d card payments matched in %s", cfg.backlog, time.Since(start).Round(time.Millisecond))
	}
	if err := b.waitOutbox(ctx, time.Minute); err != nil {
		return nil, err
	}
	lag, err := invoicerLag(ctx)
	if err != nil {
		return nil, err
	}
	early, _, err := b.invoiceCounts(ctx, drainProjects...)
	if err != nil {
		return nil, err
	}
	if early > 0 {
		// Another process of the invoicer group runs on this stack (a test):
		// it takes partitions, so the drain would not be this invoicer's.
		return nil, fmt.Errorf("%d invoices were archived before the invoicer under test started: another invoicer (consumer group %s) runs on this stack", early, invoicing.InvoicerGroup)
	}
	log.Printf("invoices: backlog in Kafka, invoicer group lag %d events", lag)

	// The drain.
	env := []string{"O2I_METRICS_ADDR=" + invoicerMetricsAddr}
	if cfg.profile != "" {
		env = append(env, "O2I_DEBUG_ADDR="+invoicerDebugAddr)
	}
	if stats {
		if accepted, err := readStatements(ctx, b.pool); err != nil {
			log.Printf("invoices: statement statistics: %v", err)
		} else {
			log.Printf("invoices: backlog accepted (API, relay, projector), %s", statementReport(accepted, cfg.backlog, 15))
		}
		stats = resetStatements(ctx, b.pool)
	}
	counts0, err := b.counts(ctx)
	if err != nil {
		return nil, err
	}
	wal0, err := walPosition(ctx, b.pool)
	if err != nil {
		return nil, err
	}
	b.worker = b.command([]string{"serve", "--roles", "invoicer"}, env...)
	started := time.Now()
	if err := b.worker.Start(); err != nil {
		b.worker = nil
		return nil, fmt.Errorf("start the invoicer: %w", err)
	}
	busy0, procs0 := machineBusy(), processTimes()
	serviceTrips0, _ := metricSum(benchMetricsAddr, "o2i_db_round_trips_total")
	var profiled sync.WaitGroup
	var serviceProfiled func()
	// At least 20 invoices/s: a machine shared with other loads drains slowly.
	limit := max(3*time.Minute, time.Duration(cfg.backlog/20)*time.Second)
	deadline := started.Add(limit)
	others := 0 // the most other members of the invoicer group seen during the drain
	for polls := 0; ; polls++ {
		if polls%3 == 1 { // every 6 s
			if n, err := invoicerMembers(ctx); err == nil {
				others = max(others, n-1)
			}
		}
		archived, failed, err := b.invoiceCounts(ctx, drainProjects...)
		if err != nil {
			return nil, err
		}
		if failed > 0 {
			return nil, fmt.Errorf("%d invoices of the drain failed validation", failed)
		}
		if archived > 0 && cfg.profile != "" {
			cfg.profile = b.profileInvoicer(&profiled, cfg.profile)
		}
		if archived > 0 && serviceProfiled == nil {
			// With -profile DIR, the service's (API, relay, projector) too:
			// DIR/drain.cpu.pprof and DIR/drain.allocs.pprof.
			serviceProfiled = b.prof.during(ctx, "drain", 16*time.Second)
		}
		if archived == cfg.backlog {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d invoices archived %s after the invoicer started", archived, cfg.backlog, limit)
		}
		// Each poll counts the project's invoices: a statement of the
		// bench on the PostgreSQL under measurement (it reads every
		// invoice of the drain: about 20 ms in a drain of 6,000), so not
		// often. The rate and the time to the last archived invoice are
		// taken from archived_at, not from the polls.
		sleep(ctx, 2*time.Second)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	// CPU while draining: each part of the stack's per invoice, and how
	// busy the machine was (every process of the stack shares its cores).
	busy := machineBusy() - busy0
	shares := cpuSpent(procs0, processTimes(), b.stackProcess)
	var first, last time.Time
	if err := b.pool.QueryRow(ctx, `SELECT min(archived_at), max(archived_at) FROM invoices WHERE project_id = ANY($1) AND status = 'archived'`,
		drainProjects).Scan(&first, &last); err != nil {
		return nil, err
	}
	rate := float64(cfg.backlog-1) / last.Sub(first).Seconds()
	total := last.Sub(started)
	busyShare := busy.Seconds() / time.Since(started).Seconds() / float64(runtime.NumCPU())
	log.Printf("invoices: drain: %.0f archived invoices/s (first to last, %s), all archived %s after the invoicer started (first after %s); "+
		"machine %.0f %% busy; CPU ms per invoice: %s",
		rate, last.Sub(first).Round(time.Millisecond), total.Round(time.Millisecond), first.Sub(started).Round(time.Millisecond),
		100*busyShare, perItem(shares, cfg.backlog))
	profiled.Wait()
	if serviceProfiled != nil {
		serviceProfiled()
	}
	log.Printf("invoices: drain: %s", groupCommits(invoicerMetricsAddr))
	log.Printf("invoices: drain: %s", roundTrips(serviceTrips0, cfg.backlog))
	// The invoicer's peak RSS since it started: the drain's.
	invoicerPeak := peakRSS(b.worker.Process.Pid)
	b.stopServer() // its connections end: PostgreSQL's counters include their last transactions
	counts1, err := b.counts(ctx)
	if err != nil {
		return nil, err
	}
	requests := counts0.perInvoice(counts1, cfg.backlog)
	log.Printf("invoices: drain: %s", requests)
	if wal1, err := walPosition(ctx, b.pool); err != nil {
		log.Printf("invoices: drain: WAL position: %v", err)
	} else {
		logWAL(ctx, b.pool, "invoices: drain", wal0, wal1, cfg.backlog)
	}
	if stats {
		if drained, err := readStatements(ctx, b.pool); err != nil {
			log.Printf("invoices: statement statistics: %v", err)
		} else {
			log.Printf("invoices: drain (invoicer, relay, projector), %s", statementReport(drained, cfg.backlog, 40))
		}
	}
	shared := ""
	if others > 0 {
		shared = fmt.Sprintf(" (%d other invoicers joined the group during the drain and took partitions: not this invoicer's figure alone)", others)
		log.Printf("invoices: drain:%s", shared)
	}

	// The ceilings, on the very documents of the drain, with the service stopped.
	var xml, manifest []byte
	if err := b.pool.QueryRow(ctx, `SELECT i.xml, m.body FROM invoices i JOIN archive_manifests m ON m.invoice_id = i.id
		WHERE i.project_id = $1 LIMIT 1`, drainProjects[0]).Scan(&xml, &manifest); err != nil {
		return nil, err
	}
	pdf, err := render.PDF(xml)
	if err != nil {
		return nil, err
	}
	// The machine CPU a PDF and an archived invoice cost at least: this
	// process's CPU while it renders on one core, and MinIO's and this
	// process's while it only archives (the floor under the drain's figure).
	self, minio := os.Getpid(), pidFile(".dev/minio.pid")
	floorGroup := func(pid int, _ string) string {
		switch pid {
		case self:
			return "client"
		case minio:
			return "MinIO"
		}
		return ""
	}
	before := processTimes()
	pdfOne, _, err := rendering(ctx, xml, 1, 3*time.Second)
	if err != nil {
		return nil, err
	}
	renderCPU := cpuPerCall(cpuSpent(before, processTimes(), floorGroup), pdfOne*3)
	pdfAll, _, err := rendering(ctx, xml, runtime.GOMAXPROCS(0), 3*time.Second)
	if err != nil {
		return nil, err
	}
	arch, err := newArchive()
	if err != nil {
		return nil, err
	}
	before = processTimes()
	puts, _, err := archiving(ctx, arch, xml, pdf, manifest, workers, 5*time.Second, false)
	if err != nil {
		return nil, err
	}
	archiveShares := cpuSpent(before, processTimes(), floorGroup)
	archiveCPU := cpuPerCall(archiveShares, puts*5)
	floor := fmt.Sprintf("machine CPU per invoice of these alone: render.PDF %.1f ms, archiving %.1f ms (%s), together %.1f ms",
		renderCPU, archiveCPU, perItem(archiveShares, int(puts*5)), renderCPU+archiveCPU)
	log.Printf("invoices: ceiling: %s", floor)
	_, alone, err := archiving(ctx, arch, xml, pdf, manifest, 1, 3*time.Second, true)
	if err != nil {
		return nil, err
	}
	log.Printf("invoices: ceiling: render.PDF %.0f/s on one core, %.0f/s on %d; archive %.0f invoices/s (%d workers); one invoice alone, PDF + archive: p50 %s, p99 %s",
		pdfOne, pdfAll, runtime.GOMAXPROCS(0), puts, workers, ms(alone.p50), ms(alone.p99))

	// Order accepted → invoice archived under a steady load, all roles in one process.
	if err := b.serve(ctx); err != nil {
		return nil, err
	}
	steadyProject, keys, err := b.newProject(ctx, "bench invoices steady "+time.Now().Format(time.RFC3339), 4)
	if err != nil {
		return nil, err
	}
	// Warm-up: the invoicer must have joined its consumer group.
	if err := b.postOrders(ctx, client, keys[:1], prefix+"PROBE-", 1, 1, creditOrder); err != nil {
		return nil, err
	}
	if err := b.waitArchived(ctx, steadyProject, 1, 90*time.Second); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	accepted, err := b.steadyOrders(ctx, client, keys, prefix+"S-", cfg.rate, cfg.steady)
	if err != nil {
		return nil, err
	}
	// What the invoicer had not caught up with when the load ended.
	done, _, err := b.invoiceCounts(ctx, steadyProject)
	if err != nil {
		return nil, err
	}
	behind := len(accepted) + 1 - done
	if err := b.waitArchived(ctx, steadyProject, len(accepted)+1, time.Minute); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT order_no, archived_at FROM invoices WHERE project_id = $1 AND status = 'archived'`, steadyProject)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var lat []time.Duration
	for rows.Next() {
		var no string
		var at time.Time
		if err := rows.Scan(&no, &at); err != nil {
			return nil, err
		}
		if t, ok := accepted[no]; ok {
			lat = append(lat, max(0, at.Sub(t)))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(lat) != len(accepted) {
		return nil, fmt.Errorf("%d of %d orders of the steady load have an archived invoice", len(lat), len(accepted))
	}
	p50, p99 := medianAndP99(lat)
	worst := lat[len(lat)-1]
	log.Printf("invoices: steady %d orders/s: accepted → archived p50 %s, p99 %s, max %s over %d orders; %d not archived yet when the load ended",
		cfg.rate, human(p50), human(p99), human(worst), len(lat), behind)

	kb := func(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }
	return []result{
		{
			What: fmt.Sprintf("invoice pipeline, drain: %d %s digital orders of %s accepted with no invoicer running, then the invoicer role "+
				"(own process, %d workers) issues them (compute, CII XML, EN 16931 validation), renders their PDF/A-3 and archives them (live project: the locked bucket, COMPLIANCE retention)",
				cfg.backlog, paidBy(cfg.payment), projects(cfg.projects), workers),
			Measured: fmt.Sprintf("%.0f archived invoices/s (first to last archived) = %.0f %% of the archive's ceiling, all %d archived %.1f s after the invoicer started; "+
				"meanwhile the machine was %.0f %% busy; the invoicer's peak RSS %.0f MB; CPU ms per invoice by process: %s; %s%s",
				rate, 100*rate/puts, cfg.backlog, total.Seconds(), 100*busyShare, float64(invoicerPeak)/(1<<20), perItem(shares, cfg.backlog), requests, shared),
			Ceiling: fmt.Sprintf("archive alone, archive.Put of the same PDF (%s, the XML of %s embedded) and manifest (%s) with COMPLIANCE retention, %d workers: %.0f invoices/s (%.0f objects/s); "+
				"render.PDF of the same XML alone: %.0f PDFs/s on one core, %.0f on %d cores",
				kb(len(pdf)), kb(len(xml)), kb(len(manifest)), workers, puts, 2*puts, pdfOne, pdfAll, runtime.GOMAXPROCS(0)) + "; " + floor,
			Target: "≥ 300 archived invoices/s (6,000 orders)",
		},
		{
			What: fmt.Sprintf("invoice pipeline, latency: all roles in one process, %d credit-covered digital orders/s for %.0f s (%d orders)",
				cfg.rate, cfg.steady.Seconds(), len(lat)),
			Measured: fmt.Sprintf("order accepted (201) → invoice archived: p50 %s, p99 %s, max %s; %d orders not archived yet when the load ended",
				human(p50), human(p99), human(worst), behind),
			Ceiling: fmt.Sprintf("one invoice at a time, render.PDF + archive.Put of PDF and manifest: p50 %s, p99 %s", ms(alone.p50), ms(alone.p99)),
			Target:  "p99 < 2 s (our target; the issue names none)",
		},
	}, nil
}

// stackProcess names the part of the stack a process belongs to, for the
// CPU figures of a run.
func (b *bench) stackProcess(pid int, comm string) string {
	switch {
	case b.worker != nil && pid == b.worker.Process.Pid:
		return "invoicer"
	case b.server != nil && pid == b.server.Process.Pid:
		return "service (API, relay, projector)"
	case pid == os.Getpid():
		return "load generator"
	}
	switch comm {
	case "postgres":
		return "PostgreSQL"
	case "minio":
		return "MinIO"
	case "devstack":
		// The local stack's own processes: the broker, and the fakes that
		// stand in for what runs elsewhere in production (the SMTP relay,
		// the payment provider).
		switch pid {
		case pidFile(".dev/kafka.pid"):
			return "broker (kfake)"
		case pidFile(".dev/smtp.pid"):
			return "SMTP sink (the relay's stand-in)"
		}
		return "payment provider fakes"
	case "redis-server":
		return "Redis"
	}
	for _, k := range []string{"kworker", "ksoftirqd", "jbd2", "kdamond", "rcu_", "kswapd", "migration"} {
		if strings.HasPrefix(comm, k) {
			return "kernel threads"
		}
	}
	return "other"
}

// human renders a latency in ms below a second, else in s.
func human(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// creditOrder is a digital order paid completely with store credit, with a
// service period: due at once, its invoice issued without a payment.
func creditOrder(orderNo string) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid","email":"kunde@example.com","currency":"EUR",
"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
"items":[{"name":"Beratung je Stunde","quantity":1,"unitNetCents":1000,"taxRate":19,"sku":"BER-STD"}],
"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
"creditRedemptions":[{"type":"referral_credit","amountCents":1190,"externalRef":"ref-%s"}],"grossTotalCents":1190}`, orderNo, orderNo))
}

// postBody sends one order (its number is also its Idempotency-Key) and
// returns when it is accepted; every stage that writes orders uses it.
func (b *bench) postBody(ctx context.Context, c *http.Client, key, orderNo string, body []byte) error {
	if _, err := b.post(ctx, c, "/v1/orders", body, http.StatusCreated, "Authorization", "Bearer "+key, "Idempotency-Key", orderNo); err != nil {
		return fmt.Errorf("order %s: %w", orderNo, err)
	}
	return nil
}

// post sends a JSON body to path with the header pairs and returns the
// answer's body, an error unless its status is want.
func (b *bench) post(ctx context.Context, c *http.Client, path string, body []byte, want int, header ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", b.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		return raw, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	return raw, nil
}

// cardOrder is a digital order paid by card through the payment provider,
// with a service period: due once its payment is reported (postPayments),
// its invoice says it is paid.
func cardOrder(orderNo string) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":%q,"paymentGateway":"stripe","email":"kunde@example.com","currency":"EUR",
"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
"items":[{"name":"Beratung je Stunde","quantity":1,"unitNetCents":1000,"taxRate":19,"sku":"BER-STD"}],
"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},"grossTotalCents":1190}`, orderNo, cardPaymentRef(orderNo)))
}

// cardPaymentRef is the payment intent of a card order.
func cardPaymentRef(orderNo string) string { return "pi_" + orderNo }

// cardPayment is the provider's payment_intent.succeeded of a card order.
func cardPayment(orderNo string) []byte {
	return []byte(fmt.Sprintf(`{"id":"evt_%s","type":"payment_intent.succeeded","data":{"object":{"id":%q,"amount_received":1190,"currency":"eur",
"latest_charge":{"id":"ch_%s","payment_method_details":{"type":"card","card":{"brand":"visa","funding":"credit","last4":"4242"}}}}}}`,
		orderNo, cardPaymentRef(orderNo), orderNo))
}

// postPayments reports the payment of the n card orders (prefix + index;
// order i was sent with keys[i % len(keys)], whose project is
// keyProjects[i % len(keys)]) as the provider does, signed, from conns
// goroutines (below the webhook's limit of requests in flight per client
// address), and checks each was applied to its order.
func (b *bench) postPayments(ctx context.Context, c *http.Client, keyProjects []string, prefix string, n, conns int) error {
	return inParallel(ctx, n, conns, func(ctx context.Context, i int) error {
		orderNo := fmt.Sprintf("%s%d", prefix, i)
		body := cardPayment(orderNo)
		raw, err := b.post(ctx, c, "/v1/webhooks/stripe/"+keyProjects[i%len(keyProjects)], body, http.StatusOK,
			"Stripe-Signature", testenv.StripeSignature(benchWebhookSecret, body, time.Now()))
		if err == nil && !bytes.Contains(raw, []byte(`"applied":true`)) {
			err = fmt.Errorf("the payment of %s was not applied: %s", orderNo, raw)
		}
		return err
	})
}

// postOrders sends n orders (prefix + index; order gives the body of an
// order number) from conns goroutines, order i with keys[i % len(keys)].
func (b *bench) postOrders(ctx context.Context, c *http.Client, keys []string, prefix string, n, conns int, order func(string) []byte) error {
	return inParallel(ctx, n, conns, func(ctx context.Context, i int) error {
		orderNo := fmt.Sprintf("%s%d", prefix, i)
		return b.postBody(ctx, c, keys[i%len(keys)], orderNo, order(orderNo))
	})
}

// inParallel calls do for 0..n-1 from conns goroutines and returns the
// first error, after which no further call starts.
func inParallel(ctx context.Context, n, conns int, do func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				if err := do(ctx, int(i)); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// steadyOrders sends rate credit orders per second for d, each on its own
// goroutine at its tick, and returns when each was accepted.
func (b *bench) steadyOrders(ctx context.Context, c *http.Client, keys []string, prefix string, rate int, d time.Duration) (map[string]time.Time, error) {
	n := int(d.Seconds() * float64(rate))
	accepted := make(map[string]time.Time, n)
	var mu sync.Mutex
	var failed atomic.Int64
	var firstErr error
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	start := time.Now()
	for i := range n {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil, ctx.Err()
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			no := fmt.Sprintf("%s%d", prefix, i)
			err := b.postBody(ctx, c, keys[i%len(keys)], no, creditOrder(no))
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if failed.Add(1) == 1 {
					firstErr = err
				}
				return
			}
			accepted[no] = at
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return nil, fmt.Errorf("%d of %d orders of the steady load were not accepted, the first: %w", f, n, firstErr)
	}
	log.Printf("invoices: steady load: %d orders in %s", n, time.Since(start).Round(time.Millisecond))
	return accepted, nil
}

// invoiceCounts returns how many of the projects' invoices are archived and failed.
func (b *bench) invoiceCounts(ctx context.Context, projectIDs ...string) (archived, failed int, err error) {
	err = b.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'archived'), count(*) FILTER (WHERE status = 'failed')
		FROM invoices WHERE project_id = ANY($1)`, projectIDs).Scan(&archived, &failed)
	return archived, failed, err
}

func projects(n int) string {
	if n == 1 {
		return "one project"
	}
	return fmt.Sprintf("%d projects", n)
}

// waitArchived polls every 100 ms until the project has n archived invoices.
func (b *bench) waitArchived(ctx context.Context, projectID string, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		archived, failed, err := b.invoiceCounts(ctx, projectID)
		switch {
		case err != nil:
			return err
		case failed > 0:
			return fmt.Errorf("%d invoices failed validation", failed)
		case archived >= n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d invoices archived after %s", archived, n, limit)
		}
		sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// waitOutbox waits until the relay has published every event.
func (b *bench) waitOutbox(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		n, err := outbox.Backlog(ctx, b.pool)
		if err != nil || n == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the outbox still holds %d unsent events after %s", n, limit)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// invoicerCaughtUp makes sure the invoicer's consumer group has no older
// events left, so that the drain is only this run's orders: when it has,
// an invoicer runs (at most five minutes) until it has handled them.
func (b *bench) invoicerCaughtUp(ctx context.Context) error {
	lag, err := invoicerLag(ctx)
	if err != nil || lag == 0 {
		return err
	}
	log.Printf("invoices: the invoicer group has %d older events to handle first", lag)
	b.worker = b.command([]string{"serve", "--roles", "relay,invoicer"})
	if err := b.worker.Start(); err != nil {
		b.worker = nil
		return err
	}
	defer b.stopServer()
	deadline := time.Now().Add(5 * time.Minute)
	for polls := 1; lag > 0; polls++ {
		if time.Now().After(deadline) {
			return fmt.Errorf("the invoicer group still has %d events to handle after five minutes", lag)
		}
		sleep(ctx, time.Second)
		if lag, err = invoicerLag(ctx); err != nil {
			return err
		}
		if polls%30 == 0 {
			log.Printf("invoices: the invoicer group has %d older events left", lag)
		}
	}
	return nil
}

// waitNoInvoicer waits until no process is a member of the invoicer's
// consumer group (a member that died leaves after its 10 s session), so
// that the backlog waits for the invoicer under test alone.
func waitNoInvoicer(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for polls := 0; ; polls++ {
		members, err := invoicerMembers(ctx)
		if err != nil {
			return err
		}
		if members == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d other invoicers (consumer group %s) still run on this stack after %s", members, invoicing.InvoicerGroup, limit)
		}
		if polls%5 == 0 {
			log.Printf("invoices: waiting (at most %s) for %d other invoicers (consumer group %s) to leave", limit, members, invoicing.InvoicerGroup)
		}
		sleep(ctx, 2*time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// invoicerMembers is how many processes are members of the invoicer's consumer group.
func invoicerMembers(ctx context.Context) (int, error) {
	c := &kafka.Client{Addr: kafka.TCP(testenv.KafkaBrokers()...), Timeout: 10 * time.Second}
	resp, err := c.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{invoicing.InvoicerGroup}})
	if err != nil {
		return 0, fmt.Errorf("kafka describe group %s: %w", invoicing.InvoicerGroup, err)
	}
	members := 0
	for _, g := range resp.Groups {
		members += len(g.Members)
	}
	return members, nil
}

// invoicerLag is how many order events the invoicer's consumer group has
// not committed yet.
func invoicerLag(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &kafka.Client{Addr: kafka.TCP(testenv.KafkaBrokers()...), Timeout: 10 * time.Second}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{event.TopicOrders}})
	if err != nil {
		return 0, fmt.Errorf("kafka metadata: %w", err)
	}
	var parts []int
	var reqs []kafka.OffsetRequest
	for _, t := range meta.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, p.ID)
			reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	ends, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{event.TopicOrders: reqs}})
	if err != nil {
		return 0, fmt.Errorf("kafka offsets: %w", err)
	}
	committed, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: invoicing.InvoicerGroup, Topics: map[string][]int{event.TopicOrders: parts}})
	if err == nil {
		err = committed.Error
	}
	at := map[int]int64{}
	switch {
	case errors.Is(err, kafka.GroupIdNotFound):
		// The group never committed (a fresh stack): it starts at the first offsets.
	case err != nil:
		return 0, fmt.Errorf("kafka committed offsets: %w", err)
	default:
		for _, p := range committed.Topics[event.TopicOrders] {
			at[p.Partition] = p.CommittedOffset
		}
	}
	var lag int64
	for _, p := range ends.Topics[event.TopicOrders] {
		if p.Error != nil {
			return 0, fmt.Errorf("kafka offsets of partition %d: %w", p.Partition, p.Error)
		}
		from, ok := at[p.Partition]
		if !ok || from < p.FirstOffset {
			from = p.FirstOffset // nothing committed: the invoicer starts at the first offset
		}
		lag += max(0, p.LastOffset-from)
	}
	return lag, nil
}

// profileInvoicer fetches a 15 s CPU profile of the invoicer process into
// file in the background; it returns "" so that it is asked once.
func (b *bench) profileInvoicer(wg *sync.WaitGroup, file string) string {
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Get("http://" + invoicerDebugAddr + "/debug/pprof/profile?seconds=15")
		if err != nil {
			log.Printf("invoices: profile: %v", err)
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d: %s", resp.StatusCode, raw)
		}
		if err == nil {
			err = os.WriteFile(file, raw, 0o644)
		}
		if err != nil {
			log.Printf("invoices: profile: %v", err)
			return
		}
		log.Printf("invoices: CPU profile of the invoicer during the drain in %s", file)
	}()
	return ""
}

// rendering runs render.PDF on xml from workers goroutines for d and
// returns PDFs per second and the latencies.
func rendering(ctx context.Context, xml []byte, workers int, d time.Duration) (float64, latencies, error) {
	return loop(ctx, workers, d, func() error {
		_, err := render.PDF(xml)
		return err
	})
}

// archiving puts the PDF (the XML embedded) and the manifest of one ZUGFeRD
// invoice under fresh keys with COMPLIANCE retention (as the invoicer does: a
// conditional PUT each)
// from workers goroutines for d, rendering the PDF first when withPDF, and
// returns invoices per second and the latencies.
func archiving(ctx context.Context, a *archive.Archive, xml, pdf, manifest []byte, workers int, d time.Duration, withPDF bool) (float64, latencies, error) {
	run := uuid.NewString()
	var n atomic.Int64
	// One day: the length of the retention does not change the work, and
	// locked objects cannot be removed before it ends.
	until := time.Now().Add(24 * time.Hour)
	return loop(ctx, workers, d, func() error {
		doc := pdf
		if withPDF {
			var err error
			if doc, err = render.PDF(xml); err != nil {
				return err
			}
		}
		key := fmt.Sprintf("bench/%s/%d", run, n.Add(1))
		if _, err := a.Put(ctx, key+".pdf", doc, "application/pdf", until); err != nil {
			return err
		}
		_, err := a.Put(ctx, key+".json", manifest, "application/json", until)
		return err
	})
}

// loop runs f from workers goroutines for d and returns the calls per
// second and their latencies.
func loop(ctx context.Context, workers int, d time.Duration, f func() error) (float64, latencies, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var err error
			for time.Now().Before(end) && ctx.Err() == nil {
				t := time.Now()
				if err = f(); err != nil {
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr == nil && len(all) == 0 {
		firstErr = errors.New("no call completed")
	}
	if firstErr != nil {
		return 0, latencies{}, firstErr
	}
	elapsed := time.Since(start)
	p50, p99 := medianAndP99(all)
	return float64(len(all)) / elapsed.Seconds(), latencies{n: len(all), rps: float64(len(all)) / elapsed.Seconds(), p50: p50, p99: p99}, nil
}

// newArchive connects to the stack's archive buckets (live, with the test
// bucket) as the service does.
func newArchive() (*archive.Archive, error) {
	tls := false
	if v := os.Getenv("O2I_S3_USE_TLS"); v != "" {
		var err error
		if tls, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("O2I_S3_USE_TLS: %w", err)
		}
	}
	c, err := minio.New(testenv.Env("O2I_S3_ENDPOINT"), &minio.Options{
		Creds:  credentials.NewStaticV4(testenv.Env("O2I_S3_ACCESS_KEY"), testenv.Env("O2I_S3_SECRET_KEY"), ""),
		Secure: tls,
	})
	if err != nil {
		return nil, fmt.Errorf("O2I_S3_ENDPOINT: %w", err)
	}
	return archive.New(c, testenv.Env("O2I_S3_BUCKET")).WithTest(archive.NewTest(c, testenv.Env("O2I_S3_TEST_BUCKET"))), nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// stackCounts are the stack's request counters: the object store's S3
// requests by API (MinIO's own metrics), PostgreSQL's committed and
// rolled-back transactions of the service's database, and the WAL the
// cluster wrote (bytes, and the full-page images among its records) and
// flushed to disk (calls, and their time: track_wal_io_timing).
type stackCounts struct {
	s3                   map[string]float64 // putobject, headobject, getobject, ...
	commits, rollbacks   float64
	walBytes, walFPI     float64
	walSyncs, walSyncsMs float64
}

// counts reads the stack's counters.
func (b *bench) counts(ctx context.Context) (stackCounts, error) {
	c := stackCounts{s3: map[string]float64{}}
	if err := b.pool.QueryRow(ctx, `SELECT xact_commit::float8, xact_rollback::float8, w.wal_bytes::float8, w.wal_fpi::float8,
			coalesce((to_jsonb(w)->>'wal_sync')::float8, 0), coalesce((to_jsonb(w)->>'wal_sync_time')::float8, 0)
		FROM pg_stat_database, pg_stat_wal w WHERE datname = current_database()`).
		Scan(&c.commits, &c.rollbacks, &c.walBytes, &c.walFPI, &c.walSyncs, &c.walSyncsMs); err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	scheme := "http"
	if os.Getenv("O2I_S3_USE_TLS") == "true" {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://"+testenv.Env("O2I_S3_ENDPOINT")+"/minio/v2/metrics/node", nil)
	if err != nil {
		return c, err
	}
	req.Header.Set("Authorization", "Bearer "+minioMetricsToken(testenv.Env("O2I_S3_ACCESS_KEY"), testenv.Env("O2I_S3_SECRET_KEY")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, fmt.Errorf("object store metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("object store metrics: %s", resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return c, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "minio_s3_requests_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		for _, l := range strings.Split(labels, ",") {
			if api, ok := strings.CutPrefix(l, `api="`); ok {
				v, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
				c.s3[strings.TrimSuffix(api, `"`)] += v
			}
		}
	}
	return c, nil
}

// perInvoice renders the counters' growth from c to d per invoice, n invoices.
func (c stackCounts) perInvoice(d stackCounts, n int) string {
	var parts []string
	apis := make([]string, 0, len(d.s3))
	for api := range d.s3 {
		apis = append(apis, api)
	}
	slices.Sort(apis)
	for _, api := range apis {
		if v := d.s3[api] - c.s3[api]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", api, v/float64(n)))
		}
	}
	// The disk's flush time: a number range's invoices are issued one
	// after another, each waiting for its commit's flush under the range's
	// lock, so a slow flush slows the drain whatever the cores do.
	// A server whose pg_stat_wal does not count flushes reports none.
	flushes := "WAL flushes: not counted by this server"
	if syncs := d.walSyncs - c.walSyncs; syncs > 0 {
		flushes = fmt.Sprintf("WAL flushes per invoice: %.2f", syncs/float64(n))
		if ms := d.walSyncsMs - c.walSyncsMs; ms > 0 {
			flushes += fmt.Sprintf(", %.2f ms each", ms/syncs)
		}
	}
	return fmt.Sprintf("S3 requests per invoice: %s; PostgreSQL transactions per invoice: %.2f committed, %.2f rolled back; WAL per invoice: %.1f KB (%.2f full-page images); %s",
		strings.Join(parts, ", "), (d.commits-c.commits)/float64(n), (d.rollbacks-c.rollbacks)/float64(n),
		(d.walBytes-c.walBytes)/float64(n)/1000, (d.walFPI-c.walFPI)/float64(n), flushes)
}

// minioMetricsToken is the bearer token of MinIO's Prometheus metrics for
// the access key (what `mc admin prometheus generate` prints): an HS512 JWT
// signed with the secret key.
func minioMetricsToken(accessKey, secretKey string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS512","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"exp": time.Now().Add(time.Hour).Unix(), "sub": accessKey, "iss": "prometheus"})
	signed := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha512.New, []byte(secretKey))
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}
