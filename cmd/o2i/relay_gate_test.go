package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// serviceRelay is the leader lock key of the service's relay (the one
// every project's events leave through), under which it stores its
// position.
const serviceRelay int64 = 0x6f32692d72656c79

// gateBound is how long an order's event may take to be published while
// the export and the balance upload run: many times what it takes on a
// loaded machine (tens of milliseconds, a few hundred at worst), half of
// what an export that gave 40,000 debtor accounts one statement at a time
// in one transaction held the relay back (measured: 8 s).
const gateBound = 4 * time.Second

// TestRelayKeepsPublishingDuringExportAndBalanceUpload: while a year's DATEV
// export with a debtor per customer (40,000 documents, each a new customer)
// streams to a slow reader, and a 10,000-customer credit-balance upload
// that differs everywhere runs, orders placed in another project are
// published by the relay within gateBound each. Neither the export nor the
// upload holds a long transaction that would hold the relay's gate back.
// The export is complete, every customer got one debtor, and the upload
// opened one task per customer.
func TestRelayKeepsPublishingDuringExportAndBalanceUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("a large export")
	}
	pool := testenv.Pool(t)
	ctx := context.Background()
	const customers, documents = 10000, 40000
	year := time.Now().UTC().Year() - 1

	exporter := testenv.Project(t, pool, false)
	if _, err := project.Apply(ctx, pool, exporter, project.Update{Settings: func(s *project.Settings) {
		s.Debtors = "per-customer"
	}}); err != nil {
		t.Fatal(err)
	}
	seedYear(t, pool, exporter, year, documents)
	exportKey := testenv.Key(t, pool, exporter)

	uploader := testenv.Project(t, pool, true)
	uploadKey := testenv.Key(t, pool, uploader)
	balances := make([]map[string]any, customers)
	for i := range balances {
		balances[i] = map[string]any{"email": fmt.Sprintf("kunde-%05d@example.com", i), "balance_cents": 100 + i}
	}
	upload, _ := json.Marshal(map[string]any{"balances": balances})

	prober := testenv.Project(t, pool, true)
	probeKey := testenv.Key(t, pool, prober)

	var wg sync.WaitGroup
	var running atomic.Int32
	running.Store(2)
	var exportLines, exportBytes int
	var exportErr, uploadErr error
	var exportTook time.Duration
	wg.Add(2)
	go func() { // the export, read slowly through a small receive window
		defer wg.Done()
		defer running.Add(-1)
		start := time.Now()
		exportLines, exportBytes, exportErr = slowExport(exportKey, fmt.Sprintf("/v1/exports/datev?from=%d-01-01&to=%d-12-31", year, year))
		exportTook = time.Since(start)
	}()
	go func() {
		defer wg.Done()
		defer running.Add(-1)
		uploadErr = putBalances(uploadKey, upload)
	}()

	// Probes: one order at a time in a third project, each published
	// within gateBound, until both are done.
	var probes int
	var worst time.Duration
	for i := 0; running.Load() > 0; i++ {
		no := fmt.Sprintf("PROBE-%d-%s", i, uuid.NewString()[:8])
		placed := time.Now()
		if err := placeOrder(probeKey, no); err != nil {
			t.Fatalf("probe %s: %v", no, err)
		}
		for !published(t, pool, prober) {
			if time.Since(placed) > gateBound {
				t.Fatalf("probe %d: order %s not published after %s while the export and the balance upload run (%d probes before it, worst %s)",
					i, no, gateBound, probes, worst)
			}
			time.Sleep(20 * time.Millisecond)
		}
		worst = max(worst, time.Since(placed))
		probes++
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if exportErr != nil || uploadErr != nil {
		t.Fatalf("export: %v; upload: %v", exportErr, uploadErr)
	}
	t.Logf("%d probes, slowest published in %s; export of %d bytes read in %s", probes, worst, exportBytes, exportTook)
	if probes < 3 {
		t.Errorf("only %d probes ran while the export and the upload ran", probes)
	}
	// Header record, column names, one booking per document.
	if exportLines != documents+2 {
		t.Errorf("export has %d lines, want %d", exportLines, documents+2)
	}
	var debtors, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT account) FROM accounting_debtors WHERE project_id = $1`, exporter).Scan(&debtors, &distinct); err != nil {
		t.Fatal(err)
	}
	if debtors != documents || distinct != documents {
		t.Errorf("%d debtors with %d accounts, want %d", debtors, distinct, documents)
	}
	var tasks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = 'credit_balance_mismatch' AND status = 'open'`, uploader).Scan(&tasks); err != nil {
		t.Fatal(err)
	}
	if tasks != customers {
		t.Errorf("%d open tasks after the upload, want %d", tasks, customers)
	}
}

