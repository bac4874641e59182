// Package console is the seller console: server-rendered HTML pages (Go
// templates and assets embedded beside it) through which the people of a
// project sign in and run their invoicing in a browser. It is a surface of
// the service, served by the api role under /console/ on the API's
// listener: it calls the same packages as the API and the command line
// (internal/apikey for keys, internal/project for projects, query for the
// read models; command for the changes of the pages to come) and keeps no
// rule of its own but who may do what (internal/account's role × action table,
// checked on the server for every page and form). It sits above command and
// query: it imports both and internal packages; nothing below imports it.
//
// A new project page is: an action in internal/account's table (and its
// row in that package's test), one row in projectPages (pattern, action,
// handler), a template in templates/ defining "content", and its words in
// texts.go in both languages. The project wrapper checks the session, the
// membership, the role and (for POST) the form token before the handler
// runs; the role matrix test and the two-language test cover the new row
// without a change. Changes are recorded with account.Record.
package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/query"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// Default session timeouts: idle (no request) and absolute (since sign-in).
const (
	DefaultIdle     = 30 * time.Minute
	DefaultAbsolute = 12 * time.Hour
)

// Sign-in limits: failed attempts within SignInWindow per account (the
// e-mail as typed) and per client address.
const (
	SignInWindow      = 15 * time.Minute
	MaxFailuresPerAcc = 5
	MaxFailuresPerIP  = 20
)

// requestTimeout bounds the work of one console request.
const requestTimeout = 15 * time.Second

// Config is what the console needs besides the database.
type Config struct {
	// PublicURL is the service's address as browsers see it (links in
	// e-mails); its scheme decides Secure cookies, the __Host- prefix and HSTS.
	PublicURL string
	Sender    account.Sender // e-mail (invitations, resets); nil: none sent
	Timeouts  account.Timeouts
	Now       func() time.Time // the clock; nil: time.Now
	// TrustedProxies are the load balancers whose X-Forwarded-For names the
	// client whose failed sign-ins count (O2I_TRUSTED_PROXIES).
	TrustedProxies []netip.Prefix
	// ResetTestData discards a project's test data (command's use case
	// with the archive and Redis) and returns its counts; nil: the reset
	// is not offered.
	ResetTestData func(ctx context.Context, projectID string) (any, error)
	// RecheckTask and DismissTask are the use cases of POST
	// /v1/tasks/{id}/recheck and /dismiss (command's RecheckTask and
	// DismissTask): the task's answer, and for a recheck whether the held
	// orders are evaluated again; nil: not offered.
	RecheckTask func(ctx context.Context, projectID, id string) (result any, enqueued bool, err error)
	DismissTask func(ctx context.Context, projectID, id string) (result any, err error)
}

// Console serves the console's pages.
type Console struct {
	cfg     Config
	acc     *account.Store
	pool    *pgxpool.Pool
	queries *query.Service
	pages   map[string]*template.Template
	secure  bool
	cookie  string
}

// New returns the console on pool and the query side.
func New(pool *pgxpool.Pool, queries *query.Service, cfg Config) (*Console, error) {
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("public URL must be http(s)://host[:port], got %q", cfg.PublicURL)
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.Timeouts.Idle == 0 {
		cfg.Timeouts.Idle = DefaultIdle
	}
	if cfg.Timeouts.Absolute == 0 {
		cfg.Timeouts.Absolute = DefaultAbsolute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, acc: account.New(pool), pool: pool, queries: queries, secure: u.Scheme == "https", cookie: "o2i_session"}
	if c.secure {
		c.cookie = "__Host-o2i_session"
	}
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	return c, nil
}

// CookieName is the session cookie's name (with __Host- under https).
func (c *Console) CookieName() string { return c.cookie }

