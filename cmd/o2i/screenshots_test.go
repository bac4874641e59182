//go:build screenshots

package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestScreenshots writes PNGs of the console's main pages into
// docs/screenshots (make screenshots): a project with a few orders and
// documents of both modes, its owner signed in, each page at 1280 × 800.
func TestScreenshots(t *testing.T) {
	m := newMixedYear(t)
	base := "/console/p/" + m.pid + "/"
	ctx := newBrowser(t)
	// The Tasks page with its actions: an order held for missing seller
	// data (recheck) and an informational task (dismiss).
	pool := testenv.Pool(t)
	if _, err := runCmd(t, "project", "set", "--project", m.pid, "--seller-name", "", "--seller-vat-id", "", "--seller-tax-number", ""); err != nil {
		t.Fatal(err)
	}
	held := "H-" + m.suffix
	if r := client(t).Do("POST", "/v1/orders", m.key, creditOrder(held, "1", 1000, 1190), "Idempotency-Key", held); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	testenv.Eventually(t, 60*time.Second, "the order held", func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM held_orders WHERE project_id = $1 AND released_at IS NULL`, m.pid).Scan(&n)
		return err == nil && n == 1
	})
	if _, err := pool.Exec(context.Background(), `INSERT INTO tasks (id, project_id, kind, subject) VALUES ($1, $2, 'payment_amount_mismatch', $3)`,
		uuid.NewString(), m.pid, m.liveOrders[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "project", "set", "--project", m.pid, "--seller-name", "Beispiel Shop GmbH", "--mail-from-name", "Beispiel Shop Rechnungen"); err != nil {
		t.Fatal(err)
	}
	owner := "owner-" + uuid.NewString()[:4] + "@example.com"
	acceptInBrowser(t, ctx, inviteByCommand(t, m.pid, owner, "owner", "--no-mail"), owner)
	step(t, ctx, "viewport", chromedp.EmulateViewport(1280, 800))
	out := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	shoot := func(name string) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		cancel()
		if err != nil {
			t.Fatalf("screenshot of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %d bytes", name, len(png))
	}
	// The seller name is back, its tax numbers not: the hold stays, with its recheck.
	if st := open(t, ctx, base+"tasks"); st != 200 {
		t.Fatalf("tasks: %d", st)
	}
	for _, action := range []string{"recheck", "dismiss"} {
		if !strings.Contains(bodyHTML(t, ctx), `class="secondary `+action+`"`) {
			t.Fatalf("the Tasks page shows no %s:\n%s", action, text(t, ctx, "main"))
		}
	}
	shoot("tasks")
	liveID := invoiceID(t, m.pid, m.live[0])
	pages := []struct{ name, path string }{
		{"overview", base},
		{"orders", base + "orders"},
		{"order", base + "orders/" + m.liveOrders[0]},
		{"invoices", base + "invoices"},
		{"invoice", base + "invoices/" + liveID},
		{"exports", base + "exports"},
		{"archive", base + "archive?year=" + strconv.Itoa(m.year)},
		{"activity", base + "activity"},
		{"settings", base + "settings"},
	}
	for _, p := range pages {
		if st := open(t, ctx, p.path); st != 200 {
			t.Fatalf("%s: %d", p.path, st)
		}
		time.Sleep(300 * time.Millisecond) // the PDF frame draws after the page
		shoot(p.name)
	}
}
