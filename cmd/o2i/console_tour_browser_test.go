package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/pquerna/otp/totp"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// fetchInPage runs fetch(path) in the page (the session's cookie) and
// returns the answer's status and its first bytes.
func fetchInPage(t *testing.T, ctx context.Context, path string) (status int, head string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := chromedp.Run(sctx, chromedp.Evaluate[[]any](`fetch(`+jsString(path)+`).then(async r => [r.status, (await r.text()).slice(0, 64)])`,
		chromedp.EvalAwaitPromise))
	if err != nil || len(res) != 2 {
		t.Fatalf("fetch %s in the page: %v %v", path, res, err)
	}
	return int(res[0].(float64)), res[1].(string)
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// formURL is the address a GET form of the page submits to with its fields as they are.
func formURL(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	u, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(f => f.getAttribute("action") + "?" + new URLSearchParams(new FormData(f)))(document.getElementById(`+jsString(id)+`))`))
	if err != nil {
		t.Fatalf("form %s: %v", id, err)
	}
	return u
}

// tourKey is the selector of the key row named "tour" that can still be
// revoked (the project's other key serves the test's API calls).
func tourKey(t *testing.T, ctx context.Context) string {
	t.Helper()
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#keys tr[data-key-id]")].find(r => r.cells[0].textContent.trim() == "tour" && r.querySelector("form")).dataset.keyId`))
	if err != nil {
		t.Fatalf("the key named tour: %v", err)
	}
	return `#keys tr[data-key-id="` + id + `"]`
}