func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"date": func(t any) string {
			switch v := t.(type) {
			case time.Time:
				return v.UTC().Format("2006-01-02 15:04")
			case *time.Time:
				if v == nil {
					return ""
				}
				return v.UTC().Format("2006-01-02 15:04")
			}
			return ""
		},
		"day": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			return t.Format("2006-01-02")
		},
		"join": strings.Join,
		// money is an amount in currency units: 11900 -> "119.00".
		"money": func(c int64) string { return money.Cents(c).String() },
		// seg is an identifier as one path segment of a link.
		"seg": url.PathEscape,
		// safeURL passes the data: URL of the QR code the console made itself.
		"safeURL": func(s string) template.URL {
			if strings.HasPrefix(s, "data:image/png;base64,") {
				return template.URL(s)
			}
			return ""
		},
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", n, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// Handler is the console under Prefix: security headers, the refusal of
// cross-origin state-changing requests, then the pages.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	mux.Handle("GET /console/assets/", http.StripPrefix("/console/assets/", assetHandler(http.FileServerFS(assets))))
	mux.HandleFunc("GET /console/{$}", c.wrap(c.home))
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, Prefix, http.StatusSeeOther) })
	mux.HandleFunc("GET /console/sign-in", c.wrap(c.signInPage))
	mux.HandleFunc("POST /console/sign-in", c.wrap(c.signIn))
	mux.HandleFunc("POST /console/sign-out", c.wrap(c.signOut))
	mux.HandleFunc("POST /console/sign-out-everywhere", c.wrap(c.signOutEverywhere))
	mux.HandleFunc("GET /console/sign-in/code", c.wrap(c.codePage))
	mux.HandleFunc("POST /console/sign-in/code", c.wrap(c.code))
	mux.HandleFunc("GET /console/account/security", c.wrap(c.security))
	mux.HandleFunc("POST /console/account/totp/start", c.wrap(c.startTOTP))
	mux.HandleFunc("POST /console/account/totp/confirm", c.wrap(c.confirmTOTP))
	mux.HandleFunc("GET /console/invite/{token}", c.wrap(c.invitePage))
	mux.HandleFunc("POST /console/invite/{token}", c.wrap(c.acceptInvite))
	mux.HandleFunc("GET /console/reset", c.wrap(c.resetRequestPage))
	mux.HandleFunc("POST /console/reset", c.wrap(c.resetRequest))
	mux.HandleFunc("GET /console/reset/{token}", c.wrap(c.resetPage))
	mux.HandleFunc("POST /console/reset/{token}", c.wrap(c.reset))
	for _, p := range projectPages {
		timeout := requestTimeout
		if longRuns[p.pattern] {
			timeout = query.DownloadTimeout
		}
		mux.HandleFunc(p.pattern, c.wrapFor(timeout, c.project(p.action, p.handle)))
	}
	mux.HandleFunc("/console/", c.wrap(func(w http.ResponseWriter, r *http.Request, v *view) error {
		return errNotFound
	}))
	cop := http.NewCrossOriginProtection()
	// Behind a load balancer the Host the service sees may not be the
	// browser's: the public URL's origin is this site's too.
	if err := cop.AddTrustedOrigin(c.cfg.PublicURL); err != nil {
		slog.Warn("console: public URL is no origin", "url", c.cfg.PublicURL, "err", err)
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "403 cross-origin request refused", http.StatusForbidden)
	}))
	return c.headers(cop.Handler(mux))
}

// assetHandler lets browsers keep the embedded assets for a day.
func assetHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		h.ServeHTTP(w, r)
	})
}

