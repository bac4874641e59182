package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/query"
)

const listProjectFile = ".dev/bench-list-project"

// list measures GET /v1/invoices pages of 100 at n invoices in the read
// model, at random depths (cursors) and with a status filter, next to the
// same keyset query sent straight to PostgreSQL.
func (b *bench) list(ctx context.Context, n int, d time.Duration) ([]result, error) {
	if err := b.serve(ctx); err != nil {
		return nil, err
	}
	projectID, keys, err := b.listProject(ctx, n)
	if err != nil {
		return nil, err
	}
	var lo, hi int64
	if err := b.pool.QueryRow(ctx, `SELECT min(seq), max(seq) FROM invoice_view WHERE project_id = $1`, projectID).Scan(&lo, &hi); err != nil {
		return nil, err
	}
	q := query.New(b.pool, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

	deep := func(ctx context.Context, key string) error {
		cur, err := q.CursorAfter(ctx, projectID, lo+rand.Int64N(hi-lo))
		if err != nil {
			return err
		}
		return get(ctx, client, b.baseURL+"/v1/invoices?limit=100&cursor="+cur, key)
	}
	filtered := func(ctx context.Context, key string) error {
		return get(ctx, client, b.baseURL+"/v1/invoices?limit=100&status=archived", key)
	}
	direct := func(ctx context.Context, _ string) error {
		rows, err := b.pool.Query(ctx, `SELECT id, number, status, order_no, payment_ref, type, format, issue_date, currency,
			total_net_cents, total_tax_cents, total_gross_cents, test_mode, created_at, archived_at, rev, seq
			FROM invoice_view WHERE project_id = $1 AND seq > $2 ORDER BY seq LIMIT 101`, projectID, lo+rand.Int64N(hi-lo))
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}
	var out []result
	sqlLat, err := measure(ctx, 4, d, keys, direct)
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		what string
		f    func(context.Context, string) error
	}{
		{"random depth (cursor)", deep},
		{"status filter", filtered},
	} {
		lat, err := measure(ctx, 4, d, keys, c.f)
		if err != nil {
			return nil, err
		}
		log.Printf("list: %s %s", c.what, lat)
		out = append(out, result{
			What:     fmt.Sprintf("GET /v1/invoices?limit=100, %s, %d invoices in the read model, 4 clients", c.what, n),
			Measured: lat.String(),
			Ceiling:  "the same keyset query straight to PostgreSQL: " + sqlLat.String(),
			Target:   "p99 < 20 ms",
		})
	}
	return out, nil
}

// listProject returns a project holding n invoices, seeding it with COPY
// the first time (the project is kept in .dev/ and reused).
func (b *bench) listProject(ctx context.Context, n int) (string, []string, error) {
	if raw, err := os.ReadFile(listProjectFile); err == nil {
		id := strings.TrimSpace(string(raw))
		var have int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM invoice_view WHERE project_id = $1`, id).Scan(&have); err == nil && have >= n {
			_, keys, err := b.keysFor(ctx, id)
			return id, keys, err
		}
	}
	id, keys, err := b.newProject(ctx, "bench list", 4)
	if err != nil {
		return "", nil, err
	}
	log.Printf("list: seeding %d invoices with COPY (once; kept for later runs)", n)
	start := time.Now()
	statuses := []string{"created", "archived", "failed"}
	pid := uuid.MustParse(id)
	now := time.Now()
	issue := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i := 0
	copied, err := b.pool.CopyFrom(ctx, pgx.Identifier{"invoice_view"},
		[]string{"project_id", "id", "version", "number", "status", "order_no", "payment_ref", "type", "format", "issue_date",
			"currency", "total_net_cents", "total_tax_cents", "total_gross_cents", "test_mode", "created_at", "rev"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			i++
			if i%1_000_000 == 0 {
				log.Printf("list: %d invoices", i)
			}
			net := int64(1000 + i%9000)
			return []any{pid, uuid.New(), int64(1), fmt.Sprintf("RE-2026-%07d", i), statuses[i%3], fmt.Sprintf("ORD-%d", i),
				fmt.Sprintf("pay-%d", i), "invoice", "zugferd", issue.AddDate(0, 0, i%300), "EUR", net, net * 19 / 100,
				net + net*19/100, false, now, int64(i)}, nil
		}))
	if err != nil {
		return "", nil, fmt.Errorf("copy: %w", err)
	}
	if _, err := b.pool.Exec(ctx, `ANALYZE invoice_view`); err != nil {
		return "", nil, err
	}
	log.Printf("list: seeded %d invoices in %s", copied, time.Since(start).Round(time.Second))
	if err := os.WriteFile(listProjectFile, []byte(id), 0o644); err != nil {
		return "", nil, err
	}
	return id, keys, nil
}

func (b *bench) keysFor(ctx context.Context, projectID string) (string, []string, error) {
	var keys []string
	for range 4 {
		k, err := newKey(ctx, b, projectID)
		if err != nil {
			return "", nil, err
		}
		keys = append(keys, k)
	}
	return projectID, keys, nil
}

func get(ctx context.Context, c *http.Client, url, key string) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
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
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return nil
}

// latencies summarises one measurement.
type latencies struct {
	n        int
	rps      float64
	p50, p99 time.Duration
}

func (l latencies) String() string {
	return fmt.Sprintf("p50 %s, p99 %s (%d requests, %.0f/s)", ms(l.p50), ms(l.p99), l.n, l.rps)
}

// measure runs f from workers goroutines for d and returns its latencies.
func measure(ctx context.Context, workers int, d time.Duration, keys []string, f func(context.Context, string) error) (latencies, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				t := time.Now()
				err := f(ctx, keys[w%len(keys)])
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return latencies{}, firstErr
	}
	if len(all) == 0 {
		return latencies{}, errors.New("no request completed")
	}
	p50, p99 := medianAndP99(all)
	return latencies{n: len(all), rps: float64(len(all)) / time.Since(start).Seconds(), p50: p50, p99: p99}, nil
}
