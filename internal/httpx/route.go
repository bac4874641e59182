// Package httpx is the shared HTTP toolkit: the Route type that the command and
// query sides export, the middleware (request id, authentication, scopes, rate
// limits, body limits, metrics), JSON in and out, and the one error body.
// It imports internal/apperr and libraries; never command or query.
package httpx

import (
	"context"
	"net/http"
	"time"
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
}

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
	Input       any        // struct with path, query and header tags and the JSON body fields
	Responses   []Response // success responses
	Errors      []int      // error statuses besides the ones every route can answer
	Raw         bool       // bypasses the JSON envelope (health, metrics, documents)

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
func (p Principal) Has(s Scope) bool {
	if s == ScopeAnyKey {
		return p.Has(ScopeOrdersWrite) || p.Has(ScopeInvoicesRead)
	}
	for _, x := range p.Scopes {
		if x == s {
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
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// ProjectID returns the project of the authenticated caller, or "".
func ProjectID(ctx context.Context) string {
	p, _ := PrincipalFrom(ctx)
	return p.ProjectID
}