// headers sets the security headers of every console answer.
func (c *Console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if c.secure {
			h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
		}
		if !strings.HasPrefix(r.URL.Path, "/console/assets/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

var (
	errNotFound  = apperr.New(apperr.NotFound, "not_found", "not found")
	errForbidden = apperr.New(apperr.Forbidden, "forbidden", "your role does not allow this")
	errCSRF      = apperr.New(apperr.Forbidden, "csrf", "the form is outdated or not from this site; reload the page and try again")
)

// errSignIn redirects to the sign-in page.
type errSignIn struct{}

func (errSignIn) Error() string { return "sign-in required" }

// handler is a console handler: it parses, calls, and renders or redirects.
type handler func(w http.ResponseWriter, r *http.Request, v *view) error

// wrap gives a handler its view (language, session when signed in) and
// turns its error into a page.
func (c *Console) wrap(h handler) http.HandlerFunc { return c.wrapFor(requestTimeout, h) }

// longRuns are the pages that stream a download or check the archive: they
// may take as long as the API's archive export.
var longRuns = map[string]bool{
	"GET /console/p/{project}/exports/datev":  true,
	"GET /console/p/{project}/exports/oss":    true,
	"GET /console/p/{project}/exports/ecsl":   true,
	"GET /console/p/{project}/archive/verify": true,
	"GET /console/p/{project}/archive/export": true,
}

// wrapFor is wrap with the request's time bound.
func (c *Console) wrapFor(timeout time.Duration, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		v := c.newView(w, r)
		if ck, err := r.Cookie(c.cookie); err == nil && ck.Value != "" {
			if s, err := c.acc.Session(ctx, ck.Value, c.cfg.Timeouts, c.cfg.Now()); err == nil && s.Pending {
				v.pending = &s
				v.sessionID = ck.Value
			} else if err == nil {
				v.Session = &s
				v.sessionID = ck.Value
			} else if !errors.Is(err, account.ErrNotFound) {
				c.fail(w, r, v, err)
				return
			}
		}
		if err := h(w, r, v); err != nil {
			c.fail(w, r, v, err)
		}
	}
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, v *view, err error) {
	if errors.As(err, new(errSignIn)) {
		next := ""
		if r.Method == http.MethodGet {
			next = "?next=" + url.QueryEscape(r.URL.RequestURI())
		}
		http.Redirect(w, r, Prefix+"sign-in"+next, http.StatusSeeOther)
		return
	}
	status := http.StatusInternalServerError
	msg := v.T("error.internal")
	var ae *apperr.Error
	if errors.As(err, &ae) {
		switch ae.Kind {
		case apperr.NotFound:
			status, msg = http.StatusNotFound, v.T("error.not_found")
			if t := v.T("error." + ae.Code); t != "error."+ae.Code {
				msg = t // the link of an invitation or a reset: say why
			}
		case apperr.Forbidden:
			status, msg = http.StatusForbidden, v.T("error.forbidden")
			if ae == errCSRF {
				msg = v.T("error.csrf")
			}
		case apperr.RateLimited:
			status, msg = http.StatusTooManyRequests, v.T("error.rate_limited")
		case apperr.Conflict:
			status, msg = http.StatusConflict, ae.Message
			if t := v.T("error." + ae.Code); t != "error."+ae.Code {
				msg = t + " (" + ae.Message + ")"
			}
		case apperr.Unavailable:
			status, msg = http.StatusServiceUnavailable, ae.Message
		case apperr.Validation, apperr.Invalid:
			status, msg = http.StatusUnprocessableEntity, ae.Message
		}
	}
	if status == http.StatusInternalServerError {
		slog.ErrorContext(r.Context(), "console", "path", r.URL.Path, "err", err)
	}
	v.Title = v.T("error.title")
	v.Error = msg
	c.render(w, status, "error", v)
}

// render writes a page.
func (c *Console) render(w http.ResponseWriter, status int, page string, v *view) {
	t, ok := c.pages[page]
	if !ok {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		slog.Error("console render", "page", page, "err", err)
		http.Error(w, "500 the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// requireSession refuses a request without a session.
func requireSession(v *view) error {
	if v.Session == nil {
		return errSignIn{}
	}
	return nil
}

// checkForm checks the form token of a state-changing request.
func checkForm(r *http.Request, v *view) error {
	if err := requireSession(v); err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "bad_form", "the form could not be read")
	}
	tok := r.PostForm.Get("csrf")
	if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(v.Session.CSRF)) != 1 {
		return errCSRF
	}
	return nil
}

// clientAddr is the client's address: the TCP peer, or behind a trusted
// proxy the address it forwards (as the API counts it).
func (c *Console) clientAddr(r *http.Request) string {
	return httpx.ClientAddress(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), c.cfg.TrustedProxies)
}

// setSession sets the session cookie.
func (c *Console) setSession(w http.ResponseWriter, id string) {
	http.SetCookie(w, &http.Cookie{Name: c.cookie, Value: id, Path: "/", HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode})
}

// clearSession removes the session cookie.
func (c *Console) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: c.cookie, Value: "", Path: "/", HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// safeNext is a console path to go to after sign-in; anything else is the start page.
func safeNext(next string) string {
	if strings.HasPrefix(next, Prefix) && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") {
		return next
	}
	return Prefix
}
