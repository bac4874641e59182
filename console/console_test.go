package console_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/console"
	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
)

// clock is the console's clock in a test: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a console on the local stack's PostgreSQL, Redis and SMTP sink,
// served by an httptest server.
type env struct {
	t     *testing.T
	srv   *httptest.Server
	con   *console.Console
	acc   *account.Store
	pool  *pgxpool.Pool
	clock *clock
}

const password = "a long enough password"

// newEnv starts a console whose public URL is publicURL ("" = the test
// server's own) and whose clock starts at start (zero: now).
func newEnv(t *testing.T, publicURL string, start time.Time) *env {
	t.Helper()
	return newEnvWith(t, publicURL, start, nil)
}

// newEnvWith is newEnv with a change of the console's configuration.
func newEnvWith(t *testing.T, publicURL string, start time.Time, change func(*console.Config)) *env {
	t.Helper()
	pool := testenv.Pool(t)
	if start.IsZero() {
		// A moment of its own in the past: the failed sign-ins of one test
		// (per address, all from 127.0.0.1) fall into no other's window.
		start = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rand.IntN(10_000_000)) * time.Minute)
	}
	e := &env{t: t, pool: pool, acc: account.New(pool), clock: &clock{t: start}}
	sender, err := mail.NewSender(testenv.Env("O2I_SMTP_URL"), "Console test <console@localhost>")
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(e.srv.Close)
	if publicURL == "" {
		publicURL = e.srv.URL
	}
	cmds := command.New(pool)
	cfg := console.Config{PublicURL: publicURL, Sender: sender, Now: e.clock.Now,
		RecheckTask: func(ctx context.Context, projectID, id string) (any, bool, error) {
			return cmds.RecheckTask(ctx, projectID, id)
		},
		DismissTask: func(ctx context.Context, projectID, id string) (any, error) {
			return cmds.DismissTask(ctx, projectID, id)
		}}
	if change != nil {
		change(&cfg)
	}
	e.con, err = console.New(pool, query.New(pool, testenv.Redis(t)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h = e.con.Handler()
	return e
}

// browser is one cookie jar speaking to the console, following no redirects.
type browser struct {
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (b *browser) do(method, path string, form url.Values, hdr map[string]string) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, body: string(raw), header: resp.Header}
}

func (b *browser) get(path string) page { return b.do("GET", path, nil, nil) }

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the form token from a page of the session.
func (b *browser) csrf() string {
	b.e.t.Helper()
	p := b.get("/console/")
	m := csrfRe.FindStringSubmatch(p.body)
	if m == nil {
		b.e.t.Fatalf("no form token on the start page (%d): %s", p.status, p.body)
	}
	return m[1]
}

// post sends a form with the session's token.
func (b *browser) post(path string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf())
	return b.do("POST", path, form, nil)
}

func (b *browser) signIn(email, pw string) page {
	return b.do("POST", "/console/sign-in", url.Values{"email": {email}, "password": {pw}}, nil)
}

func email(tag string) string { return tag + "-" + uuid.NewString()[:8] + "@example.com" }

