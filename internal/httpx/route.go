// Package httpx is the shared HTTP toolkit: the Route type that the command and
// query sides export, the middleware (request id, the request's trace span,
// authentication, scopes, rate limits, body limits, metrics), JSON in and
// out, and the one error body. It imports internal/apperr, internal/tracing
// and libraries; never command or query.
package httpx

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/apperr"
)

// Scope is an API key permission.
type Scope string

// The scopes of the interface specification.
const (
	ScopeOrdersWrite  Scope = "orders:write"
	ScopeInvoicesRead Scope = "invoices:read"
	// ScopeArchiveRead is an auditor's: the archive listing and export, nothing else.
	ScopeArchiveRead Scope = "archive:read"
)

// ScopeAnyKey marks a route any integration key of the project may call
// (one holding orders:write or invoices:read), such as the lookup of its
// recorded requests. An auditor's key (archive:read alone) reads the
// archive and nothing else. It is no scope a key holds.
const ScopeAnyKey Scope = "any"

// Accepted returns the scopes of which a key needs one to call a route of
// scope s: s itself, or for ScopeAnyKey the integration scopes.
func (s Scope) Accepted() []Scope {
	if s == ScopeAnyKey {
		return []Scope{ScopeOrdersWrite, ScopeInvoicesRead}
	}
	return []Scope{s}
}

// acceptedText names the accepted scopes of s for people: "orders:write"
// or "orders:write or invoices:read".
func (s Scope) acceptedText() string {
	acc := s.Accepted()
	names := make([]string, len(acc))
	for i, a := range acc {
		names[i] = string(a)
	}
	return strings.Join(names, " or ")
}

// errLacksScope is the 403 of a key that holds none of the scopes a route
// of scope s accepts; it names them.
func errLacksScope(s Scope) error {
	if len(s.Accepted()) == 1 {
		return apperr.New(apperr.Forbidden, "forbidden", "this key lacks the scope %s", s)
	}
	return apperr.New(apperr.Forbidden, "forbidden", "this key holds none of the scopes this endpoint accepts: %s", s.acceptedText())
}

// Scopes lists every scope a key can hold.
var Scopes = []Scope{ScopeOrdersWrite, ScopeInvoicesRead, ScopeArchiveRead}

// HandlerFunc is an HTTP handler that returns its failure; the adapter renders
// every error the same way.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Response documents one possible response of a route.
type Response struct {
	Status      int
	Body        any    // a value of the body's Go type; nil for no body
	ContentType string // default application/json
	Description string
	Headers     []Header // what the route sends besides X-Request-Id
}

// Header documents a response header. X-Request-Id (every response) and
// Retry-After (every 429 and 503) are documented for all routes; a route
// names the others it sends.
type Header struct {
	Name        string
	Description string
	Required    bool           // sent with every response of its status
	Schema      map[string]any // JSON Schema of the value; nil: a string
}

// The response headers routes share.
var (
	// ETagHeader names the revision of a versioned read, on its 200 and 304.
	ETagHeader = Header{Name: "ETag", Required: true,
		Description: "The revision of the record (a quoted string); send it as If-None-Match to get 304 while nothing changed.",
		Schema:      map[string]any{"type": "string", "pattern": `^"[^"]*"$`}}
	// CacheControlHeader goes with ETagHeader: caches must revalidate.
	CacheControlHeader = Header{Name: "Cache-Control", Required: true,
		Description: "private, no-cache: a cache may keep the answer for this client only and must revalidate it (If-None-Match) before each use.",
		Schema:      map[string]any{"type": "string", "enum": []any{"private, no-cache"}}}
	// IdempotentReplayedHeader marks a replayed answer of a keyed command.
	IdempotentReplayedHeader = Header{Name: "Idempotent-Replayed",
		Description: "true when this answer replays the first successful response to the same Idempotency-Key and body; absent on an answer executed now.",
		Schema:      map[string]any{"type": "string", "enum": []any{"true"}}}
	// ContentDispositionHeader names the file of a download.
	ContentDispositionHeader = Header{Name: "Content-Disposition", Required: true,
		Description: `attachment; filename="<name>": the file name to save the download under.`}
	// RetryAfterHeader says when to retry (seconds).
	RetryAfterHeader = Header{Name: "Retry-After", Required: true,
		Description: "Seconds to wait before retrying.", Schema: map[string]any{"type": "integer", "minimum": 0}}
)

// Route is one endpoint: the router, the scope check, the /v1 discovery listing
// and the OpenAPI document are all built from the same []Route.
type Route struct {
	Method  string
	Path    string // chi pattern, for example /v1/orders/{orderNo}
	Scope   Scope  // empty for public endpoints
	Summary string
	Handler HandlerFunc

	// For the OpenAPI document.
	OperationID string
	Tag         string
	Description string
	// Input is a struct with path, query and header tags and the JSON body
	// fields. A query parameter tagged allowEmptyValue:"true" given empty
	// (?status=) counts as not given.
	Input     any
	Body      any        // the JSON body when it is a type of its own (Input then holds only parameters)
	Responses []Response // success responses
	Errors    []int      // error statuses besides the ones every route can answer
	// ErrorHeaders are the headers of error responses besides X-Request-Id
	// and the Retry-After of 429 and 503, by status.
	ErrorHeaders map[int][]Header
	Raw          bool // bypasses the JSON envelope (health, metrics, documents)

	// Timeout is the request's deadline (and moves its write deadline);
	// 0: the server's RequestTimeout. Only for routes that stream long
	// answers.
	Timeout time.Duration

	// BodyLimit is the most a public route's body may hold, in bytes;
	// 0: MaxBodyBytes. The server reads a public route's body itself before
	// the handler runs (see Server.PublicBodyTimeout); larger is 413.
	BodyLimit int64
}

// Public reports whether the route needs no API key.
func (r Route) Public() bool { return r.Scope == "" }

// readsBody reports whether requests to the route carry a body.
func (r Route) readsBody() bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
}

// Principal is the authenticated caller of a request.
type Principal struct {
	ProjectID string
	KeyID     string
	KeyPrefix string
	Scopes    []Scope
	RateLimit RateLimit
}

// Has reports whether the principal holds scope s.
// For ScopeAnyKey that is one of its accepted scopes.
func (p Principal) Has(s Scope) bool {
	for _, x := range p.Scopes {
		if s == ScopeAnyKey && (x == ScopeOrdersWrite || x == ScopeInvoicesRead) || s != ScopeAnyKey && x == s {
			return true
		}
	}
	return false
}

// RateLimit is a per-key token bucket: Rate requests per second sustained, Burst at once.
type RateLimit struct {
	Rate  int
	Burst int
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the authenticated caller; ok is false on public routes.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	if p, ok := ctx.Value(principalKey{}).(Principal); ok {
		return p, true
	}
	if rec := stateOf(ctx); rec != nil && rec.authenticated {
		return rec.principal, true
	}
	return Principal{}, false
}

// ProjectID returns the project of the authenticated caller, or "".
func ProjectID(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	return p.ProjectID
}
