//go:build screenshots

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// TestScreenshots writes PNGs of the console's main pages into
// docs/screenshots (make screenshots): a project with a few orders and
// documents of both modes, its owner signed in, each page at 1280 × 800.
func TestScreenshots(t *testing.T) {
	m := newMixedYear(t)
	base := "/console/p/" + m.pid + "/"
	ctx := newBrowser(t)
	if _, err := runCmd(t, "project", "set", "--project", m.pid, "--seller-name", "Beispiel Shop GmbH"); err != nil {
		t.Fatal(err)
	}
	owner := "owner-" + uuid.NewString()[:4] + "@example.com"
	acceptInBrowser(t, ctx, inviteByCommand(t, m.pid, owner, "owner", "--no-mail"), owner)
	step(t, ctx, "viewport", chromedp.EmulateViewport(1280, 800))
	out := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
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
	}
	for _, p := range pages {
		if st := open(t, ctx, p.path); st != 200 {
			t.Fatalf("%s: %d", p.path, st)
		}
		time.Sleep(300 * time.Millisecond) // the PDF frame draws after the page
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		cancel()
		if err != nil {
			t.Fatalf("screenshot of %s: %v", p.name, err)
		}
		if err := os.WriteFile(filepath.Join(out, p.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %d bytes", p.name, len(png))
	}
}