// member makes a user with a password and the role in the project (by
// invitation, as a person would) and returns a signed-in browser.
func (e *env) member(projectID string, role account.Role) (*browser, account.User) {
	e.t.Helper()
	ctx := context.Background()
	var years []int
	var ends *time.Time
	if role == account.Auditor {
		end := e.clock.Now().AddDate(0, 3, 0)
		years, ends = []int{e.clock.Now().Year() - 1}, &end
	}
	addr := email(string(role))
	tok, _, err := e.acc.Invite(ctx, projectID, addr, role, years, ends, "", e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.acc.Accept(ctx, tok, addr, password, password, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	b := e.browser()
	if p := b.signIn(addr, password); p.status != http.StatusSeeOther {
		e.t.Fatalf("sign-in of %s: %d %s", addr, p.status, p.body)
	}
	return b, u
}

func (e *env) project() string { return testenv.Project(e.t, e.pool, true) }

func TestInvitationSetPasswordSignIn(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	addr := email("invitee")
	inv, err := e.acc.SendInvitation(context.Background(), nil, e.srv.URL, pid, addr, account.Owner, nil, nil, account.User{}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(inv.Link, e.srv.URL)
	if !strings.HasPrefix(path, "/console/invite/") {
		t.Fatalf("link %s", inv.Link)
	}
	b := e.browser()
	p := b.get(path)
	if p.status != 200 {
		t.Fatalf("invitation page: %d", p.status)
	}
	for _, want := range []string{`<input type="email" id="email" name="email" value="` + addr + `"`, `name="password"`, `name="password_confirm"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("invitation page lacks %s", want)
		}
	}
	if strings.Contains(p.body, `type="checkbox"`) || strings.Contains(p.body, `name="username"`) {
		t.Error("the set-password form has a checkbox or a user name")
	}
	// Field-exact errors.
	p = b.do("POST", path, url.Values{"email": {addr}, "password": {"short"}, "password_confirm": {"short"}}, nil)
	if p.status != 422 || !strings.Contains(p.body, "password: the password needs at least 12 characters") {
		t.Errorf("short password: %d %s", p.status, p.body)
	}
	p = b.do("POST", path, url.Values{"email": {addr}, "password": {password}, "password_confirm": {password + "x"}}, nil)
	if p.status != 422 || !strings.Contains(p.body, "password_confirm: the two passwords differ") {
		t.Errorf("differing passwords: %d", p.status)
	}
	p = b.do("POST", path, url.Values{"email": {"other@example.com"}, "password": {password}, "password_confirm": {password}}, nil)
	if p.status != 422 || !strings.Contains(p.body, "email: the invitation is for") {
		t.Errorf("other e-mail: %d", p.status)
	}
	p = b.do("POST", path, url.Values{"email": {addr}, "password": {password}, "password_confirm": {password}}, nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/p/"+pid+"/" {
		t.Fatalf("accept: %d %s", p.status, p.header.Get("Location"))
	}
	ck := p.header.Get("Set-Cookie")
	for _, want := range []string{"o2i_session=", "Path=/", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(ck, want) {
			t.Errorf("session cookie %q lacks %s", ck, want)
		}
	}
	if strings.Contains(ck, "Secure") || strings.Contains(ck, "__Host-") {
		t.Errorf("cookie %q is Secure under an http public URL", ck)
	}
	if p := b.get("/console/p/" + pid + "/"); p.status != 200 || !strings.Contains(p.body, addr) || !strings.Contains(p.body, `action="/console/sign-out"`) {
		t.Errorf("overview after accepting: %d", p.status)
	}
	// The link is used up, and the page says so.
	if p := e.browser().get(path); p.status != 404 || !strings.Contains(p.body, "This invitation link is unknown, used or expired") {
		t.Errorf("used invitation: %d, want 404 with the reason", p.status)
	}
	// Expired links are gone too.
	tok, _, err := e.acc.Invite(context.Background(), pid, email("late"), account.Developer, nil, nil, "", e.clock.Now().Add(-account.InvitationTTL-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if p := e.browser().get(account.InvitationPath(tok)); p.status != 404 {
		t.Errorf("expired invitation: %d, want 404", p.status)
	}
	// The invitee signs in again with the password.
	b2 := e.browser()
	if p := b2.signIn(strings.ToUpper(addr), password); p.status != http.StatusSeeOther {
		t.Errorf("sign-in: %d", p.status)
	}
}

func TestSessionCookieUnderHTTPS(t *testing.T) {
	e := newEnv(t, "https://invoices.example.com", time.Time{})
	if e.con.CookieName() != "__Host-o2i_session" {
		t.Errorf("cookie name %s", e.con.CookieName())
	}
	pid := e.project()
	addr := email("https")
	tok, _, err := e.acc.Invite(context.Background(), pid, addr, account.Owner, nil, nil, "", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := e.browser().do("POST", account.InvitationPath(tok), url.Values{"email": {addr}, "password": {password}, "password_confirm": {password}}, nil)
	ck := p.header.Get("Set-Cookie")
	for _, want := range []string{"__Host-o2i_session=", "Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(ck, want) {
			t.Errorf("cookie %q lacks %s", ck, want)
		}
	}
	if strings.Contains(ck, "Domain=") {
		t.Errorf("a __Host- cookie has a Domain: %q", ck)
	}
	if h := p.header.Get("Strict-Transport-Security"); !strings.Contains(h, "max-age=") {
		t.Errorf("HSTS %q", h)
	}
	// Behind the load balancer the service sees another Host than the
	// browser: a form from the public URL's origin is this site's.
	session := strings.SplitN(strings.SplitN(ck, ";", 2)[0], "=", 2)[1]
	b := e.browser()
	hdr := map[string]string{"Cookie": "__Host-o2i_session=" + session}
	page := b.do("GET", "/console/p/"+pid+"/keys", nil, hdr)
	m := csrfRe.FindStringSubmatch(page.body)
	if page.status != 200 || m == nil {
		t.Fatalf("keys page with the cookie: %d", page.status)
	}
	form := url.Values{"csrf": {m[1]}, "name": {"lb"}, "scopes": {"invoices:read"}, "expires": {"never"}}
	hdr["Origin"] = "https://invoices.example.com"
	if p := b.do("POST", "/console/p/"+pid+"/keys", form, hdr); p.status != 200 {
		t.Errorf("form from the public URL's origin: %d, want 200", p.status)
	}
	hdr["Origin"] = "https://evil.example"
	if p := b.do("POST", "/console/p/"+pid+"/keys", form, hdr); p.status != 403 {
		t.Errorf("form from a foreign origin: %d, want 403", p.status)
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	p := e.browser().get("/console/sign-in")
	csp := p.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	for h, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if got := p.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if p.header.Get("Strict-Transport-Security") != "" {
		t.Error("HSTS under an http public URL")
	}
	if strings.Contains(p.body, "<script>") || regexp.MustCompile(`<script(?: [^>]*)?>[^<]`).MatchString(p.body) || strings.Contains(p.body, " onclick=") {
		t.Error("inline script in the page")
	}
	// The sign-in form: an e-mail and a password field, nothing else to tick.
	if !strings.Contains(p.body, `<input type="email" id="email" name="email"`) || !strings.Contains(p.body, `type="password"`) || strings.Contains(p.body, "checkbox") {
		t.Error("sign-in form is not plain")
	}
	if a := e.browser().get("/console/assets/console.js"); a.status != 200 || !strings.Contains(a.header.Get("Content-Type"), "javascript") {
		t.Errorf("asset: %d %s", a.status, a.header.Get("Content-Type"))
	}
}

func TestLanguage(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	b := e.browser()
	if p := b.do("GET", "/console/sign-in", nil, map[string]string{"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}); !strings.Contains(p.body, "<h1>Anmelden</h1>") || !strings.Contains(p.body, `lang="de"`) {
		t.Errorf("German by Accept-Language: %s", p.body)
	}
	if p := b.do("GET", "/console/sign-in", nil, map[string]string{"Accept-Language": "en"}); !strings.Contains(p.body, "<h1>Sign in</h1>") {
		t.Error("English by Accept-Language")
	}
	// The switch wins over the header and is remembered.
	if p := b.do("GET", "/console/sign-in?lang=de", nil, map[string]string{"Accept-Language": "en"}); !strings.Contains(p.body, "<h1>Anmelden</h1>") {
		t.Error("switch to German")
	}
	if p := b.do("GET", "/console/sign-in", nil, map[string]string{"Accept-Language": "en"}); !strings.Contains(p.body, "<h1>Anmelden</h1>") {
		t.Error("the chosen language is not remembered")
	}
}

func TestCSRF(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, _ := e.member(pid, account.Developer)
	path := "/console/p/" + pid + "/keys"
	form := func(tok string) url.Values {
		return url.Values{"csrf": {tok}, "name": {"ci"}, "scopes": {"invoices:read"}, "expires": {"30d"}}
	}
	tok := b.csrf()
	count := func() int {
		ks, err := apikey.List(context.Background(), e.pool, pid, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return len(ks)
	}
	if p := b.do("POST", path, url.Values{"name": {"ci"}, "scopes": {"invoices:read"}}, nil); p.status != 403 {
		t.Errorf("no token: %d, want 403", p.status)
	}
	if p := b.do("POST", path, form("wrong"), nil); p.status != 403 {
		t.Errorf("wrong token: %d, want 403", p.status)
	}
	// A valid token from a foreign origin is refused all the same.
	if p := b.do("POST", path, form(tok), map[string]string{"Origin": "https://evil.example"}); p.status != 403 {
		t.Errorf("foreign origin with a valid token: %d, want 403", p.status)
	}
	if p := b.do("POST", path, form(tok), map[string]string{"Sec-Fetch-Site": "cross-site"}); p.status != 403 {
		t.Errorf("cross-site fetch with a valid token: %d, want 403", p.status)
	}
	if n := count(); n != 0 {
		t.Fatalf("refused forms created %d keys", n)
	}
	if p := b.do("POST", path, form(tok), map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"}); p.status != 200 {
		t.Errorf("same origin with the token: %d, want 200", p.status)
	}
	if n := count(); n != 1 {
		t.Errorf("%d keys after one accepted form", n)
	}
	// Another session's token is not this session's.
	b2, _ := e.member(pid, account.Developer)
	if p := b2.do("POST", path, form(tok), nil); p.status != 403 {
		t.Errorf("another session's token: %d, want 403", p.status)
	}
}

func TestSessionTimeouts(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	home := "/console/p/" + pid + "/"
	b, _ := e.member(pid, account.Accountant)
	if p := b.get(home); p.status != 200 {
		t.Fatalf("signed in: %d", p.status)
	}
	e.clock.Add(console.DefaultIdle + time.Minute)
	p := b.get(home)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/sign-in?next=") {
		t.Errorf("idle session: %d %s, want a redirect to sign-in", p.status, p.header.Get("Location"))
	}
	// Active all the time, the session still ends after the absolute timeout.
	b, _ = e.member(pid, account.Accountant)
	for elapsed := time.Duration(0); elapsed < console.DefaultAbsolute; elapsed += 20 * time.Minute {
		if p := b.get(home); p.status != 200 {
			t.Fatalf("active session ended after %s: %d", elapsed, p.status)
		}
		e.clock.Add(20 * time.Minute)
	}
	e.clock.Add(time.Minute)
	if p := b.get(home); p.status != http.StatusSeeOther {
		t.Errorf("session past the absolute timeout: %d", p.status)
	}
}

func TestSignOut(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	home := "/console/p/" + pid + "/"
	b, u := e.member(pid, account.Owner)
	cookies := b.c.Jar.Cookies(mustURL(e.srv.URL))
	p := b.post("/console/sign-out", nil)
	if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign-out: %d %q", p.status, p.header.Get("Set-Cookie"))
	}
	// The old cookie, kept by an attacker, is dead on the server.
	stolen := e.browser()
	stolen.c.Jar.SetCookies(mustURL(e.srv.URL), cookies)
	if p := stolen.get(home); p.status != http.StatusSeeOther {
		t.Errorf("a signed-out session still works: %d", p.status)
	}
	// Sign out everywhere ends every session of the user.
	b1 := e.browser()
	b1.signIn(u.Email, password)
	b2 := e.browser()
	b2.signIn(u.Email, password)
	if p := b2.get(home); p.status != 200 {
		t.Fatalf("second session: %d", p.status)
	}
	if p := b1.post("/console/sign-out-everywhere", nil); p.status != http.StatusSeeOther {
		t.Errorf("sign out everywhere: %d", p.status)
	}
	for i, x := range []*browser{b1, b2} {
		if p := x.get(home); p.status != http.StatusSeeOther {
			t.Errorf("session %d after sign out everywhere: %d", i, p.status)
		}
	}
	// Sign-in rotates the session id.
	b3 := e.browser()
	b3.signIn(u.Email, password)
	before := b3.c.Jar.Cookies(mustURL(e.srv.URL))
	b3.signIn(u.Email, password)
	after := b3.c.Jar.Cookies(mustURL(e.srv.URL))
	if len(before) == 0 || len(after) == 0 || before[0].Value == after[0].Value {
		t.Error("the session id is not new at sign-in")
	}
	old := e.browser()
	old.c.Jar.SetCookies(mustURL(e.srv.URL), before)
	if p := old.get(home); p.status != http.StatusSeeOther {
		t.Errorf("the session replaced at sign-in still works: %d", p.status)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// Failed sign-ins are limited per account and per address, with one answer
// for an unknown account and a wrong password.
func TestSignInLimitsAndNoEnumeration(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	_, u := e.member(pid, account.Developer)
	unknown := e.browser().signIn(email("nobody"), password)
	wrong := e.browser().signIn(u.Email, "not the password at all")
	if unknown.status != 401 || wrong.status != 401 {
		t.Errorf("unknown account %d, wrong password %d: want 401 both", unknown.status, wrong.status)
	}
	msg := regexp.MustCompile(`<p class="error"[^>]*>([^<]*)</p>`)
	mu, mw := msg.FindStringSubmatch(unknown.body), msg.FindStringSubmatch(wrong.body)
	if mu == nil || mw == nil || mu[1] != mw[1] {
		t.Errorf("messages differ: %q / %q", mu, mw)
	}
	// Per account: after MaxFailuresPerAcc failures even the right password waits.
	for i := 1; i < console.MaxFailuresPerAcc; i++ {
		e.browser().signIn(u.Email, "still not the password")
	}
	if p := e.browser().signIn(u.Email, password); p.status != 429 || p.header.Get("Retry-After") == "" {
		t.Errorf("after %d failures: %d, want 429 with Retry-After", console.MaxFailuresPerAcc, p.status)
	}
	if p := e.browser().signIn(strings.ToUpper(u.Email), password); p.status != 429 {
		t.Errorf("the limit is escaped by upper case: %d", p.status)
	}
	// An unknown account is limited alike (no difference to observe).
	ghost := email("ghost")
	for range console.MaxFailuresPerAcc {
		e.browser().signIn(ghost, password)
	}
	if p := e.browser().signIn(ghost, password); p.status != 429 {
		t.Errorf("unknown account after failures: %d, want 429", p.status)
	}
	// After the window the account signs in again.
	e.clock.Add(console.SignInWindow + time.Minute)
	if p := e.browser().signIn(u.Email, password); p.status != http.StatusSeeOther {
		t.Errorf("after the window: %d", p.status)
	}
	// Per address: many accounts from one address.
	for i := 0; i < console.MaxFailuresPerIP; i++ {
		e.browser().signIn(email("spray"), password)
	}
	if p := e.browser().signIn(u.Email, password); p.status != 429 {
		t.Errorf("address after %d failures: %d, want 429", console.MaxFailuresPerIP, p.status)
	}
}

// Every project page and form, for every role: allowed → not 403; not
// allowed → 403. Without a session: a redirect to sign-in. A member of
// another project: 404.
func TestRoleMatrix(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid, other := e.project(), e.project()
	browsers := map[account.Role]*browser{}
	for _, r := range account.Roles {
		browsers[r], _ = e.member(pid, r)
	}
	outsider, _ := e.member(other, account.Owner)
	anon := e.browser()
	fill := func(path, project string) string {
		path = strings.ReplaceAll(path, "{project}", project)
		path = strings.ReplaceAll(path, "{key}", uuid.NewString())
		path = strings.ReplaceAll(path, "{invitation}", strings.Repeat("ab", 32))
		path = strings.ReplaceAll(path, "{order}", "ORDER-"+uuid.NewString()[:8])
		path = strings.ReplaceAll(path, "{invoice}", uuid.NewString())
		path = strings.ReplaceAll(path, "{request}", uuid.NewString())
		path = strings.ReplaceAll(path, "{task}", uuid.NewString())
		return strings.ReplaceAll(path, "{user}", uuid.NewString())
	}
	routes := console.Routes()
	if len(routes) < 11 {
		t.Fatalf("%d routes", len(routes))
	}
	for _, rt := range routes {
		for _, role := range account.Roles {
			b := browsers[role]
			path := fill(rt.Path, pid)
			var p page
			if rt.Method == "GET" {
				p = b.get(path)
			} else {
				p = b.post(path, url.Values{})
			}
			allowed := account.Allows(role, rt.Action)
			if allowed && (p.status == 403 || p.status == http.StatusSeeOther && strings.Contains(p.header.Get("Location"), "sign-in")) {
				t.Errorf("%s %s as %s: %d, want allowed", rt.Method, rt.Path, role, p.status)
			}
			if !allowed && p.status != 403 {
				t.Errorf("%s %s as %s: %d, want 403", rt.Method, rt.Path, role, p.status)
			}
		}
		path := fill(rt.Path, pid)
		var p page
		if rt.Method == "GET" {
			p = outsider.get(path)
		} else {
			p = outsider.post(path, url.Values{})
		}
		if p.status != 404 {
			t.Errorf("%s %s by another project's owner: %d, want 404", rt.Method, rt.Path, p.status)
		}
		if rt.Method == "GET" {
			p = anon.get(path)
			if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/sign-in") {
				t.Errorf("GET %s signed out: %d %s", rt.Path, p.status, p.header.Get("Location"))
			}
		} else {
			p = anon.do("POST", path, url.Values{"csrf": {"x"}}, nil)
			if p.status != http.StatusSeeOther && p.status != 403 {
				t.Errorf("POST %s signed out: %d", rt.Path, p.status)
			}
		}
	}
	// The navigation shows only what the role may open.
	p := browsers[account.Auditor].get("/console/p/" + pid + "/")
	if strings.Contains(p.body, "/keys\"") || strings.Contains(p.body, "/members\"") {
		t.Error("the auditor's navigation links to keys or members")
	}
	// An auditor's membership past its end date opens nothing.
	ctx := context.Background()
	addr := email("late-auditor")
	end := e.clock.Now().AddDate(0, 0, -1)
	tok, _, err := e.acc.Invite(ctx, pid, addr, account.Auditor, []int{2024}, &end, "", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.acc.Accept(ctx, tok, addr, password, password, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	late := e.browser()
	late.signIn(addr, password)
	if p := late.get("/console/p/" + pid + "/"); p.status != 404 {
		t.Errorf("ended auditor: %d, want 404", p.status)
	}
}

func TestKeys(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid, other := e.project(), e.project()
	b, u := e.member(pid, account.Developer)
	path := "/console/p/" + pid + "/keys"
	p := b.get(path)
	formID := regexp.MustCompile(`id="create-key">\s*<input type="hidden" name="csrf" value="[^"]+">\s*<input type="hidden" name="form_id" value="([^"]+)"`).FindStringSubmatch(p.body)
	if formID == nil {
		t.Fatalf("no one-time form id: %s", p.body)
	}
	// Field-exact errors from the rules the command line uses.
	if p := b.post(path, url.Values{"name": {"x"}, "expires": {"90d"}}); p.status != 422 || !strings.Contains(p.body, "scopes: at least one scope is required") {
		t.Errorf("no scope: %d", p.status)
	}
	if p := b.post(path, url.Values{"name": {"x"}, "scopes": {"invoices:read"}, "expires": {"7d"}}); p.status != 422 || !strings.Contains(p.body, "expires: expiry must be 30d, 90d, 365d or never") {
		t.Errorf("bad expiry: %d", p.status)
	}
	form := url.Values{"name": {"shop"}, "scopes": {"orders:write", "invoices:read"}, "expires": {"90d"}, "form_id": {formID[1]}}
	p = b.post(path, form)
	m := regexp.MustCompile(`<code id="new-key">(o2i_[0-9A-Za-z]{40})</code>`).FindStringSubmatch(p.body)
	if p.status != 200 || m == nil {
		t.Fatalf("create: %d %s", p.status, p.body)
	}
	key := m[1]
	auth := apikey.NewAuthenticator(e.pool)
	pr, err := auth.Authenticate(context.Background(), key)
	if err != nil || pr.ProjectID != pid {
		t.Fatalf("the new key does not authenticate for its project: %v %+v", err, pr)
	}
	// Shown once: neither the listing nor the same form again shows it.
	if p := b.get(path); strings.Contains(p.body, key) || !strings.Contains(p.body, "never used") || !strings.Contains(p.body, key[:12]) {
		t.Errorf("listing: secret shown or prefix / never used missing")
	}
	if p := b.post(path, form); p.status != 409 || strings.Contains(p.body, "new-key") {
		t.Errorf("resubmitted form: %d", p.status)
	}
	ks, _ := apikey.List(context.Background(), e.pool, pid, time.Now())
	if len(ks) != 1 || ks[0].Name != "shop" || len(ks[0].Scopes) != 2 || ks[0].ExpiresAt == nil {
		t.Fatalf("keys after create: %+v", ks)
	}
	// Another project's key cannot be revoked through this project.
	foreign := testenv.Key(t, e.pool, other, "invoices:read")
	fi, _ := apikey.List(context.Background(), e.pool, other, time.Now())
	if p := b.post(path+"/"+fi[0].ID+"/revoke", nil); p.status != 404 {
		t.Errorf("revoke another project's key: %d, want 404", p.status)
	}
	if _, err := auth.Authenticate(context.Background(), foreign); err != nil {
		t.Errorf("another project's key was revoked: %v", err)
	}
	// Rotate: a new secret, the old key revoked.
	p = b.post(path+"/"+ks[0].ID+"/rotate", nil)
	m2 := regexp.MustCompile(`<code id="new-key">(o2i_[0-9A-Za-z]{40})</code>`).FindStringSubmatch(p.body)
	if p.status != 200 || m2 == nil || m2[1] == key {
		t.Fatalf("rotate: %d", p.status)
	}
	ks, _ = apikey.List(context.Background(), e.pool, pid, time.Now())
	if len(ks) != 2 {
		t.Fatalf("%d keys after rotation", len(ks))
	}
	var newID string
	for _, k := range ks {
		if k.ID == ks[0].ID && k.RevokedAt != nil {
			t.Error("the new key is revoked")
		}
		if k.RevokedAt == nil {
			newID = k.ID
			if k.Name != "shop" || len(k.Scopes) != 2 || k.ExpiresAt == nil {
				t.Errorf("rotated key %+v keeps not name, scopes and lifetime", k)
			}
		}
	}
	// Revoke.
	if p := b.post(path+"/"+newID+"/revoke", nil); p.status != http.StatusSeeOther {
		t.Errorf("revoke: %d", p.status)
	}
	ks, _ = apikey.List(context.Background(), e.pool, pid, time.Now())
	for _, k := range ks {
		if k.RevokedAt == nil {
			t.Errorf("key %s not revoked", k.Prefix)
		}
	}
	// Each change is in the log, with who did it.
	es, _, err := e.acc.AuditLog(context.Background(), pid, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, en := range es {
		if en.ActorEmail == u.Email {
			seen[en.Action] = true
		}
	}
	for _, a := range []string{"key.create", "key.rotate", "key.revoke"} {
		if !seen[a] {
			t.Errorf("no %s entry by %s in the log", a, u.Email)
		}
	}
}

func TestMembersAndAuditLog(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	owner, ou := e.member(pid, account.Owner)
	path := "/console/p/" + pid + "/members"
	addr := email("accountant")
	if p := owner.post(path, url.Values{"email": {"not-an-address"}, "role": {"accountant"}}); p.status != 422 || !strings.Contains(p.body, "email: not an e-mail address") {
		t.Errorf("bad e-mail: %d", p.status)
	}
	if p := owner.post(path, url.Values{"email": {addr}, "role": {"auditor"}, "auditYears": {"2025"}}); p.status != 422 || !strings.Contains(p.body, "endsOn: an auditor&#39;s membership needs an end date") {
		t.Errorf("auditor without end date: %d %s", p.status, p.body)
	}
	if p := owner.post(path, url.Values{"email": {addr}, "role": {"accountant"}}); p.status != http.StatusSeeOther {
		t.Fatalf("invite: %d %s", p.status, p.body)
	}
	// The e-mail with the link reached the SMTP sink.
	var link string
	testenv.Eventually(t, 10*time.Second, "the invitation e-mail", func() bool {
		for _, m := range testenv.Mails(t, addr) {
			if l := regexp.MustCompile(`http://\S+/console/invite/\S+`).FindString(m.Text); l != "" {
				link = l
			}
		}
		return link != ""
	})
	invitee := e.browser()
	p := invitee.do("POST", strings.TrimPrefix(link, e.srv.URL), url.Values{"email": {addr}, "password": {password}, "password_confirm": {password}}, nil)
	if p.status != http.StatusSeeOther {
		t.Fatalf("accept: %d", p.status)
	}
	ms, _ := e.acc.Members(context.Background(), pid)
	var uid string
	for _, m := range ms {
		if m.Email == addr {
			uid = m.UserID
		}
	}
	if uid == "" {
		t.Fatal("the invitee is no member")
	}
	if p := owner.post(path+"/"+uid+"/role", url.Values{"role": {"developer"}}); p.status != http.StatusSeeOther {
		t.Errorf("change role: %d", p.status)
	}
	if m, _ := e.acc.Membership(context.Background(), uid, pid, time.Now()); m.Role != account.Developer {
		t.Errorf("role %s, want developer", m.Role)
	}
	// An auditor names years and an end date.
	if p := owner.post(path+"/"+uid+"/role", url.Values{"role": {"auditor"}}); p.status != 422 || !strings.Contains(p.body, "auditYears: an auditor") {
		t.Errorf("auditor without years: %d", p.status)
	}
	if p := owner.post(path+"/"+uid+"/role", url.Values{"role": {"auditor"}, "auditYears": {"2025, 2024"}, "endsOn": {"2099-12-31"}}); p.status != http.StatusSeeOther {
		t.Errorf("to auditor: %d %s", p.status, p.body)
	}
	if m, _ := e.acc.Membership(context.Background(), uid, pid, time.Now()); m.Role != account.Auditor || len(m.AuditYears) != 2 || m.AuditYears[0] != 2024 || m.EndsOn == nil {
		t.Errorf("auditor membership %+v", m)
	}
	if p := owner.get(path); !strings.Contains(p.body, `value="2024,2025"`) || !strings.Contains(p.body, `value="2099-12-31"`) {
		t.Error("the members page does not show the auditor's years and end date in the form")
	}
	if p := owner.post(path+"/"+uid+"/role", url.Values{"role": {"developer"}}); p.status != http.StatusSeeOther {
		t.Errorf("back to developer: %d", p.status)
	}
	// The last owner stays.
	if p := owner.post(path+"/"+ou.ID+"/role", url.Values{"role": {"accountant"}}); p.status != 422 || !strings.Contains(p.body, "role: the project&#39;s last owner") {
		t.Errorf("demote the last owner: %d", p.status)
	}
	if p := owner.post(path+"/"+ou.ID+"/remove", nil); p.status != 422 {
		t.Errorf("remove the last owner: %d", p.status)
	}
	if p := owner.post(path+"/"+uid+"/remove", nil); p.status != http.StatusSeeOther {
		t.Errorf("remove: %d", p.status)
	}
	if p := invitee.get("/console/p/" + pid + "/"); p.status != 404 {
		t.Errorf("a removed member opens the project: %d", p.status)
	}
	// An open invitation is listed and can be withdrawn: its link dies.
	later := email("later")
	if p := owner.post(path, url.Values{"email": {later}, "role": {"developer"}}); p.status != http.StatusSeeOther {
		t.Fatalf("invite: %d", p.status)
	}
	var laterLink string
	testenv.Eventually(t, 10*time.Second, "the second invitation e-mail", func() bool {
		for _, m := range testenv.Mails(t, later) {
			laterLink = regexp.MustCompile(`http://\S+/console/invite/\S+`).FindString(m.Text)
		}
		return laterLink != ""
	})
	p = owner.get(path)
	w := regexp.MustCompile(`action="(/console/p/[^/]+/invitations/[0-9a-f]{64}/withdraw)"`).FindStringSubmatch(p.body)
	if !strings.Contains(p.body, later) || w == nil {
		t.Fatalf("the open invitation is not listed with a withdraw form")
	}
	if p := owner.post(w[1], nil); p.status != http.StatusSeeOther {
		t.Errorf("withdraw: %d", p.status)
	}
	if p := e.browser().get(strings.TrimPrefix(laterLink, e.srv.URL)); p.status != 404 {
		t.Errorf("a withdrawn invitation's link: %d, want 404", p.status)
	}
	if p := owner.post(w[1], nil); p.status != 404 {
		t.Errorf("withdraw again: %d, want 404", p.status)
	}
	// The owner's change log shows every change with before and after.
	p = owner.get("/console/p/" + pid + "/audit")
	for _, want := range []string{"member.invite", "invitation.accept", "member.role", "member.remove", "member.withdraw", ou.Email, "&#34;developer&#34;"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("change log lacks %s", want)
		}
	}
	// The log is append-only.
	if _, err := e.pool.Exec(context.Background(), `UPDATE console_audit_log SET action = 'x' WHERE project_id = $1`, pid); err == nil {
		t.Error("an entry of the change log was updated")
	}
	if _, err := e.pool.Exec(context.Background(), `DELETE FROM console_audit_log WHERE project_id = $1`, pid); err == nil {
		t.Error("an entry of the change log was deleted")
	}
}

