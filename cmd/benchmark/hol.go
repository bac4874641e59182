package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/o2i-service/o2i/internal/project"
)

// The head-of-line stage: project B's backlog of credit-covered orders is
// drained by the invoicer twice, alone and with project A's payment
// provider black-holed (connections accepted, never answered) while
// faultyOrders provider_transfer orders of A, due at once, sit ahead of B's
// on the same partitions. It prints both drain rates side by side; the
// target is B at 90 % or more of its rate without the fault.

// holBlackHole accepts connections and never answers them.
type holBlackHole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newHolBlackHole() (*holBlackHole, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &holBlackHole{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return h, nil
}

func (h *holBlackHole) close() {
	h.ln.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
}

// transferOrder is a service order paid by bank transfer through the
// provider: due at once, its payment order is created first.
func transferOrder(orderNo string) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"email":"kunde-%s@example.com","paymentGateway":"provider_transfer","currency":"EUR",
"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
"items":[{"name":"Beratung je Stunde","quantity":1,"unitNetCents":1000,"taxRate":19,"sku":"BER-STD"}],
"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"}}`, orderNo, orderNo))
}

// hol runs the stage: B alone, then B behind A's hanging provider.
func (b *bench) hol(ctx context.Context, backlog, faultyOrders int) ([]result, error) {
	if backlog < 2 || faultyOrders < 1 {
		return nil, fmt.Errorf("-hol-orders must be at least 2, -hol-faulty at least 1")
	}
	alone, err := b.holDrain(ctx, backlog, 0)
	if err != nil {
		return nil, err
	}
	faulty, err := b.holDrain(ctx, backlog, faultyOrders)
	if err != nil {
		return nil, err
	}
	share := 100 * faulty / alone
	log.Printf("hol: project B drains %.0f invoices/s alone, %.0f/s with %d orders of project A waiting on its black-holed provider (%.0f %%)",
		alone, faulty, faultyOrders, share)
	return []result{{
		What: fmt.Sprintf("invoicer, no head-of-line blocking: %d credit orders of project B drained while %d provider_transfer orders of project A wait on its provider, which accepts connections and never answers",
			backlog, faultyOrders),
		Measured: fmt.Sprintf("%.0f archived invoices/s, first issued to last archived (%.0f %% of the rate without the fault)", faulty, share),
		Ceiling:  fmt.Sprintf("the same drain without the fault: %.0f/s", alone),
		Target:   ">= 90 % of the rate without the fault",
	}}, nil
}

// holDrain accepts the orders with no invoicer running (A's first, when
// faulty > 0), then starts an invoicer whose provider is a black hole and
// returns B's drain rate: from its first invoice issued to its last one
// archived (first to last archived would leave out a drain that issues
// everything before it archives anything).
func (b *bench) holDrain(ctx context.Context, backlog, faulty int) (float64, error) {
	b.stopServer()
	if err := waitNoInvoicer(ctx, 3*time.Minute); err != nil {
		return 0, err
	}
	if err := b.invoicerCaughtUp(ctx); err != nil {
		return 0, err
	}
	hole, err := newHolBlackHole()
	if err != nil {
		return 0, err
	}
	defer hole.close()
	if err := b.serveRoles(ctx, "api,relay,projector"); err != nil {
		return 0, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	stamp := time.Now().Unix()
	if faulty > 0 {
		a, aKeys, err := b.newProject(ctx, "bench hol A "+time.Now().Format(time.RFC3339), 1)
		if err != nil {
			return 0, err
		}
		if _, err := project.Apply(ctx, b.pool, a, project.Update{Settings: func(s *project.Settings) { s.StripeAPIKey = "sk_test_bench_hol" }}); err != nil {
			return 0, err
		}
		for i := range faulty {
			no := fmt.Sprintf("HOLA-%d-%d", stamp, i)
			if err := b.postBody(ctx, client, aKeys[0], no, transferOrder(no)); err != nil {
				return 0, err
			}
		}
	}
	bID, bKeys, err := b.newProject(ctx, "bench hol B "+time.Now().Format(time.RFC3339), 16)
	if err != nil {
		return 0, err
	}
	if err := b.postOrders(ctx, client, bKeys, fmt.Sprintf("HOLB-%d-", stamp), backlog, 16, creditOrder); err != nil {
		return 0, err
	}
	if err := b.waitOutbox(ctx, time.Minute); err != nil {
		return 0, err
	}
	b.worker = b.command([]string{"serve", "--roles", "invoicer"}, "O2I_METRICS_ADDR=", "O2I_STRIPE_API_BASE=http://"+hole.ln.Addr().String())
	var started time.Time
	if err := b.pool.QueryRow(ctx, `SELECT now()`).Scan(&started); err != nil {
		return 0, err
	}
	if err := b.worker.Start(); err != nil {
		b.worker = nil
		return 0, fmt.Errorf("start the invoicer: %w", err)
	}
	if err := b.waitArchived(ctx, bID, backlog, 3*time.Minute); err != nil {
		return 0, fmt.Errorf("project B (%d orders of A waiting on a black hole): %w", faulty, err)
	}
	var issued, first, last time.Time
	if err := b.pool.QueryRow(ctx, `SELECT min(created_at), min(archived_at), max(archived_at) FROM invoices WHERE project_id = $1 AND status = 'archived'`,
		bID).Scan(&issued, &first, &last); err != nil {
		return 0, err
	}
	b.stopServer()
	rate := float64(backlog-1) / last.Sub(issued).Seconds()
	log.Printf("hol: project B, %d orders of A on a black-holed provider: %.0f archived invoices/s (first issued to last archived, %s; first archived %s after the first issued)",
		faulty, rate, last.Sub(issued).Round(time.Millisecond), first.Sub(issued).Round(time.Millisecond))
	if progress, err := b.holProgress(ctx, bID, started); err == nil {
		log.Printf("hol: project B per half second since the invoicer started (issued/archived): %s", progress)
	}
	return rate, nil
}

// holProgress is B's invoices issued and archived per half second since
// the invoicer was started: where a drain stalled, and when.
func (b *bench) holProgress(ctx context.Context, projectID string, started time.Time) (string, error) {
	rows, err := b.pool.Query(ctx, `SELECT s, count(*) FILTER (WHERE k = 'i'), count(*) FILTER (WHERE k = 'a') FROM (
			SELECT 'i' AS k, floor(extract(epoch FROM created_at - $2) * 2)::int AS s FROM invoices WHERE project_id = $1
			UNION ALL SELECT 'a', floor(extract(epoch FROM archived_at - $2) * 2)::int FROM invoices WHERE project_id = $1 AND archived_at IS NOT NULL) x
		GROUP BY s ORDER BY s`, projectID, started)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		var slot, issued, archived int
		if err := rows.Scan(&slot, &issued, &archived); err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, " %.1fs %d/%d", float64(slot)/2, issued, archived)
	}
	return sb.String(), rows.Err()
}
