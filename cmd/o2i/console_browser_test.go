package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// The console in a real browser: Debian's headless Chromium (installed by
// `make test`'s browser-deps), driven by chromedp, against the service that
// TestMain runs.

const browserPassword = "a browser's long password"

// newBrowser starts headless Chromium (no sandbox: CI runs as root) and
// returns a context whose actions run in one tab. A missing browser fails.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("Chromium is required for the console's browser tests (make browser-deps installs Debian's chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU)
	// The browser lives at most as long as the test may take.
	life, cancelLife := context.WithTimeout(context.Background(), 5*time.Minute)
	actx, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc(); cancelLife() })
	// The first run starts the browser; its deadline is the browser's life.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// step runs actions with a deadline.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// open navigates to path and returns the HTTP status of the page.
func open(t *testing.T, ctx context.Context, path string) int64 {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.Run(sctx, chromedp.NavigateResponse(baseURL+path))
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return resp.Status
}

// submit clicks a submit button and waits for the next page; its status.
func submit(t *testing.T, ctx context.Context, sel string) int64 {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(sctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("submit %s: %v", sel, err)
	}
	return resp.Status
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bodyHTML(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// inviteByCommand runs `o2i user invite` and returns the link's path (the
// command builds it on O2I_PUBLIC_URL; the test's service listens elsewhere).
func inviteByCommand(t *testing.T, projectID, email, role string, extra ...string) string {
	t.Helper()
	out, err := runCmd(t, append([]string{"user", "invite", "--project", projectID, "--email", email, "--role", role}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "{\n  \"link\":") {
		t.Errorf("the JSON's first field is not link: %s", out)
	}
	var inv struct{ Link string }
	if err := json.Unmarshal([]byte(out), &inv); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(inv.Link, "/console/invite/")
	if i < 0 {
		t.Fatalf("link %q", inv.Link)
	}
	return inv.Link[i:]
}

// acceptInBrowser opens an invitation, checks the e-mail is prefilled, and
// sets the password; the browser is then signed in.
func acceptInBrowser(t *testing.T, ctx context.Context, path, email string) {
	t.Helper()
	if st := open(t, ctx, path); st != 200 {
		t.Fatalf("invitation page: %d", st)
	}
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[type=email][name=email]`)))
	if err != nil || v != email {
		t.Fatalf("the e-mail field holds %q (%v), want %q", v, err, email)
	}
	step(t, ctx, "type the password",
		chromedp.SendKeys(chromedp.ID("password"), browserPassword),
		chromedp.SendKeys(chromedp.ID("password_confirm"), browserPassword))
	if st := submit(t, ctx, "#accept"); st != 200 {
		t.Fatalf("accept: %d", st)
	}
	if who := text(t, ctx, "#signed-in-as"); who != email {
		t.Fatalf("signed in as %q, want %s", who, email)
	}
}

// apiStatus is the status of GET /v1/orders/{unknown} with a bearer key:
// 404 when the key is valid, 401 when not.
func apiStatus(t *testing.T, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", baseURL+"/v1/orders/NO-SUCH-ORDER-"+uuid.NewString()[:8], nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestConsoleInBrowser(t *testing.T) {
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	ctx := newBrowser(t)
	owner := "owner-" + uuid.NewString()[:8] + "@example.com"

	// Invite → set password → signed in.
	path := inviteByCommand(t, pid, owner, "owner")
	testenv.Eventually(t, 10*time.Second, "the invitation e-mail", func() bool {
		for _, m := range testenv.Mails(t, owner) {
			if strings.Contains(m.Text, path) {
				return true
			}
		}
		return false
	})
	acceptInBrowser(t, ctx, path, owner)

	// Sign out, then sign in with the password.
	if st := submit(t, ctx, "#sign-out"); st != 200 {
		t.Fatalf("sign-out: %d", st)
	}
	step(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.ID("email"), owner),
		chromedp.SendKeys(chromedp.ID("password"), browserPassword))
	if st := submit(t, ctx, "#sign-in"); st != 200 {
		t.Fatalf("sign-in: %d", st)
	}
	if who := text(t, ctx, "#signed-in-as"); who != owner {
		t.Fatalf("signed in as %q", who)
	}

	// German and back with the switch.
	if st := submit(t, ctx, `a[lang="de"]`); st != 200 {
		t.Fatalf("switch to German: %d", st)
	}
	if got := text(t, ctx, "#sign-out"); got != "Abmelden" {
		t.Errorf("sign-out button in German: %q", got)
	}
	if st := submit(t, ctx, `a[lang="en"]`); st != 200 {
		t.Fatalf("switch to English: %d", st)
	}

	// Create a key: its secret is shown once.
	keys := "/console/p/" + pid + "/keys"
	if st := open(t, ctx, keys); st != 200 {
		t.Fatalf("keys page: %d", st)
	}
	step(t, ctx, "fill the key form",
		chromedp.SendKeys(chromedp.ID("name"), "browser"),
		chromedp.Click(chromedp.CSS(`input[name=scopes][value="invoices:read"]`)))
	if st := submit(t, ctx, "#create"); st != 200 {
		t.Fatalf("create key: %d", st)
	}
	key := text(t, ctx, "#new-key")
	if !regexp.MustCompile(`^o2i_[0-9A-Za-z]{40}$`).MatchString(key) {
		t.Fatalf("shown key %q", key)
	}
	if st := open(t, ctx, keys); st != 200 {
		t.Fatalf("keys page again: %d", st)
	}
	if html := bodyHTML(t, ctx); strings.Contains(html, key) || strings.Contains(html, `id="new-key"`) || !strings.Contains(html, key[:12]) {
		t.Error("the key's secret is shown again, or its prefix is missing")
	}

	// The key works against the API; revoked, it is refused.
	if st := apiStatus(t, key); st != 404 {
		t.Fatalf("GET /v1/orders with the new key: %d, want 404 (authenticated)", st)
	}
	if st := submit(t, ctx, "button.revoke"); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	if !strings.Contains(text(t, ctx, ".notice"), key[:12]) {
		t.Error("no notice of the revocation")
	}
	testenv.Eventually(t, 15*time.Second, "the revoked key is refused", func() bool { return apiStatus(t, key) == 401 })

	// An accountant and an auditor see no keys.
	for _, role := range []string{"accountant", "auditor"} {
		other := newBrowser(t) // a browser of its own: tabs of one browser share cookies
		addr := role + "-" + uuid.NewString()[:8] + "@example.com"
		var extra []string
		if role == "auditor" {
			extra = []string{"--audit-years", "2025", "--ends-on", time.Now().AddDate(0, 1, 0).Format("2006-01-02")}
		}
		acceptInBrowser(t, other, inviteByCommand(t, pid, addr, role, extra...), addr)
		if html := bodyHTML(t, other); strings.Contains(html, "/keys\"") {
			t.Errorf("the %s's navigation links to the keys", role)
		}
		if st := open(t, other, keys); st != 403 {
			t.Errorf("keys page as %s: %d, want 403", role, st)
		}
		if st := open(t, other, "/console/p/"+pid+"/members"); st != 403 {
			t.Errorf("members page as %s: %d, want 403", role, st)
		}
		if role == "accountant" {
			accountantSetsSellerCity(t, other, pid)
		}
	}

	// The owner changes the bank account, typing the password again.
	ownerChangesBankAccount(t, ctx, pid)

	// Sign out: the pages ask for a sign-in again.
	if st := open(t, ctx, "/console/p/"+pid+"/"); st != 200 {
		t.Fatalf("overview: %d", st)
	}
	if st := submit(t, ctx, "#sign-out"); st != 200 {
		t.Fatalf("sign-out: %d", st)
	}
	open(t, ctx, keys)
	if loc := location(t, ctx); !strings.Contains(loc, "/console/sign-in?next=") {
		t.Errorf("keys page after sign-out at %s, want the sign-in page", loc)
	}
}

// accountantSetsSellerCity: an accountant changes a seller field in the
// settings and sees it saved; the bank account is not theirs to change.
func accountantSetsSellerCity(t *testing.T, ctx context.Context, pid string) {
	t.Helper()
	settings := "/console/p/" + pid + "/settings"
	if st := open(t, ctx, settings); st != 200 {
		t.Fatalf("settings page as accountant: %d", st)
	}
	step(t, ctx, "the settings page is there", chromedp.WaitVisible(chromedp.ID("sellerCity")))
	if html := bodyHTML(t, ctx); strings.Contains(html, `id="form-bank"`) || strings.Contains(html, `id="form-provider"`) {
		t.Error("the accountant is offered the bank or provider form")
	}
	step(t, ctx, "type the seller's city", chromedp.Clear(chromedp.ID("sellerCity")), chromedp.SendKeys(chromedp.ID("sellerCity"), "Browserstadt"))
	if st := submit(t, ctx, "#save-seller"); st != 200 {
		t.Fatalf("save seller data: %d", st)
	}
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("sellerCity")))
	if err != nil || v != "Browserstadt" {
		t.Errorf("the seller's city after saving: %q (%v)", v, err)
	}
	if n := text(t, ctx, ".notice"); !strings.Contains(n, "Seller data") {
		t.Errorf("no notice of the saved seller data: %q", n)
	}
}

// ownerChangesBankAccount: the bank form needs the password again; without
// it nothing changes, with it the IBAN is saved.
func ownerChangesBankAccount(t *testing.T, ctx context.Context, pid string) {
	t.Helper()
	settings := "/console/p/" + pid + "/settings"
	if st := open(t, ctx, settings); st != 200 {
		t.Fatalf("settings page as owner: %d", st)
	}
	step(t, ctx, "the settings page is there", chromedp.WaitVisible(chromedp.ID("sellerIban")))
	step(t, ctx, "type a new IBAN and a wrong password",
		chromedp.Clear(chromedp.ID("sellerIban")), chromedp.SendKeys(chromedp.ID("sellerIban"), "DE89370400440532013000"),
		chromedp.SendKeys(chromedp.ID("password-bank"), "not my password at all"))
	if st := submit(t, ctx, "#save-bank"); st != 422 {
		t.Errorf("bank change with a wrong password: %d, want 422", st)
	}
	step(t, ctx, "type the new IBAN and the password",
		chromedp.Clear(chromedp.ID("sellerIban")), chromedp.SendKeys(chromedp.ID("sellerIban"), "DE89370400440532013000"),
		chromedp.Clear(chromedp.ID("password-bank")), chromedp.SendKeys(chromedp.ID("password-bank"), browserPassword))
	if st := submit(t, ctx, "#save-bank"); st != 200 {
		t.Fatalf("bank change with the password: %d", st)
	}
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("sellerIban")))
	if err != nil || v != "DE89370400440532013000" {
		t.Errorf("the IBAN after saving: %q (%v)", v, err)
	}
}

// TestDocumentsInBrowser: the owner opens a document, sees its PDF in the
// page and downloads it (the bytes the API serves); an auditor of the
// year sees the invoices and the archive, and no keys or settings.
func TestDocumentsInBrowser(t *testing.T) {
	m := newMixedYear(t)
	number := m.live[0]
	base := "/console/p/" + m.pid + "/"
	ctx := newBrowser(t)
	owner := "owner-" + uuid.NewString()[:8] + "@example.com"
	acceptInBrowser(t, ctx, inviteByCommand(t, m.pid, owner, "owner", "--no-mail"), owner)

	if st := open(t, ctx, base+"invoices?mode=live"); st != 200 {
		t.Fatalf("invoices: %d", st)
	}
	if st := submit(t, ctx, `#invoices a[href*="/invoices/"]`); st != 200 {
		t.Fatalf("open the first document: %d", st)
	}
	html := bodyHTML(t, ctx)
	if !strings.Contains(html, `<iframe id="pdf"`) || !strings.Contains(html, "EN 16931") {
		t.Fatalf("the document page shows no PDF frame or validation:\n%s", html)
	}
	got := download(t, ctx, "download-pdf", number+".pdf")
	api := client(t).Do("GET", "/v1/invoices/"+number+"/pdf", m.key, nil)
	if !bytes.Equal(got, api.Body) {
		t.Errorf("the downloaded PDF (%d bytes) differs from the API's (%d bytes)", len(got), len(api.Body))
	}

	auditor := newBrowser(t)
	addr := "auditor-" + uuid.NewString()[:8] + "@example.com"
	acceptInBrowser(t, auditor, inviteByCommand(t, m.pid, addr, "auditor", "--no-mail", "--audit-years", strconv.Itoa(m.year),
		"--ends-on", time.Now().AddDate(0, 1, 0).Format("2006-01-02")), addr)
	if st := open(t, auditor, base); st != 200 {
		t.Fatalf("auditor's overview: %d", st)
	}
	nav := bodyHTML(t, auditor)
	for _, want := range []string{base + "invoices\"", base + "archive\""} {
		if !strings.Contains(nav, want) {
			t.Errorf("the auditor's navigation lacks %s", want)
		}
	}
	for _, not := range []string{"/keys\"", "/settings\"", "/members\"", "/activity\"", "/orders\""} {
		if strings.Contains(nav, not) {
			t.Errorf("the auditor's navigation links to %s", not)
		}
	}
	if st := open(t, auditor, base+"archive"); st != 200 || !strings.Contains(bodyHTML(t, auditor), number) {
		t.Errorf("the auditor's archive: %d, without %s", st, number)
	}
	if st := open(t, auditor, base+"keys"); st != 403 {
		t.Errorf("the auditor's keys page: %d, want 403", st)
	}
}

// TestHeldOrderReleasedInBrowser: a project without seller data takes an
// order → the Tasks page shows the seller_data_incomplete task holding it →
// its link opens the seller field in Settings → saving the seller data
// releases the order → its invoice is shown and the PDF downloads (the
// API's bytes).
func TestHeldOrderReleasedInBrowser(t *testing.T) {
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := projectWithoutSellerData(t, pool)
	key := testenv.Key(t, pool, pid)
	orderNo := "HELD-" + uuid.NewString()[:8]
	if r := client(t).Do("POST", "/v1/orders", key, creditOrder(orderNo, "1", 1000, 1190), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	testenv.Eventually(t, 60*time.Second, "the order held", func() bool {
		var held int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM held_orders WHERE project_id = $1 AND released_at IS NULL`, pid).Scan(&held)
		return err == nil && held == 1
	})

	base := "/console/p/" + pid + "/"
	b := newBrowser(t)
	addr := "accountant-" + uuid.NewString()[:8] + "@example.com"
	acceptInBrowser(t, b, inviteByCommand(t, pid, addr, "accountant", "--no-mail"), addr)
	if st := open(t, b, base+"tasks"); st != 200 {
		t.Fatalf("tasks: %d", st)
	}
	if n := text(t, b, "#held-seller_data_incomplete"); n != "1" {
		t.Fatalf("the seller data task holds %q orders, want 1", n)
	}
	if !strings.Contains(bodyHTML(t, b), orderNo) {
		t.Errorf("the task does not name the held order %s", orderNo)
	}
	if st := submit(t, b, "#fix-seller_data_incomplete"); st != 200 {
		t.Fatalf("follow the fix link: %d", st)
	}
	if loc := location(t, b); !strings.Contains(loc, base+"settings#seller") {
		t.Errorf("the fix link opened %s", loc)
	}
	step(t, b, "type the seller data",
		chromedp.Clear(chromedp.ID("sellerName")), chromedp.SendKeys(chromedp.ID("sellerName"), "Browser Handel GmbH"),
		chromedp.Clear(chromedp.ID("sellerVatId")), chromedp.SendKeys(chromedp.ID("sellerVatId"), "DE123456789"))
	if st := submit(t, b, "#save-seller"); st != 200 {
		t.Fatalf("save seller data: %d", st)
	}
	var number string
	// The console lists documents from the read model: wait for the
	// projection of the archived invoice, not only the write side.
	testenv.Eventually(t, 60*time.Second, "the order invoiced, archived and projected", func() bool {
		err := pool.QueryRow(ctx, `SELECT number FROM invoice_view WHERE project_id = $1 AND status = 'archived'`, pid).Scan(&number)
		return err == nil
	})
	if st := open(t, b, base+"orders/"+orderNo); st != 200 || !strings.Contains(bodyHTML(t, b), number) {
		t.Errorf("the order's page: %d, without invoice %s", st, number)
	}
	if st := open(t, b, base+"invoices"); st != 200 {
		t.Fatalf("invoices: %d", st)
	}
	if st := submit(t, b, `#invoices a[href*="/invoices/"]`); st != 200 || !strings.Contains(bodyHTML(t, b), number) {
		t.Fatalf("open the invoice: %d", st)
	}
	dir := t.TempDir()
	if _, err := chromedp.CallBrowser(b, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	step(t, b, "download the PDF", chromedp.Click(chromedp.ID("download-pdf")))
	var got []byte
	testenv.Eventually(t, 30*time.Second, "the PDF in the download folder", func() bool {
		d, err := os.ReadFile(filepath.Join(dir, number+".pdf"))
		got = d
		return err == nil && len(d) > 0
	})
	api := client(t).Do("GET", "/v1/invoices/"+number+"/pdf", key, nil)
	if !bytes.Equal(got, api.Body) {
		t.Errorf("the downloaded PDF (%d bytes) differs from the API's (%d bytes)", len(got), len(api.Body))
	}
	testenv.Eventually(t, 30*time.Second, "the task resolved", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND status = 'open'`, pid).Scan(&n)
		return err == nil && n == 0
	})
	if st := open(t, b, base+"tasks?status=resolved"); st != 200 || !strings.Contains(bodyHTML(t, b), "seller_data_incomplete") {
		t.Errorf("the resolved tasks: %d, without the seller data task", st)
	}
}

// download clicks the button with id button of the page in ctx and returns
// the file that arrives in the download folder as name.
func download(t *testing.T, ctx context.Context, button, name string) []byte {
	t.Helper()
	dir := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	step(t, ctx, "click "+button, chromedp.Click(chromedp.ID(button)))
	var got []byte
	testenv.Eventually(t, 30*time.Second, name+" in the download folder", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		got = b
		return err == nil && len(b) > 0
	})
	return got
}