// TestConsoleTourInBrowser goes through the capabilities of the console's
// pages the other browser tests leave out, as an owner: the order search
// by order number (one holding "/", "#", "?" and a non-ASCII letter),
// payment reference and invoice number, an order's timeline, why it waits
// and its documents; a document's validation, chain and XML download (the
// API's bytes); the invoice filters; a key rotated and revoked; the API
// activity searched and one request; the exports and the archive verified
// and exported; the test-mode switch and the reset with the typed name;
// a member invited, given another role and removed; the second factor.
func TestConsoleTourInBrowser(t *testing.T) {
	m := newMixedYear(t)
	c := client(t)
	odd := "Tour/ä #1?x=" + m.suffix
	paidByCredit(t, c, m.key, odd)
	raw := &apitest.Client{T: t, BaseURL: baseURL} // the checker would split the escaped number
	var oddNumber string
	testenv.Eventually(t, 60*time.Second, "order "+odd+" archived", func() bool {
		var st struct {
			Data struct {
				Invoices []struct{ Number, Status string }
			}
		}
		r := raw.Do("GET", "/v1/orders/"+url.PathEscape(odd), m.key, nil)
		if err := json.Unmarshal(r.Body, &st); err != nil || len(st.Data.Invoices) != 1 || st.Data.Invoices[0].Status != "archived" {
			return false
		}
		oddNumber = st.Data.Invoices[0].Number
		return true
	})
	base := "/console/p/" + m.pid + "/"
	ctx := newBrowser(t)
	owner := "owner-" + uuid.NewString()[:8] + "@example.com"
	acceptInBrowser(t, ctx, inviteByCommand(t, m.pid, owner, "owner", "--no-mail"), owner)

	search := func(q string) {
		t.Helper()
		if st := open(t, ctx, base+"orders"); st != 200 {
			t.Fatalf("orders: %d", st)
		}
		step(t, ctx, "type the search "+q, chromedp.SetValue(chromedp.ID("q"), q))
		if st := submit(t, ctx, `#order-search button[type=submit]`); st != 200 {
			t.Fatalf("search %q: %d", q, st)
		}
	}
	heading := func() string { t.Helper(); return text(t, ctx, "h1") }

	// The order number with URL-special characters: found, its page, its
	// document, and the link back.
	search(odd)
	if h := heading(); !strings.HasSuffix(h, " "+odd) {
		t.Fatalf("the search for %q opened %q", odd, h)
	}
	if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "archived") {
		t.Errorf("the timeline of %q: %s", odd, tl)
	}
	if st := submit(t, ctx, `#documents a[href*="/invoices/"]`); st != 200 || !strings.Contains(bodyHTML(t, ctx), oddNumber) {
		t.Fatalf("the document of %q: %d", odd, st)
	}
	for _, id := range []string{"pdf", "validation", "chain", "download-xml"} {
		if !strings.Contains(bodyHTML(t, ctx), `id="`+id+`"`) {
			t.Errorf("the document's page has no #%s", id)
		}
	}
	if st := submit(t, ctx, `a[href*="/orders/"]`); st != 200 || !strings.HasSuffix(heading(), " "+odd) {
		t.Errorf("the document's link back to order %q: %d %q", odd, st, heading())
	}

	// By invoice number and by payment reference (an order waiting for it).
	search(m.live[1])
	if h := heading(); !strings.HasSuffix(h, " "+m.liveOrders[1]) {
		t.Errorf("the search for invoice %s opened %q", m.live[1], h)
	}
	search("pi_" + m.liveOrders[2])
	if h := heading(); !strings.HasSuffix(h, " "+m.liveOrders[2]) {
		t.Errorf("the search for the payment reference opened %q", h)
	}
	if w := text(t, ctx, "#waits"); !strings.Contains(w, "payment") {
		t.Errorf("why the order waits: %q", w)
	}

	// Invoices: the filters, and the XML downloaded.
	if st := open(t, ctx, base+"invoices"); st != 200 {
		t.Fatalf("invoices: %d", st)
	}
	step(t, ctx, "filter test documents", chromedp.SetValue(chromedp.ID("mode"), "test"))
	if st := submit(t, ctx, `#invoice-filter button[type=submit]`); st != 200 {
		t.Fatalf("filter: %d", st)
	}
	if list := text(t, ctx, "#invoices"); !strings.Contains(list, m.test[0]) || strings.Contains(list, m.live[0]) {
		t.Errorf("the test documents list %q", list)
	}
	if st := open(t, ctx, base+"invoices/"+invoiceID(t, m.pid, m.live[0])); st != 200 {
		t.Fatalf("document: %d", st)
	}
	xml := download(t, ctx, "download-xml", m.live[0]+".xml")
	if api := c.Do("GET", "/v1/invoices/"+m.live[0]+"/xml", m.key, nil); !bytes.Equal(xml, api.Body) {
		t.Errorf("the downloaded XML (%d bytes) differs from the API's (%d bytes)", len(xml), len(api.Body))
	}

	// Keys: created (shown once), rotated (a new secret), revoked.
	if st := open(t, ctx, base+"keys"); st != 200 {
		t.Fatalf("keys: %d", st)
	}
	step(t, ctx, "name the key", chromedp.SetValue(chromedp.ID("name"), "tour"), chromedp.Click(chromedp.CSS(`#create-key input[value="invoices:read"]`)))
	submit(t, ctx, `#create-key button[type=submit]`)
	first := text(t, ctx, "#new-key")
	if !strings.Contains(bodyHTML(t, ctx), `data-copy="new-key"`) {
		t.Error("no copy button beside the new key")
	}
	submit(t, ctx, tourKey(t, ctx)+` form[action$="/rotate"] button`)
	second := text(t, ctx, "#new-key")
	if second == "" || second == first || apiStatus(t, second) != 404 || apiStatus(t, first) != 401 {
		t.Errorf("the rotated key: old %d, new %d", apiStatus(t, first), apiStatus(t, second))
	}
	submit(t, ctx, tourKey(t, ctx)+` form[action$="/revoke"] button`)
	testenv.Eventually(t, 30*time.Second, "the revoked key refused", func() bool { return apiStatus(t, second) == 401 })

	// API activity: searched by status, one request opened.
	if st := open(t, ctx, base+"activity"); st != 200 {
		t.Fatalf("activity: %d", st)
	}
	step(t, ctx, "search status 404", chromedp.SetValue(chromedp.ID("status"), "404"))
	submit(t, ctx, `#activity-search button[type=submit]`)
	if st := submit(t, ctx, `#requests a`); st != 200 || !strings.Contains(text(t, ctx, "#request"), "404") {
		t.Errorf("one request: %d", st)
	}

	// Exports and the archive: each download answers with its file.
	if st := open(t, ctx, base+"exports"); st != 200 {
		t.Fatalf("exports: %d", st)
	}
	for _, f := range []string{"export-datev", "export-oss", "export-ecsl"} {
		u := formURL(t, ctx, f)
		if st, head := fetchInPage(t, ctx, u); st != 200 || head == "" {
			t.Errorf("%s (%s): %d %q", f, u, st, head)
		}
	}
	if st := open(t, ctx, base+"archive"); st != 200 {
		t.Fatalf("archive: %d", st)
	}
	if st := submit(t, ctx, "#verify"); st != 200 || !strings.Contains(bodyHTML(t, ctx), `id="verify-result" class="notice"`) {
		t.Errorf("verify: %d %s", st, text(t, ctx, "main"))
	}
	if st, head := fetchInPage(t, ctx, base+"archive/export?year="+strconv.Itoa(m.year)); st != 200 || !strings.HasPrefix(head, "PK") {
		t.Errorf("archive export: %d %q", st, head)
	}

	// Test mode: the switch, then the reset refused without the exact name.
	if st := open(t, ctx, base); st != 200 {
		t.Fatalf("overview: %d", st)
	}
	before := text(t, ctx, "#view-mode")
	submit(t, ctx, "#switch-view")
	if after := text(t, ctx, "#view-mode"); after == before {
		t.Errorf("the view stayed %q", after)
	}
	open(t, ctx, base+"settings")
	step(t, ctx, "type a wrong name", chromedp.SetValue(chromedp.ID("confirm"), "not the name"))
	if st := submit(t, ctx, "#reset-submit"); st != 422 {
		t.Errorf("a reset with the wrong name: %d, want 422", st)
	}
	name := text(t, ctx, "#reset strong")
	step(t, ctx, "type the name", chromedp.SetValue(chromedp.ID("confirm"), name))
	if st := submit(t, ctx, "#reset-submit"); st != 200 || !strings.Contains(location(t, ctx), "saved=reset") {
		t.Errorf("the reset: %d at %s", st, location(t, ctx))
	}
	if r := c.Do("GET", "/v1/orders/"+url.PathEscape(m.testOrders[0]), m.key, nil); r.Status != 404 {
		t.Errorf("a test order after the reset: %d", r.Status)
	}

	// Members: a member given another role, then removed; an invitation.
	signedIn(t, m.pid, "developer")
	open(t, ctx, base+"members")
	step(t, ctx, "invite", chromedp.SetValue(chromedp.ID("email"), "tour-"+m.suffix+"@example.com"))
	submit(t, ctx, `#invite button[type=submit]`)
	if !strings.Contains(text(t, ctx, "#pending"), "tour-"+m.suffix+"@example.com") {
		t.Error("the invitation is not listed")
	}
	rows := func() int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#members tbody tr").length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	developer := func() string {
		t.Helper()
		i, err := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#members tbody tr")].findIndex(r => r.cells[0].textContent.includes("developer-")) + 1`))
		if err != nil || i == 0 {
			t.Fatalf("the developer's row: %d %v", i, err)
		}
		return `#members tbody tr:nth-child(` + strconv.Itoa(i) + `)`
	}
	open(t, ctx, base+"members")
	step(t, ctx, "choose accountant", chromedp.SetValue(chromedp.CSS(developer()+` select[name=role]`), "accountant"))
	submit(t, ctx, developer()+` form[action$="/role"] button`)
	if row := text(t, ctx, developer()); !strings.Contains(row, "ccountant") {
		t.Errorf("the changed role: %q", row)
	}
	n := rows()
	submit(t, ctx, developer()+` form[action$="/remove"] button`)
	if got := rows(); got != n-1 || strings.Contains(text(t, ctx, "#members"), "developer-") {
		t.Errorf("%d members after the removal, want %d", got, n-1)
	}

	// The second factor: enrolled with a code of the secret shown.
	open(t, ctx, "/console/account/security")
	submit(t, ctx, "#start")
	code, err := totp.GenerateCode(text(t, ctx, "#totp-secret"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "type the code", chromedp.SetValue(chromedp.ID("code"), code))
	if st := submit(t, ctx, "#confirm"); st != 200 || strings.Count(text(t, ctx, "#recovery-codes"), "\n") < 5 {
		t.Errorf("the second factor: %d", st)
	}
}