func TestPasswordReset(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, u := e.member(pid, account.Accountant)
	anon := e.browser()
	// The same answer for a known and an unknown address.
	known := anon.do("POST", "/console/reset", url.Values{"email": {u.Email}}, nil)
	unknown := anon.do("POST", "/console/reset", url.Values{"email": {email("nobody")}}, nil)
	if known.status != 200 || unknown.status != 200 || !strings.Contains(known.body, "If the address has an account") || !strings.Contains(unknown.body, "If the address has an account") {
		t.Errorf("reset request: %d / %d", known.status, unknown.status)
	}
	var link string
	testenv.Eventually(t, 10*time.Second, "the reset e-mail", func() bool {
		for _, m := range testenv.Mails(t, u.Email) {
			if l := regexp.MustCompile(`http://\S+/console/reset/\S+`).FindString(m.Text); l != "" {
				link = l
			}
		}
		return link != ""
	})
	path := strings.TrimPrefix(link, e.srv.URL)
	const newPassword = "another long password"
	if p := anon.do("POST", path, url.Values{"password": {newPassword}, "password_confirm": {newPassword}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("reset: %d %s", p.status, p.body)
	}
	if p := b.get("/console/p/" + pid + "/"); p.status != http.StatusSeeOther {
		t.Errorf("a session from before the reset lives on: %d", p.status)
	}
	if p := e.browser().signIn(u.Email, password); p.status != 401 {
		t.Errorf("old password: %d", p.status)
	}
	if p := e.browser().signIn(u.Email, newPassword); p.status != http.StatusSeeOther {
		t.Errorf("new password: %d", p.status)
	}
	if p := anon.get(path); p.status != 404 {
		t.Errorf("used reset link: %d", p.status)
	}
}

func TestTasksPage(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, _ := e.member(pid, account.Accountant)
	path := "/console/p/" + pid + "/tasks"
	if p := b.get(path); p.status != 200 || !strings.Contains(p.body, "No tasks.") {
		t.Errorf("tasks: %d", p.status)
	}
	// 101 open tasks of two causes and one resolved: two pages.
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for i := range 101 {
		kind := "seller_data_missing"
		if i%2 == 1 {
			kind = "xrechnung_contact_phone_missing"
		}
		order := "ORD-" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		if _, err := e.pool.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details, created_at) VALUES ($1, $2, $3, $4, jsonb_build_object('orderNo', $4::text), $5)`,
			uuid.New(), pid, kind, order, base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details, status, resolved_at) VALUES ($1, $2, 'payment_without_order', 'pi_x', '{}', 'resolved', now())`, uuid.New(), pid); err != nil {
		t.Fatal(err)
	}
	p := b.get(path)
	for _, want := range []string{"<code>seller_data_missing</code>", `id="held-seller_data_missing">50<`, `id="held-xrechnung_contact_phone_missing">50<`, "ORD-000", "ORD-099"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("first page lacks %s", want)
		}
	}
	if strings.Contains(p.body, "ORD-100") || strings.Contains(p.body, "payment_without_order") {
		t.Error("first page shows the 101st or a resolved task")
	}
	next := regexp.MustCompile(`<a id="next" href="([^"]+)"`).FindStringSubmatch(p.body)
	if next == nil {
		t.Fatal("no link to the next page")
	}
	p = b.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if p.status != 200 || !strings.Contains(p.body, "ORD-100") || strings.Contains(p.body, "ORD-099") || strings.Contains(p.body, `id="next"`) {
		t.Errorf("second page: %d", p.status)
	}
	if p := b.get(path + "?status=resolved"); !strings.Contains(p.body, "payment_without_order") || strings.Contains(p.body, "ORD-000") {
		t.Error("resolved tasks")
	}
	// A cursor of another project is refused.
	other := e.project()
	ob, _ := e.member(other, account.Owner)
	if p := ob.get("/console/p/" + other + "/tasks?" + strings.SplitN(strings.ReplaceAll(next[1], "&amp;", "&"), "?", 2)[1]); p.status == 200 {
		t.Error("another project's cursor is accepted")
	}
	if p := b.get(path + "?status=bogus"); p.status != 422 || !strings.Contains(p.body, "status must be one of open, resolved") {
		t.Errorf("bad status: %d", p.status)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// Behind a trusted proxy, failed sign-ins count per forwarded client address.
func TestSignInLimitBehindProxy(t *testing.T) {
	e := newEnvWith(t, "", time.Time{}, func(c *console.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	pid := e.project()
	_, u := e.member(pid, account.Developer)
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	for range console.MaxFailuresPerIP {
		e.browser().do("POST", "/console/sign-in", url.Values{"email": {email("spray")}, "password": {"x"}}, from("203.0.113.7"))
	}
	if p := e.browser().do("POST", "/console/sign-in", url.Values{"email": {u.Email}, "password": {password}}, from("203.0.113.7")); p.status != 429 {
		t.Errorf("the flooding client: %d, want 429", p.status)
	}
	if p := e.browser().do("POST", "/console/sign-in", url.Values{"email": {u.Email}, "password": {password}}, from("198.51.100.9")); p.status != http.StatusSeeOther {
		t.Errorf("another client behind the same proxy: %d, want 303", p.status)
	}
}

// An invitation for an address that has an account asks for its password,
// not a new one.
func TestInvitationOfExistingAccount(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	a, b := e.project(), e.project()
	_, u := e.member(a, account.Developer)
	tok, _, err := e.acc.Invite(context.Background(), b, u.Email, account.Accountant, nil, nil, "", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	br := e.browser()
	p := br.get(account.InvitationPath(tok))
	if p.status != 200 || !strings.Contains(p.body, "You have an account") || strings.Contains(p.body, "password_confirm") {
		t.Fatalf("invitation of an existing account: %d", p.status)
	}
	p = br.do("POST", account.InvitationPath(tok), url.Values{"email": {u.Email}, "password": {"not the password at all"}}, nil)
	if p.status != 422 || !strings.Contains(p.body, "password: this account exists already") {
		t.Errorf("wrong password: %d", p.status)
	}
	p = br.do("POST", account.InvitationPath(tok), url.Values{"email": {u.Email}, "password": {password}}, nil)
	if p.status != http.StatusSeeOther {
		t.Fatalf("accept: %d %s", p.status, p.body)
	}
	home := br.get("/console/")
	if !strings.Contains(home.body, "/console/p/"+a+"/") || !strings.Contains(home.body, "/console/p/"+b+"/") {
		t.Error("the start page does not list both projects")
	}
}

// Every page an owner opens renders in German and English, with no text
// key left untranslated.
func TestPagesInBothLanguages(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, _ := e.member(pid, account.Owner)
	testenv.Key(t, e.pool, pid, "invoices:read")
	raw := regexp.MustCompile(`>[^<]*\b(?:app|lang|nav|keys|members|tasks|audit|role|error|signin|signout|invite|reset|projects|overview|orders|order|invoices|invoice|kind|timeline|waiting|activity|exports|archive)\.[a-z_.]+`)
	paths := []string{"/console/", "/console/sign-in", "/console/reset"}
	for _, rt := range console.Routes() {
		// Pages of one record (a placeholder, or the order's ?no=) are
		// opened with records in their own tests; downloads are no pages.
		if rt.Method == "GET" && !strings.Contains(strings.TrimPrefix(rt.Path, "/console/p/{project}"), "{") && !strings.HasSuffix(rt.Path, "/order") &&
			!strings.Contains(rt.Path, "/exports/") && !strings.HasSuffix(rt.Path, "/archive/export") {
			paths = append(paths, strings.ReplaceAll(rt.Path, "{project}", pid))
		}
	}
	for _, lang := range []string{"de", "en"} {
		for _, path := range paths {
			p := b.do("GET", path, nil, map[string]string{"Accept-Language": lang})
			if p.status != 200 && !(path == "/console/sign-in" && p.status == http.StatusSeeOther) {
				t.Errorf("%s in %s: %d", path, lang, p.status)
				continue
			}
			if m := raw.FindString(p.body); m != "" {
				t.Errorf("%s in %s shows a text key: %s", path, lang, m)
			}
			if p.status == 200 && !strings.Contains(p.body, `<html lang="`+lang+`">`) {
				t.Errorf("%s is not in %s", path, lang)
			}
		}
	}
}
