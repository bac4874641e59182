package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/reqlog"
)

const consoleProjectFile = ".dev/bench-console-project"

// consolePassword signs the bench's owner in.
const consolePassword = "the console bench's password"

// console measures each console page of a project holding n orders (each
// with one document in the read models) and n/10 recorded API requests:
// one signed-in owner opens each page in turn for d; the p99 is taken at
// the client over loopback, so it bounds the server's time from above.
func (b *bench) console(ctx context.Context, n int, d time.Duration) ([]result, error) {
	if err := b.serve(ctx); err != nil {
		return nil, err
	}
	pid, email, err := b.consoleProject(ctx, n)
	if err != nil {
		return nil, err
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(b.baseURL+"/console/sign-in", url.Values{"email": {email}, "password": {consolePassword}})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("console sign-in: %d", resp.StatusCode)
	}
	var invoiceID string
	if err := b.pool.QueryRow(ctx, `SELECT id::text FROM invoice_view WHERE project_id = $1 AND number = $2`, pid, fmt.Sprintf("RE-2026-%07d", n/2)).Scan(&invoiceID); err != nil {
		return nil, err
	}
	base := b.baseURL + "/console/p/" + pid + "/"
	mid := n / 2
	pages := []struct{ what, path string }{
		{"overview", ""},
		{"orders, newest first", "orders"},
		{"orders, by order number", fmt.Sprintf("orders?list=1&q=C-%d", mid)},
		{"orders, by e-mail", fmt.Sprintf("orders?list=1&q=buyer%d@example.com", mid)},
		{"orders, by invoice number", fmt.Sprintf("orders?list=1&q=RE-2026-%07d", mid)},
		{"an order", fmt.Sprintf("orders/C-%d", mid)},
		{"invoices", "invoices"},
		{"invoices, live, one month", "invoices?mode=live&period=2026-03"},
		{"a document", "invoices/" + invoiceID},
		{"API activity", "activity"},
		{"API activity, status 404", "activity?status=404"},
		{"exports", "exports"},
		{"archive listing", "archive?year=2026"},
	}
	var out []result
	for _, p := range pages {
		page := func(ctx context.Context, _ string) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+p.path, nil)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			buf := make([]byte, 32<<10)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			if resp.StatusCode != 200 {
				return fmt.Errorf("GET %s: %d", p.path, resp.StatusCode)
			}
			return nil
		}
		lat, err := measure(ctx, 1, d, []string{""}, page)
		if err != nil {
			return nil, err
		}
		log.Printf("console: %s %s", p.what, lat)
		out = append(out, result{
			What:     fmt.Sprintf("console page: %s, %d orders, one client", p.what, n),
			Measured: lat.String(),
			Ceiling:  "p99 at the client over loopback",
			Target:   "p99 < 50 ms (server side)",
		})
	}
	return out, nil
}