// seedYear records n live invoices of the project, issued over the year,
// each to a customer of its own (by e-mail), as the invoicer stores them.
func seedYear(t *testing.T, pool *pgxpool.Pool, projectID string, year, n int) {
	t.Helper()
	ctx := context.Background()
	issue := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	price := int64(1190)
	invs, err := billing.Compute(billing.Order{OrderNo: "G", Email: "kunde@example.de",
		BillingAddress: billing.Address{CountryCode: "DE", Name: "Kunde", Street: "Weg 1", PostalCode: "10115", City: "Berlin"},
		Items:          []billing.Item{{Name: "Kurs", Quantity: money.Int(1), UnitGrossCents: &price}}},
		billing.ExampleSeller(), billing.Context{IssueDate: issue, PaymentDate: issue, Numbers: []string{"N"}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(invs[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO orders (id, project_id, order_no, status, content, content_hash, invoice_hash, test_mode)
SELECT gen_random_uuid(), $1, 'G-' || lpad(g::text, 6, '0'), 'invoiced', '{}', '\x00', '\x00', false FROM generate_series(1, $2) g`,
		projectID, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, project_id, order_id, order_no, number, range_key, seq, type, type_code, format,
    status, issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, due_cents, test_mode, xml, document, archived_at)
SELECT gen_random_uuid(), o.project_id, o.id, o.order_no, 'RE-' || $3 || '-' || lpad(g::text, 6, '0'), 'RE-' || $3, g, 'invoice', '380',
    'zugferd', 'archived', d, 'EUR', 1000, 190, 1190, 0, false, '', jsonb_set(jsonb_set(jsonb_set(jsonb_set($4::jsonb,
      '{Number}', to_jsonb('RE-' || $3 || '-' || lpad(g::text, 6, '0'))), '{OrderNo}', to_jsonb(o.order_no)),
      '{IssueDate}', to_jsonb(to_char(d, 'YYYY-MM-DD') || 'T00:00:00Z')),
      '{Buyer,ElectronicAddress}', to_jsonb('kunde-' || g || '@example.de')), now()
FROM generate_series(1, $2) g
JOIN orders o ON o.project_id = $1 AND o.order_no = 'G-' || lpad(g::text, 6, '0'),
LATERAL (SELECT make_date($3, 1, 1) + ((g - 1) * 365 / $2) AS d) i`, projectID, n, year, doc); err != nil {
		t.Fatal(err)
	}
}

// slowExport reads a download through a 4 KiB receive buffer, pausing
// after every read, and returns its lines and bytes.
func slowExport(key, path string) (lines, size int, err error) {
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	hc := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest("GET", baseURL+path, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, 0, fmt.Errorf("export: %d %s", resp.StatusCode, b)
	}
	buf := make([]byte, 16<<10)
	for {
		n, err := resp.Body.Read(buf)
		size += n
		lines += bytes.Count(buf[:n], []byte("\r\n"))
		if err == io.EOF {
			return lines, size, nil
		}
		if err != nil {
			return lines, size, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func putBalances(key string, body []byte) error {
	req, err := http.NewRequest("PUT", baseURL+"/v1/credit-balances", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"mismatches":10000`) {
		return fmt.Errorf("balances: %d %s", resp.StatusCode, b)
	}
	return nil
}

func placeOrder(key, orderNo string) error {
	body := fmt.Sprintf(`{"orderNo":%q,"paymentGateway":"invoice",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Kurs","quantity":1,"unitNetCents":1000,"taxRate":19}]}`, orderNo)
	req, err := http.NewRequest("POST", baseURL+"/v1/orders", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", orderNo)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%d %s", resp.StatusCode, b)
	}
	return nil
}

// published reports whether the service's relay has published every
// outbox row of the project (its position is past them: Kafka acknowledged
// them).
func published(t *testing.T, pool *pgxpool.Pool, projectID string) bool {
	t.Helper()
	var waiting bool
	err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM outbox o
  WHERE o.project_id = $1 AND NOT EXISTS (SELECT 1 FROM outbox_relay_positions p WHERE p.relay = $2 AND (o.tx_id, o.id) <= (p.tx_id, p.id)))`,
		projectID, serviceRelay).Scan(&waiting)
	if err != nil {
		t.Fatal(err)
	}
	return !waiting
}
