package console_test

import (
	"bytes"
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/console"
	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// settingsPath is a project's settings page or one of its forms.
func settingsPath(pid, form string) string {
	if form == "" {
		return "/console/p/" + pid + "/settings"
	}
	return "/console/p/" + pid + "/settings/" + form
}

func getProject(t *testing.T, e *env, pid string) project.Project {
	t.Helper()
	p, err := project.Get(context.Background(), e.pool, pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The role × setting table over HTTP: a valid change of every group by
// every role is saved or refused with 403.
func TestSettingsRoleMatrix(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	browsers := map[account.Role]*browser{}
	for _, r := range account.Roles {
		browsers[r], _ = e.member(pid, r)
	}
	for _, g := range project.Groups {
		for _, role := range account.Roles {
			form := url.Values{}
			var check func(project.Project) bool
			tag := string(role) + "-" + g
			switch g {
			case project.GroupSeller:
				form.Set("sellerName", "Seller "+tag)
				check = func(p project.Project) bool { return p.Settings.SellerName == "Seller "+tag }
			case project.GroupBank:
				form.Set("sellerBic", "BIC"+strings.ToUpper(string(role)[:3]))
				form.Set("password", password)
				check = func(p project.Project) bool { return p.Settings.SellerBIC == "BIC"+strings.ToUpper(string(role)[:3]) }
			case project.GroupContact:
				form.Set("contactName", "Contact "+tag)
				check = func(p project.Project) bool { return p.Settings.ContactName == "Contact "+tag }
			case project.GroupAccounting:
				form.Set("datevClient", map[account.Role]string{account.Owner: "11", account.Developer: "12", account.Accountant: "13", account.Auditor: "14"}[role])
				want := map[account.Role]int{account.Owner: 11, account.Developer: 12, account.Accountant: 13, account.Auditor: 14}[role]
				check = func(p project.Project) bool { return p.Settings.DATEVClient == want }
			case project.GroupPayment:
				form.Set("invoiceFirstGateways", "manual,"+string(role))
				check = func(p project.Project) bool {
					return strings.Join(p.Settings.InvoiceFirstGateways, ",") == "manual,"+string(role)
				}
			case project.GroupProvider:
				form.Set("stripeApiKey", "rk_test_"+tag)
				form.Set("password", password)
				check = func(p project.Project) bool { return p.Settings.StripeAPIKey == "rk_test_"+tag }
			case project.GroupLive:
				mode := getProject(t, e, pid).TestMode
				form.Set("testMode", map[bool]string{true: "false", false: "true"}[mode])
				check = func(p project.Project) bool { return p.TestMode != mode }
			}
			a, _ := account.SettingAction(g)
			p := browsers[role].post(settingsPath(pid, g), form)
			saved := check(getProject(t, e, pid))
			if account.Allows(role, a) {
				if p.status != http.StatusSeeOther || !saved {
					t.Errorf("%s changing %s: %d (saved %v), want 303 and saved: %s", role, g, p.status, saved, p.body)
				}
			} else if p.status != http.StatusForbidden || saved {
				t.Errorf("%s changing %s: %d (saved %v), want 403 and nothing saved", role, g, p.status, saved)
			}
		}
	}
	// Every role that may view the settings sees the form field names as
	// the settings' JSON names; a role without the right sees no form.
	p := browsers[account.Accountant].get(settingsPath(pid, ""))
	if p.status != 200 || !strings.Contains(p.body, `name="sellerName"`) || strings.Contains(p.body, `action="`+settingsPath(pid, "bank")+`"`) {
		t.Errorf("the accountant's settings page: %d, seller form and no bank form expected", p.status)
	}
	if p := browsers[account.Auditor].get(settingsPath(pid, "")); p.status != 403 {
		t.Errorf("the auditor's settings page: %d, want 403", p.status)
	}
}

var fieldErrorRe = regexp.MustCompile(`<p class="field-error">([^<]*)</p>`)

// The console refuses a setting with the message internal/project gives
// the command line, next to the field.
func TestSettingsFieldErrorsAreTheCommandLines(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, _ := e.member(pid, account.Owner)
	for _, tc := range []struct{ group, field, value string }{
		{"payment", "paymentTermDays", "400"},
		{"payment", "paymentTermDays", "ten"},
		{"accounting", "datevConsultant", "5"},
		{"accounting", "datevClient", "100000"},
		{"accounting", "accountOverrides", "revenue19=84000"},
		{"accounting", "accountOverrides", "revenue19"},
		{"accounting", "chartOfAccounts", "SKR99"},
		{"seller", "invoiceNumberPattern", "RE-{NOPE}"},
		{"seller", "ossRegistered", "maybe"},
		{"contact", "mailFromName", "Shop\r\nBcc: victim@example.com"},
		{"contact", "mailFromName", strings.Repeat("x", project.MaxMailFromName+1)},
		{"contact", "mailReplyTo", "Buchhaltung <b@example.com>"},
		{"contact", "mailReplyTo", "nobody"},
	} {
		_, err := project.ParseChanges(map[string]string{tc.field: tc.value})
		want := apperr.As(err)
		if want == nil || want.Field != tc.field {
			t.Fatalf("%s=%s: the rules give %v, want an error naming %s", tc.field, tc.value, err, tc.field)
		}
		p := b.post(settingsPath(pid, tc.group), url.Values{tc.field: {tc.value}})
		if p.status != http.StatusUnprocessableEntity {
			t.Errorf("%s=%s: %d, want 422", tc.field, tc.value, p.status)
			continue
		}
		// The message stands in the field's place, right after its input.
		re := regexp.MustCompile(`(?s)id="` + tc.field + `"[^>]*>.*?<p class="field-error">([^<]*)</p>`)
		m := re.FindStringSubmatch(p.body)
		if m == nil || html.UnescapeString(m[1]) != want.Message {
			t.Errorf("%s=%s: console shows %q next to the field, the command line's message is %q", tc.field, tc.value, m, want.Message)
		}
		if !strings.Contains(html.UnescapeString(p.body), tc.field+": "+want.Message) {
			t.Errorf("%s=%s: the page's error does not name the field", tc.field, tc.value)
		}
	}
	_ = fieldErrorRe
}

// The invoice e-mail's sender (its display name and reply address) is set
// on the contact form by an accountant, shown back, recorded in the change
// log with before and after; a refused value changes nothing.
func TestSettingsMailSender(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, _ := e.member(pid, account.Accountant)
	name := "Müller & Söhne \"Rechnungen\""
	p := b.post(settingsPath(pid, "contact"), url.Values{"mailFromName": {name}, "mailReplyTo": {"buchhaltung@example.com"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("save the sender: %d %s", p.status, p.body)
	}
	if s := getProject(t, e, pid).Settings; s.MailFromName != name || s.MailReplyTo != "buchhaltung@example.com" {
		t.Fatalf("stored %q, %q", s.MailFromName, s.MailReplyTo)
	}
	page := b.get(settingsPath(pid, ""))
	if !strings.Contains(page.body, `name="mailFromName" value="`+html.EscapeString(name)) && !strings.Contains(html.UnescapeString(page.body), `name="mailFromName" value="`+name) {
		t.Errorf("the settings page does not show the sender name back")
	}
	var before, after string
	if err := e.pool.QueryRow(context.Background(), `SELECT before->>'mailFromName', after->>'mailFromName' FROM console_audit_log
		WHERE project_id = $1 AND action = 'settings.contact' ORDER BY at DESC LIMIT 1`, pid).Scan(&before, &after); err != nil || before != "" || after != name {
		t.Errorf("change log: before %q, after %q (%v), want \"\" → %q", before, after, err, name)
	}
	p = b.post(settingsPath(pid, "contact"), url.Values{"mailFromName": {"Evil\nBcc: x@example.com"}})
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(p.body), "mailFromName: the sender name must not contain control characters") {
		t.Errorf("a sender name with a line break: %d", p.status)
	}
	if s := getProject(t, e, pid).Settings; s.MailFromName != name {
		t.Errorf("a refused sender name was stored: %q", s.MailFromName)
	}
}

// logCapture collects the service's log lines written while a test runs.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCapture) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func captureLogs(t *testing.T) *logCapture {
	t.Helper()
	l := &logCapture{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return l
}

// The bank account and the provider's connection: owners only, with the
// password again; every owner gets an e-mail; the provider's secrets are
// write-only (never in a page, the change log or the logs).
func TestGuardedSettings(t *testing.T) {
	logs := captureLogs(t)
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	owner, ownerUser := e.member(pid, account.Owner)
	_, second := e.member(pid, account.Owner)
	var bodies []string
	keep := func(p page) page { bodies = append(bodies, p.body); return p }

	// Wrong or missing password: refused at the password field, nothing changed.
	before := getProject(t, e, pid).Settings.SellerIBAN
	for _, pw := range []string{"", "not the password at all"} {
		p := keep(owner.post(settingsPath(pid, "bank"), url.Values{"sellerIban": {"DE89370400440532013000"}, "password": {pw}}))
		if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "password: the password is wrong") {
			t.Errorf("bank change with password %q: %d", pw, p.status)
		}
	}
	if before == "DE89370400440532013000" {
		t.Fatal("the test's IBAN is the project's already")
	}
	if got := getProject(t, e, pid).Settings.SellerIBAN; got != before {
		t.Fatalf("the IBAN changed without the password: %s", got)
	}
	// The right password: saved, logged, and every owner is told.
	p := keep(owner.post(settingsPath(pid, "bank"), url.Values{"sellerIban": {"DE89370400440532013000"}, "sellerBic": {"COBADEFFXXX"}, "password": {password}}))
	if p.status != http.StatusSeeOther {
		t.Fatalf("bank change: %d %s", p.status, p.body)
	}
	if s := getProject(t, e, pid).Settings; s.SellerIBAN != "DE89370400440532013000" || s.SellerBIC != "COBADEFFXXX" {
		t.Errorf("bank change not saved: %+v", s)
	}
	if strings.Contains(logs.String(), "not told") {
		t.Errorf("owners not told: %s", logs.String())
	}
	for _, to := range []string{ownerUser.Email, second.Email} {
		testenv.Eventually(t, 10*time.Second, "the owner "+to+" is told of the bank change", func() bool {
			for _, m := range testenv.Mails(t, to) {
				if strings.Contains(m.Subject, "bank account") && strings.Contains(m.Text, ownerUser.Email) {
					return true
				}
			}
			return false
		})
	}

	// The provider's secrets: set, shown as "set", never again.
	const hook, key = "whsec_never-shown-again-4711", "rk_test_never-shown-again-0815"
	p = keep(owner.post(settingsPath(pid, "provider"), url.Values{"stripeWebhookSecret": {hook}, "stripeApiKey": {key}, "password": {password}}))
	if p.status != http.StatusSeeOther {
		t.Fatalf("provider change: %d %s", p.status, p.body)
	}
	if s := getProject(t, e, pid).Settings; s.StripeWebhookSecret != hook || s.StripeAPIKey != key {
		t.Error("provider secrets not saved")
	}
	p = keep(owner.get(settingsPath(pid, "")))
	if !regexp.MustCompile(`id="stripeApiKey-state">set<`).MatchString(p.body) || !strings.Contains(p.body, `id="webhook-url">`+e.srv.URL+`/v1/webhooks/stripe/`+pid+`<`) {
		t.Errorf("settings page: the key's state or the webhook URL is missing")
	}
	// An empty replace field keeps the secret.
	keep(owner.post(settingsPath(pid, "provider"), url.Values{"stripeWebhookSecret": {""}, "stripeApiKey": {""}, "password": {password}}))
	if s := getProject(t, e, pid).Settings; s.StripeWebhookSecret != hook {
		t.Error("an empty replace field cleared the secret")
	}
	// A refused provider form does not echo the typed secret.
	keep(owner.post(settingsPath(pid, "provider"), url.Values{"stripeApiKey": {key + "-2"}, "password": {"wrong password here"}}))
	audit := keep(owner.get("/console/p/" + pid + "/audit"))
	if !strings.Contains(audit.body, "settings.provider") || !strings.Contains(audit.body, "replaced") || !strings.Contains(audit.body, "settings.bank") {
		t.Errorf("the change log lacks the guarded changes")
	}
	var raw []byte
	if err := e.pool.QueryRow(context.Background(), `SELECT string_agg(coalesce(before::text, '') || coalesce(after::text, ''), ' ')::bytea FROM console_audit_log WHERE project_id = $1`, pid).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{hook, key, "never-shown"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the change log holds a secret")
		}
		for _, b := range bodies {
			if strings.Contains(b, secret) {
				t.Errorf("a page shows a secret")
			}
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds a secret")
		}
	}
	// The accountant may not change the bank account, even with a password.
	acc, _ := e.member(pid, account.Accountant)
	if p := acc.post(settingsPath(pid, "bank"), url.Values{"sellerIban": {"DE02500105170137075030"}, "password": {password}}); p.status != 403 {
		t.Errorf("accountant bank change: %d, want 403", p.status)
	}
}

func TestTestModeViewAndReset(t *testing.T) {
	e := newEnvWith(t, "", time.Time{}, func(c *console.Config) {
		s3 := testenv.S3(t)
		arch := archive.New(s3, testenv.Env("O2I_S3_BUCKET")).WithTest(archive.NewTest(s3, testenv.Env("O2I_S3_TEST_BUCKET")))
		cmds := command.New(testenv.Pool(t))
		rdb := testenv.Redis(t)
		c.ResetTestData = func(ctx context.Context, id string) (any, error) { return cmds.ResetTestData(ctx, arch, rdb, id) }
	})
	pid := e.project()
	dev, _ := e.member(pid, account.Developer)
	name := getProject(t, e, pid).Name
	overview := "/console/p/" + pid + "/"
	// Until the session chooses, it looks at the data of the project's mode
	// (test here); the switch then holds.
	if p := dev.get(overview); !strings.Contains(p.body, `id="view-mode" class="mode-test"`) {
		t.Errorf("a new session of a project in test mode does not show test data in the header")
	}
	if p := dev.post("/console/p/"+pid+"/view", url.Values{"view": {"live"}, "next": {overview}}); p.status != http.StatusSeeOther {
		t.Errorf("switch to live data: %d", p.status)
	}
	if p := dev.get(overview); !strings.Contains(p.body, `id="view-mode" class="mode-live"`) {
		t.Errorf("the header does not show live data after the switch")
	}
	if p := dev.post("/console/p/"+pid+"/view", url.Values{"view": {"test"}, "next": {overview}}); p.status != http.StatusSeeOther || p.header.Get("Location") != overview {
		t.Errorf("switch to test data: %d %s", p.status, p.header.Get("Location"))
	}
	if p := dev.get(overview); !strings.Contains(p.body, `id="view-mode" class="mode-test"`) {
		t.Errorf("the header does not show test data after the switch")
	}
	for _, typed := range []string{"", "yes", strings.ToUpper(name), name + " "} {
		p := dev.post("/console/p/"+pid+"/test-data/reset", url.Values{"confirm": {typed}})
		if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "confirm: type the project") {
			t.Errorf("reset confirmed with %q: %d", typed, p.status)
		}
	}
	var n int
	_ = e.pool.QueryRow(context.Background(), `SELECT count(*) FROM console_audit_log WHERE project_id = $1 AND action = 'testdata.reset'`, pid).Scan(&n)
	if n != 0 {
		t.Fatalf("a refused reset was logged")
	}
	if p := dev.post("/console/p/"+pid+"/test-data/reset", url.Values{"confirm": {name}}); p.status != http.StatusSeeOther {
		t.Fatalf("reset with the exact name: %d %s", p.status, p.body)
	}
	_ = e.pool.QueryRow(context.Background(), `SELECT count(*) FROM console_audit_log WHERE project_id = $1 AND action = 'testdata.reset'`, pid).Scan(&n)
	if n != 1 {
		t.Errorf("the reset was logged %d times", n)
	}
	acc, _ := e.member(pid, account.Accountant)
	if p := acc.post("/console/p/"+pid+"/test-data/reset", url.Values{"confirm": {name}}); p.status != 403 {
		t.Errorf("accountant reset: %d, want 403", p.status)
	}
}

var (
	totpSecretRe = regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`)
	recoveryRe   = regexp.MustCompile(`<li><code>([a-z0-9-]+)</code></li>`)
)

func codeAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTOTP(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, u := e.member(pid, account.Owner)
	// Enrol: the secret is shown once with its URI; a wrong code is refused.
	p := b.post("/console/account/totp/start", nil)
	m := totpSecretRe.FindStringSubmatch(p.body)
	if p.status != 200 || m == nil || !strings.Contains(p.body, "otpauth://totp/") || !strings.Contains(p.body, `src="data:image/png;base64,`) {
		t.Fatalf("enrolment page: %d", p.status)
	}
	secret := m[1]
	if p := b.post("/console/account/totp/confirm", url.Values{"code": {"000000"}}); p.status != 422 || !strings.Contains(p.body, "code: the code is wrong") {
		t.Errorf("wrong first code: %d", p.status)
	}
	p = b.post("/console/account/totp/confirm", url.Values{"code": {codeAt(t, secret, e.clock.Now())}})
	codes := recoveryRe.FindAllStringSubmatch(p.body, -1)
	if p.status != 200 || len(codes) != 10 {
		t.Fatalf("confirm: %d with %d recovery codes", p.status, len(codes))
	}
	if p := b.get("/console/account/security"); strings.Contains(p.body, secret) || strings.Contains(p.body, codes[0][1]) {
		t.Error("the secret or a recovery code is shown again")
	}
	// Sign-in asks for the code; the password alone opens nothing.
	e.clock.Add(time.Minute)
	b2 := e.browser()
	p = b2.signIn(u.Email, password)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/sign-in/code") {
		t.Fatalf("sign-in with a second factor: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b2.get("/console/p/" + pid + "/"); p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "sign-in") {
		t.Errorf("a project page before the code: %d", p.status)
	}
	if p := b2.do("POST", "/console/sign-in/code", url.Values{"code": {"123456"}}, nil); p.status != 401 {
		t.Errorf("wrong code: %d", p.status)
	}
	code := codeAt(t, secret, e.clock.Now())
	if p := b2.do("POST", "/console/sign-in/code", url.Values{"code": {code}, "next": {"/console/p/" + pid + "/"}}, nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/p/"+pid+"/" {
		t.Fatalf("right code: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b2.get("/console/p/" + pid + "/"); p.status != 200 {
		t.Errorf("project page after the code: %d", p.status)
	}
	// The same code counts once.
	b3 := e.browser()
	b3.signIn(u.Email, password)
	if p := b3.do("POST", "/console/sign-in/code", url.Values{"code": {code}}, nil); p.status != 401 {
		t.Errorf("a code used again: %d, want 401", p.status)
	}
	// A recovery code works once.
	if p := b3.do("POST", "/console/sign-in/code", url.Values{"code": {codes[3][1]}}, nil); p.status != http.StatusSeeOther {
		t.Errorf("recovery code: %d", p.status)
	}
	b4 := e.browser()
	b4.signIn(u.Email, password)
	if p := b4.do("POST", "/console/sign-in/code", url.Values{"code": {codes[3][1]}}, nil); p.status != 401 {
		t.Errorf("a recovery code used again: %d, want 401", p.status)
	}

	// The owner requires the second factor: a member without one is sent
	// to enrol before any project page.
	acc, _ := e.member(pid, account.Accountant)
	if p := b2.post("/console/p/"+pid+"/settings/require-totp", url.Values{"requireTotp": {"true"}}); p.status != http.StatusSeeOther {
		t.Fatalf("require TOTP: %d %s", p.status, p.body)
	}
	p = acc.get("/console/p/" + pid + "/tasks")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/account/security?required=1") {
		t.Errorf("a member without a second factor: %d %s, want sent to enrol", p.status, p.header.Get("Location"))
	}
	if p := acc.get("/console/account/security?required=1"); p.status != 200 || !strings.Contains(p.body, "requires a second factor") {
		t.Errorf("enrolment page of a required second factor: %d", p.status)
	}
	if p := b2.get("/console/p/" + pid + "/tasks"); p.status != 200 {
		t.Errorf("the owner with a second factor: %d", p.status)
	}
	// A guarded change now needs the code as well.
	if p := b2.post(settingsPath(pid, "bank"), url.Values{"sellerBic": {"BYLADEM1001"}, "password": {password}}); p.status != 422 || !strings.Contains(p.body, "code: the code is wrong") {
		t.Errorf("bank change without the code: %d", p.status)
	}
	e.clock.Add(2 * time.Minute)
	if p := b2.post(settingsPath(pid, "bank"), url.Values{"sellerBic": {"COBADEFFXXX"}, "password": {password}, "code": {codeAt(t, secret, e.clock.Now())}}); p.status != http.StatusSeeOther {
		t.Errorf("bank change with password and code: %d %s", p.status, p.body)
	}
}

// The pages of this increment show no untranslated text key in German or
// English.
func TestSettingsPagesInBothLanguages(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	pid := e.project()
	b, _ := e.member(pid, account.Owner)
	raw := regexp.MustCompile(`>[^<]*\b(?:settings|setting|view|security|code|reset_test|nav)\.[a-zA-Z_.]+`)
	for _, lang := range []string{"de", "en"} {
		for _, path := range []string{settingsPath(pid, ""), "/console/account/security"} {
			p := b.do("GET", path, nil, map[string]string{"Accept-Language": lang})
			if p.status != 200 || !strings.Contains(p.body, `<html lang="`+lang+`">`) {
				t.Errorf("%s in %s: %d", path, lang, p.status)
			}
			if m := raw.FindString(p.body); m != "" {
				t.Errorf("%s in %s shows a text key: %s", path, lang, m)
			}
		}
	}
	p := b.post("/console/account/totp/start", nil)
	if m := raw.FindString(p.body); m != "" || p.status != 200 {
		t.Errorf("enrolment page: %d, text key %q", p.status, m)
	}
}
