package main

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
)

// The console's record pages against the whole service: real orders,
// documents archived by the invoicer, the request log the API writes.

// consoleUser is a member's session with the console, following no redirects.
type consoleUser struct {
	t *testing.T
	c *http.Client
}

type consolePage struct {
	status int
	body   []byte
	header http.Header
}

// signedIn invites email to the project with role by the command line and
// accepts the invitation; the returned user is signed in.
func signedIn(t *testing.T, pid, role string, extra ...string) *consoleUser {
	t.Helper()
	addr := role + "-" + uuid.NewString()[:8] + "@example.com"
	path := inviteByCommand(t, pid, addr, role, append([]string{"--no-mail"}, extra...)...)
	jar, _ := cookiejar.New(nil)
	u := &consoleUser{t: t, c: &http.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, err := u.c.PostForm(baseURL+path, url.Values{"email": {addr}, "password": {browserPassword}, "password_confirm": {browserPassword}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("accept the invitation as %s: %d", role, resp.StatusCode)
	}
	return u
}

func (u *consoleUser) get(path string) consolePage {
	u.t.Helper()
	resp, err := u.c.Get(baseURL + path)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		u.t.Fatalf("read %s: %v", path, err)
	}
	return consolePage{status: resp.StatusCode, body: b, header: resp.Header}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// post sends a form with the session's token (read from a page of pid), as
// the page's form would, from the console's own origin.
func (u *consoleUser) post(pid, path string, form url.Values) consolePage {
	u.t.Helper()
	m := csrfField.FindSubmatch(u.get("/console/p/" + pid + "/").body)
	if m == nil {
		u.t.Fatal("no form token on the overview")
	}
	form.Set("csrf", string(m[1]))
	req, err := http.NewRequest("POST", baseURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		u.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", baseURL)
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return consolePage{status: resp.StatusCode, body: b, header: resp.Header}
}

// invoiceID is the id of the project's document numbered number.
func invoiceID(t *testing.T, pid, number string) string {
	t.Helper()
	var id string
	if err := testenv.Pool(t).QueryRow(context.Background(), `SELECT id::text FROM invoices WHERE project_id = $1 AND number = $2`, pid, number).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestConsoleRecordPages(t *testing.T) {
	m := newMixedYear(t)
	c := client(t)
	base := "/console/p/" + m.pid + "/"
	owner := signedIn(t, m.pid, "owner")
	live, test := m.live[0], m.test[0]
	liveID, testID := invoiceID(t, m.pid, live), invoiceID(t, m.pid, test)

	t.Run("orders", func(t *testing.T) {
		// Found by order number, invoice number and payment reference: one hit opens the order.
		for _, q := range []string{m.liveOrders[0], live, "pi_" + m.liveOrders[2]} {
			p := owner.get(base + "orders?q=" + url.QueryEscape(q))
			want := base + "orders/"
			if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), want) {
				t.Errorf("search %q: %d %s", q, p.status, p.header.Get("Location"))
			}
		}
		if p := owner.get(base + "orders?q=NO-SUCH-" + m.suffix); p.status != 200 || !bytes.Contains(p.body, []byte(`id="no-orders"`)) {
			t.Errorf("search for nothing: %d", p.status)
		}
		// The listings show the data the session looks at: live, then test
		// after the header's switch.
		listed := func(view string, shown, hidden []string) {
			t.Helper()
			p := owner.get(base + "orders")
			for _, o := range shown {
				if !bytes.Contains(p.body, []byte(">"+o+"<")) {
					t.Errorf("the %s order listing lacks %s", view, o)
				}
			}
			for _, o := range hidden {
				if bytes.Contains(p.body, []byte(">"+o+"<")) {
					t.Errorf("the %s order listing shows %s", view, o)
				}
			}
			want, other := live, test
			if view == "test" {
				want, other = test, live
			}
			if p := owner.get(base + "invoices"); !bytes.Contains(p.body, []byte(want)) || bytes.Contains(p.body, []byte(other)) {
				t.Errorf("the %s document listing: %d", view, p.status)
			}
		}
		listed("live", m.liveOrders, m.testOrders)
		if p := owner.post(m.pid, base+"view", url.Values{"view": {"test"}, "next": {base}}); p.status != http.StatusSeeOther {
			t.Fatalf("switch to test data: %d %s", p.status, p.body)
		}
		listed("test", m.testOrders, m.liveOrders)
		if p := owner.get(base + "invoices?mode=all"); !bytes.Contains(p.body, []byte(live)) || !bytes.Contains(p.body, []byte(test)) {
			t.Errorf("mode=all does not list both: %d", p.status)
		}
		owner.post(m.pid, base+"view", url.Values{"view": {"live"}, "next": {base}})
		p := owner.get(base + "orders/" + m.liveOrders[0])
		if p.status != 200 || !bytes.Contains(p.body, []byte(live)) || !bytes.Contains(p.body, []byte("received")) ||
			!bytes.Contains(p.body, []byte("archived")) || !bytes.Contains(p.body, []byte("/invoices/"+liveID)) {
			t.Errorf("order page: %d\n%s", p.status, p.body)
		}
		p = owner.get(base + "orders/" + m.liveOrders[2])
		if p.status != 200 || !bytes.Contains(p.body, []byte("waiting for payment")) {
			t.Errorf("the waiting order's page does not say it waits for payment: %d", p.status)
		}
	})

	t.Run("invoices", func(t *testing.T) {
		p := owner.get(base + "invoices?mode=live")
		if p.status != 200 || !bytes.Contains(p.body, []byte(live)) || bytes.Contains(p.body, []byte(test)) {
			t.Errorf("live documents: %d", p.status)
		}
		p = owner.get(base + "invoices?mode=test&kind=invoice&status=archived&period=" + strconv.Itoa(m.year))
		if p.status != 200 || bytes.Contains(p.body, []byte(live)) || !bytes.Contains(p.body, []byte(test)) {
			t.Errorf("test documents: %d", p.status)
		}
		if p := owner.get(base + "invoices?kind=credit_note"); bytes.Contains(p.body, []byte(live)) {
			t.Error("an invoice is listed as a credit note")
		}
		if p := owner.get(base + "invoices?period=" + strconv.Itoa(m.year-1)); bytes.Contains(p.body, []byte(live)) {
			t.Error("a document is listed in the year before its issue")
		}
		if p := owner.get(base + "invoices?mode=both"); p.status != 422 {
			t.Errorf("a bad mode: %d, want 422", p.status)
		}
		p = owner.get(base + "invoices/" + liveID)
		if p.status != 200 || !bytes.Contains(p.body, []byte(`<iframe id="pdf"`)) || !bytes.Contains(p.body, []byte("EN 16931")) ||
			!bytes.Contains(p.body, []byte(m.liveOrders[0])) {
			t.Errorf("document page: %d\n%s", p.status, p.body)
		}
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("the document page may be framed: %s", csp)
		}
		// The PDF and XML are the archived bytes the API serves.
		for _, kind := range []string{"pdf", "xml"} {
			api := c.Do("GET", "/v1/invoices/"+live+"/"+kind, m.key, nil)
			if api.Status != 200 {
				t.Fatalf("API %s: %d", kind, api.Status)
			}
			got := owner.get(base + "invoices/" + liveID + "/" + kind)
			if got.status != 200 || !bytes.Equal(got.body, api.Body) {
				t.Errorf("console %s: %d, %d bytes, API %d bytes", kind, got.status, len(got.body), len(api.Body))
			}
			if got.header.Get("Content-Type") != query.DocumentType(kind) {
				t.Errorf("%s served as %s", kind, got.header.Get("Content-Type"))
			}
		}
		inline := owner.get(base + "invoices/" + liveID + "/pdf")
		if csp := inline.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self'") ||
			!strings.HasPrefix(inline.header.Get("Content-Disposition"), "inline") {
			t.Errorf("the framed PDF: CSP %q, disposition %q", csp, inline.header.Get("Content-Disposition"))
		}
		if d := owner.get(base + "invoices/" + liveID + "/pdf?download=1").header.Get("Content-Disposition"); !strings.HasPrefix(d, "attachment") {
			t.Errorf("the PDF download: %q", d)
		}
		if p := owner.get(base + "invoices/" + testID); p.status != 200 {
			t.Errorf("test document page: %d", p.status)
		}
	})

	t.Run("cross-project", func(t *testing.T) {
		otherPID := testenv.Project(t, testenv.Pool(t), true)
		other := signedIn(t, otherPID, "owner")
		ob := "/console/p/" + otherPID + "/"
		reqID := c.Do("GET", "/v1/orders/"+m.liveOrders[0], m.key, nil).Header.Get("X-Request-Id")
		testenv.Eventually(t, 20*time.Second, "the request is recorded", func() bool {
			return owner.get(base+"activity/"+reqID).status == 200
		})
		for _, path := range []string{
			ob + "orders/" + m.liveOrders[0], ob + "invoices/" + liveID, ob + "invoices/" + liveID + "/pdf",
			ob + "invoices/" + liveID + "/xml", ob + "activity/" + reqID, base + "invoices/" + liveID, base + "orders",
		} {
			if p := other.get(path); p.status != 404 {
				t.Errorf("another project's owner, %s: %d, want 404", path, p.status)
			}
		}
		if p := other.get(ob + "orders?q=" + m.liveOrders[0] + "&list=1"); bytes.Contains(p.body, []byte(">"+m.liveOrders[0]+"<")) {
			t.Error("another project's search finds the order")
		}
		if p := other.get(ob + "invoices"); bytes.Contains(p.body, []byte(live)) {
			t.Error("another project lists the document")
		}
	})

	t.Run("activity", func(t *testing.T) {
		dev := signedIn(t, m.pid, "developer")
		r := c.Do("GET", "/v1/invoices/"+live, m.key, nil)
		id := r.Header.Get("X-Request-Id")
		testenv.Eventually(t, 20*time.Second, "the request in the search", func() bool {
			return bytes.Contains(dev.get(base+"activity?path="+url.QueryEscape("/v1/invoices/")+"&status=200").body, []byte(id))
		})
		p := dev.get(base + "activity?requestId=" + id)
		if !bytes.Contains(p.body, []byte(id)) {
			t.Error("search by request id")
		}
		if p := dev.get(base + "activity?status=404&path=" + url.QueryEscape("/v1/invoices/")); bytes.Contains(p.body, []byte(id)) {
			t.Error("a 200 is found under status 404")
		}
		prefix := m.key[:12]
		if p := dev.get(base + "activity?key=" + url.QueryEscape(prefix)); !bytes.Contains(p.body, []byte(id)) {
			t.Errorf("search by key prefix %s", prefix)
		}
		p = dev.get(base + "activity/" + id)
		if p.status != 200 || !bytes.Contains(p.body, []byte("/v1/invoices/"+live)) {
			t.Errorf("request details: %d", p.status)
		}
		if p := dev.get(base + "activity?status=abc"); p.status != 422 {
			t.Errorf("a bad status: %d, want 422", p.status)
		}
	})

	t.Run("exports", func(t *testing.T) {
		acc := signedIn(t, m.pid, "accountant")
		from, to := fmt.Sprintf("%d-01-01", m.year), fmt.Sprintf("%d-12-31", m.year)
		api := c.Do("GET", "/v1/exports/datev?from="+from+"&to="+to, m.key, nil)
		got := acc.get(base + "exports/datev?from=" + from + "&to=" + to)
		// The same bookings; the header line carries the time it was made.
		body := func(b []byte) []byte { _, rest, _ := bytes.Cut(b, []byte("\n")); return rest }
		if api.Status != 200 || got.status != 200 || !bytes.Equal(body(got.body), body(api.Body)) || !bytes.HasPrefix(got.body, []byte(`"EXTF"`)) {
			t.Errorf("DATEV: console %d (%d bytes), API %d (%d bytes)", got.status, len(got.body), api.Status, len(api.Body))
		}
		q := fmt.Sprintf("%d-Q%d", m.year, (int(time.Now().UTC().Month())-1)/3+1)
		api = c.Do("GET", "/v1/reports/oss?quarter="+q, m.key, nil)
		if got := acc.get(base + "exports/oss?quarter=" + q); got.status != 200 || !bytes.Equal(got.body, api.Body) {
			t.Errorf("OSS: console %d, API %d", got.status, api.Status)
		}
		if got := acc.get(base + "exports/ecsl?period=" + time.Now().UTC().Format("2006-01")); got.status != 200 {
			t.Errorf("EC sales list: %d", got.status)
		}
		if got := acc.get(base + "exports/datev?from=" + to + "&to=" + from); got.status != 422 {
			t.Errorf("a reversed range: %d, want 422", got.status)
		}
		if got := acc.get(base + "archive"); got.status != 403 {
			t.Errorf("the accountant's archive: %d, want 403", got.status)
		}
		if p := acc.get(base + "exports"); p.status != 200 || !bytes.Contains(p.body, []byte(`action="`+base+`exports/datev"`)) {
			t.Errorf("exports page: %d", p.status)
		}
	})

	t.Run("auditor", func(t *testing.T) {
		ends := time.Now().AddDate(0, 1, 0).Format("2006-01-02")
		before := signedIn(t, m.pid, "auditor", "--audit-years", strconv.Itoa(m.year-1), "--ends-on", ends)
		if p := before.get(base + "invoices"); p.status != 200 || bytes.Contains(p.body, []byte(live)) {
			t.Errorf("an auditor of %d lists a document of %d: %d", m.year-1, m.year, p.status)
		}
		for _, path := range []string{
			"invoices/" + liveID, "invoices/" + liveID + "/pdf", "invoices/" + liveID + "/xml",
			"archive?year=" + strconv.Itoa(m.year), "archive/verify?year=" + strconv.Itoa(m.year), "archive/export?year=" + strconv.Itoa(m.year),
			fmt.Sprintf("exports/datev?from=%d-01-01&to=%d-12-31", m.year, m.year), fmt.Sprintf("exports/oss?quarter=%d-Q1", m.year),
			fmt.Sprintf("exports/ecsl?period=%d-01", m.year),
		} {
			if p := before.get(base + path); p.status != 404 {
				t.Errorf("an auditor of %d, %s: %d, want 404", m.year-1, path, p.status)
			}
		}
		for _, path := range []string{"orders", "keys", "activity", "members", "audit", "orders/" + m.liveOrders[0]} {
			if p := before.get(base + path); p.status != 403 {
				t.Errorf("auditor, %s: %d, want 403", path, p.status)
			}
		}
		// The console change log of the year goes into the archive export.
		if err := account.New(testenv.Pool(t)).Record(context.Background(), account.Entry{At: time.Now(), ProjectID: m.pid,
			ActorEmail: "owner@example.com", Action: "test.change", Target: m.suffix}); err != nil {
			t.Fatal(err)
		}
		aud := signedIn(t, m.pid, "auditor", "--audit-years", strconv.Itoa(m.year), "--ends-on", ends)
		p := aud.get(base + "invoices")
		if !bytes.Contains(p.body, []byte(live)) {
			t.Errorf("an auditor of %d does not list %s", m.year, live)
		}
		if p := aud.get(base + "archive"); p.status != 200 || !bytes.Contains(p.body, []byte(live)) || bytes.Contains(p.body, []byte(test)) {
			t.Errorf("auditor's archive listing: %d", p.status)
		}
		if p := aud.get(base + "archive/verify?year=" + strconv.Itoa(m.year)); p.status != 200 || !bytes.Contains(p.body, []byte("intact")) {
			t.Errorf("verify: %d\n%s", p.status, p.body)
		}
		api := c.Do("GET", "/v1/invoices/"+live+"/pdf", m.key, nil)
		if p := aud.get(base + "invoices/" + liveID + "/pdf?download=1"); p.status != 200 || !bytes.Equal(p.body, api.Body) {
			t.Errorf("auditor's PDF: %d", p.status)
		}
		z := aud.get(base + "archive/export?year=" + strconv.Itoa(m.year))
		if z.status != 200 || z.header.Get("Content-Type") != "application/zip" {
			t.Fatalf("archive export: %d %s", z.status, z.header.Get("Content-Type"))
		}
		zr, err := zip.NewReader(bytes.NewReader(z.body), int64(len(z.body)))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range zr.File {
			if f.Name == query.ExportConsoleChanges {
				rc, _ := f.Open()
				b, _ := io.ReadAll(rc)
				rc.Close()
				found = bytes.Contains(b, []byte(`"action" : "test.change"`)) || bytes.Contains(b, []byte(`"action":"test.change"`))
			}
		}
		if !found {
			t.Errorf("the export has no %s with the recorded change", query.ExportConsoleChanges)
		}
	})

	t.Run("overview", func(t *testing.T) {
		p := owner.get(base)
		if p.status != 200 || !bytes.Contains(p.body, []byte(`<svg id="chart"`)) || !bytes.Contains(p.body, []byte("waiting for payment")) {
			t.Errorf("overview: %d\n%s", p.status, p.body)
		}
		if bytes.Contains(p.body, []byte(`id="orders-7d">0<`)) {
			t.Error("no orders in the last 7 days")
		}
		if p := signedIn(t, m.pid, "auditor", "--audit-years", strconv.Itoa(m.year), "--ends-on", time.Now().AddDate(0, 1, 0).Format("2006-01-02")).get(base); bytes.Contains(p.body, []byte(`id="stats"`)) {
			t.Error("the auditor sees the project's order numbers")
		}
	})
}