// consoleProject returns a project holding n orders with a document each
// and n/10 recorded requests, and its owner's e-mail, seeding it with COPY
// the first time (kept in .dev/ and reused).
func (b *bench) consoleProject(ctx context.Context, n int) (string, string, error) {
	if raw, err := os.ReadFile(consoleProjectFile); err == nil {
		id, email, _ := strings.Cut(strings.TrimSpace(string(raw)), " ")
		var have int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM order_view WHERE project_id = $1`, id).Scan(&have); err == nil && have >= n {
			return id, email, nil
		}
	}
	id, _, err := b.newProject(ctx, "bench console", 0)
	if err != nil {
		return "", "", err
	}
	acc := account.New(b.pool)
	email := "bench-owner-" + uuid.NewString()[:8] + "@example.com"
	now := time.Now()
	tok, _, err := acc.Invite(ctx, id, email, account.Owner, nil, nil, "", now)
	if err != nil {
		return "", "", err
	}
	if _, err := acc.Accept(ctx, tok, email, consolePassword, consolePassword, now); err != nil {
		return "", "", err
	}
	log.Printf("console: seeding %d orders with a document each, and %d requests, with COPY (once; kept for later runs)", n, n/10)
	start := time.Now()
	pid := uuid.MustParse(id)
	orderIDs := make([]uuid.UUID, n)
	for i := range orderIDs {
		orderIDs[i] = uuid.New()
	}
	created := func(i int) time.Time { return now.Add(-time.Duration(n-i) * 20 * time.Second) }
	hash := []byte{0}
	i := 0
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"orders"},
		[]string{"id", "project_id", "order_no", "payment_ref", "content", "content_hash", "invoice_hash", "test_mode", "created_at", "status"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			i++
			return []any{orderIDs[i-1], pid, fmt.Sprintf("C-%d", i), fmt.Sprintf("cpay-%d", i),
				fmt.Sprintf(`{"orderNo":"C-%d","email":"buyer%d@example.com"}`, i, i), hash, hash, i%10 == 0, created(i), "invoiced"}, nil
		})); err != nil {
		return "", "", fmt.Errorf("copy orders: %w", err)
	}
	waiting := []string{"none", "none", "none", "none", "none", "none", "none", "none", "payment", "fulfillment"}
	i = 0
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"order_view"},
		[]string{"project_id", "order_no", "order_id", "status", "waiting_for", "rev"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			i++
			return []any{pid, fmt.Sprintf("C-%d", i), orderIDs[i-1], "invoiced", waiting[i%10], int64(i)}, nil
		})); err != nil {
		return "", "", fmt.Errorf("copy order_view: %w", err)
	}
	issue := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i = 0
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"invoice_view"},
		[]string{"project_id", "id", "version", "number", "status", "order_no", "payment_ref", "type", "format", "issue_date",
			"currency", "total_net_cents", "total_tax_cents", "total_gross_cents", "test_mode", "created_at", "rev"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			i++
			net := int64(1000 + i%9000)
			return []any{pid, uuid.New(), int64(1), fmt.Sprintf("RE-2026-%07d", i), "created", fmt.Sprintf("C-%d", i),
				fmt.Sprintf("cpay-%d", i), "invoice", "zugferd", issue.AddDate(0, 0, i%330), "EUR", net, net * 19 / 100,
				net + net*19/100, i%10 == 0, created(i), int64(i)}, nil
		})); err != nil {
		return "", "", fmt.Errorf("copy invoice_view: %w", err)
	}
	if err := reqlog.EnsurePartitions(ctx, b.pool, now); err != nil {
		return "", "", err
	}
	statuses := []int16{200, 200, 200, 201, 404, 422}
	i = 0
	m := n / 10
	if _, err := b.pool.CopyFrom(ctx, pgx.Identifier{"request_log"},
		[]string{"request_id", "at", "project_id", "key_prefix", "method", "path", "route", "status", "duration_us"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= m {
				return nil, nil
			}
			i++
			at := now.Add(-time.Duration(m-i) * time.Duration(int64(20*time.Hour)/int64(max(m, 1))))
			id, _ := uuid.NewV7()
			return []any{id, at, pid, pgtype.Text{String: "o2i_benchkey", Valid: true}, "GET", fmt.Sprintf("/v1/orders/C-%d", i),
				"/v1/orders/{orderNo}", statuses[i%len(statuses)], int64(800 + i%500)}, nil
		})); err != nil {
		return "", "", fmt.Errorf("copy request_log: %w", err)
	}
	for _, t := range []string{"orders", "order_view", "invoice_view", "request_log"} {
		if _, err := b.pool.Exec(ctx, `VACUUM ANALYZE `+t); err != nil { // as autovacuum leaves a table: all-visible
			return "", "", err
		}
	}
	log.Printf("console: seeded in %s", time.Since(start).Round(time.Second))
	if err := os.WriteFile(consoleProjectFile, []byte(id+" "+email), 0o644); err != nil {
		return "", "", err
	}
	return id, email, nil
}
