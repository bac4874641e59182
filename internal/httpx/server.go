package httpx

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/tracing"
)

// Authenticator resolves a bearer token to its principal. It returns an
// apperr Unauthenticated error for a missing, malformed, unknown, expired or
// revoked key.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// KnownKeys is an Authenticator that can tell, without a database look-up,
// that a key exists (it authenticated before and is held in memory); the
// failed-authentication limiter lets such keys through.
type KnownKeys interface {
	Known(token string) bool
}

// Limiter decides whether the principal may make one more request now. When
// it may not, retryAfter says how long to wait.
type Limiter interface {
	Allow(ctx context.Context, p Principal) (ok bool, retryAfter time.Duration, err error)
}

// Entry is what the request log records of one request.
type Entry struct {
	RequestID      string
	ProjectID      string
	KeyPrefix      string
	Method         string
	Path           string
	Route          string
	Status         int
	Duration       time.Duration
	IdempotencyKey string
	At             time.Time
}

// Recorder receives one Entry per request. It must not block for long: at
// most a short, bounded wait under overload (backpressure).
type Recorder interface {
	Record(Entry)
}

// Server builds the HTTP handler from the route table.
type Server struct {
	Routes   []Route
	Auth     Authenticator
	Limiter  Limiter  // nil: no rate limit
	Recorder Recorder // nil: no request log
	Registry prometheus.Registerer
	// MaxInFlight is how many authenticated requests are served at once
	// before the next is answered 503; 0 = 1024.
	MaxInFlight int
	// MaxInFlightPublic is the same for the public routes that take a body
	// (the payment provider's webhook), counted apart so that public callers
	// cannot take the authenticated API's places; 0 = MaxInFlight/8, at
	// least 16. Such a request takes its place only once its body has
	// arrived (see PublicBodyTimeout). The public routes without a body
	// (health, discovery, the OpenAPI document) answer from memory and
	// cached checks and are counted in no pool at all: nothing a caller
	// sends slowly can keep them from answering.
	MaxInFlightPublic int
	// PublicBodyTimeout is how long the body of a public route may take to
	// arrive after its headers; past it the answer is 408 request_timeout.
	// The server reads it before the route's handler runs and before the
	// request takes a place in MaxInFlightPublic. 0 = DefaultPublicBodyTimeout.
	PublicBodyTimeout time.Duration
	// MaxPublicBodies is how many public request bodies are read at once,
	// all client addresses together, before the next such request is
	// answered 503; 0 = DefaultMaxPublicBodies.
	MaxPublicBodies int
	// MaxPublicPerAddr is how many requests to public routes with a body one
	// client address may have in flight at once (its body being read or
	// the request being handled) before its next is answered 429; 0 =
	// DefaultMaxPublicPerAddr. An IPv6 address counts by its /64.
	MaxPublicPerAddr int
	// RequestTimeout is every request's deadline unless its route sets
	// Timeout; 0 = DefaultRequestTimeout.
	RequestTimeout time.Duration
	// AuthFailures limits failed authentications per client address; nil:
	// not limited.
	AuthFailures *ClientLimiter
	// TrustedProxies are the load balancers whose X-Forwarded-For names the
	// client that per-address limits count (clientaddr.go); empty: the TCP
	// peer is the client.
	TrustedProxies []netip.Prefix
}

// DefaultRequestTimeout bounds a request whose route sets no Timeout.
const DefaultRequestTimeout = 30 * time.Second

// stateKey holds the request's *statusRecorder in its context: the
// request id and, once authenticated, the principal, in one value.
type stateKey struct{}

func stateOf(ctx context.Context) *statusRecorder {
	rec, _ := ctx.Value(stateKey{}).(*statusRecorder)
	return rec
}

// RequestID returns the id of the request in ctx.
func RequestID(ctx context.Context) string {
	if rec := stateOf(ctx); rec != nil {
		return rec.id
	}
	return ""
}

// Handler returns the router with every route mounted.
func (s *Server) Handler() http.Handler {
	m := newMetrics(s.Registry)
	inflight := s.MaxInFlight
	if inflight <= 0 {
		inflight = 1024
	}
	public := s.MaxInFlightPublic
	if public <= 0 {
		public = max(inflight/8, 16)
	}
	sems := &inFlight{api: make(chan struct{}, inflight), public: make(chan struct{}, public),
		bodies: newBodyGate(s.MaxPublicBodies, s.MaxPublicPerAddr, s.PublicBodyTimeout)}
	m.gauges(s.Registry, sems)

	r := chi.NewRouter()
	routeContexts := sync.Pool{New: func() any { return chi.NewRouteContext() }}
	serve := func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		id := newRequestID()
		// The recorder and the request's context in one allocation.
		st := &struct {
			rec statusRecorder
			ctx requestContext
		}{}
		rec := &st.rec
		rec.ResponseWriter, rec.id = w, id
		// The header's value lives in the recorder: no slice of its own
		// per request (Header.Set would make one).
		rec.idHeader[0] = id
		w.Header()["X-Request-Id"] = rec.idHeader[:]
		// The request's span continues the caller's trace (traceparent);
		// the request id on it finds the trace of any call.
		traced, span := tracing.Start(tracing.HTTP(req.Context(), req.Header), req.Method, trace.SpanKindServer,
			tracing.RequestID.String(id), semconv.HTTPRequestMethodKey.String(req.Method))
		// chi's route context, made here as chi would (from a pool, given
		// back when the request is done): chi then routes in it without
		// another copy of the request.
		rctx := routeContexts.Get().(*chi.Context)
		rctx.Reset()
		rctx.Routes = r
		rc := &st.ctx
		rc.parent, rc.state, rc.route = traced, rec, rctx
		if len(s.TrustedProxies) > 0 {
			addr := ClientAddress(req.RemoteAddr, req.Header.Values("X-Forwarded-For"), s.TrustedProxies)
			rc.client = &addr
		}
		var ctx context.Context = rc
		req = req.WithContext(ctx)
		defer func() {
			v := recover()
			// A handler that aborts a response it has begun (a stream
			// that failed midway) must reach net/http, which then cuts
			// the connection: the client sees a broken transfer, never a
			// clean-looking truncated body.
			aborted := v == http.ErrAbortHandler
			if aborted {
				slog.WarnContext(ctx, "response aborted after it began", "requestId", id, "path", logField(req.URL.Path))
				defer panic(v)
			} else if v != nil {
				slog.ErrorContext(ctx, "panic", "requestId", id, "panic", v)
				if rec.status == 0 {
					WriteError(rec, req, fmt.Errorf("panic: %v", v))
				}
			}
			route := chi.RouteContext(ctx).RoutePattern()
			if route == "" {
				route = "unmatched"
			}
			d := time.Since(start)
			status := rec.Status()
			m.observe(req.Method, route, status, d)
			if span.IsRecording() {
				span.SetName(req.Method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
				if status >= 500 {
					span.SetStatus(codes.Error, http.StatusText(status))
				}
			}
			span.End()
			if s.Recorder != nil {
				p, _ := PrincipalFrom(ctx)
				s.Recorder.Record(Entry{
					RequestID: id, ProjectID: p.ProjectID, KeyPrefix: p.KeyPrefix,
					Method: logMethod(req.Method), Path: logField(req.URL.Path), Route: route, Status: status,
					Duration: d, IdempotencyKey: logField(req.Header.Get("Idempotency-Key")), At: start,
				})
			}
			routeContexts.Put(rctx)
		}()
		r.ServeHTTP(rec, req)
	}
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		WriteError(w, req, apperr.New(apperr.NotFound, "not_found", "no route %s %s", req.Method, req.URL.Path))
	})
	methods := routeMethods(s.Routes)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Allow", allowHeader(r, methods, req))
		WriteError(w, req, apperr.New(apperr.MethodNotAllowed, "method_not_allowed", "%s is not allowed on %s", req.Method, req.URL.Path))
	})
	for _, rt := range s.Routes {
		r.Method(rt.Method, rt.Path, s.wrap(rt, sems))
	}
	return http.HandlerFunc(serve)
}

// inFlight holds the places of requests being served, authenticated and
// public apart, and of the public bodies being read.
type inFlight struct {
	api, public chan struct{}
	bodies      *bodyGate
}

func (s *Server) wrap(rt Route, sems *inFlight) http.Handler {
	var sem chan struct{} // nil: counted in no pool
	switch {
	case !rt.Public():
		sem = sems.api
	case rt.readsBody():
		sem = sems.public
	}
	timeout := rt.Timeout
	if timeout <= 0 {
		timeout = s.RequestTimeout
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.Public() && rt.readsBody() {
			done, err := sems.bodies.read(w, r, rt.BodyLimit)
			if err != nil {
				// What is left of the body is not read: the connection
				// carries no next request.
				w.Header().Set("Connection", "close")
				WriteError(w, r, err)
				return
			}
			defer done()
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			default:
				WriteError(w, r, &apperr.Error{Kind: apperr.Unavailable, Code: "unavailable",
					Message: "too many requests in flight, retry later", RetryAfter: time.Second})
				return
			}
		}
		// The deadline makes its timer only when something waits on it
		// (deadline.go): a request served from memory needs none. It is set
		// in place on the request's context, which the server made
		// (Handler), as it records the principal in the request's state:
		// the request is not copied again.
		rc := r.Context().(*requestContext)
		rc.setDeadline(time.Now().Add(timeout))
		defer rc.stop()
		if rt.Timeout > 0 {
			// A route that may take longer than the server's write timeout
			// (a streamed export) moves its own write deadline.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(rt.Timeout + 5*time.Second))
		}
		if !rt.Public() {
			p, err := s.authorize(rc, r, rt)
			if err != nil {
				WriteError(w, r, err)
				return
			}
			// Set before the handler runs (and before any goroutine it
			// starts); the request log's entry reads it afterwards.
			rc.state.principal, rc.state.authenticated = p, true
		}
		if err := checkRequest(r); err != nil {
			WriteError(w, r, err)
			return
		}
		if err := rt.Handler(w, r); err != nil {
			WriteError(w, r, err)
		}
	})
}

// authorize authenticates r's key within ctx (r's context with the
// request's deadline) and checks the route's scope and the key's rate.
func (s *Server) authorize(ctx context.Context, r *http.Request, rt Route) (Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, token, found := strings.Cut(h, " ")
	if h == "" {
		return Principal{}, apperr.New(apperr.Unauthenticated, "unauthorized", "missing Authorization header; send Authorization: Bearer <API key>")
	}
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return Principal{}, apperr.New(apperr.Unauthenticated, "unauthorized", "malformed Authorization header; send Authorization: Bearer <API key>")
	}
	addr := clientAddr(r)
	if s.AuthFailures != nil {
		// A blocked address is refused before any look-up, except with a
		// key known to exist: a tenant behind the same address as someone
		// trying made-up keys keeps working.
		known, ok := s.Auth.(KnownKeys)
		if wait, blocked := s.AuthFailures.Blocked(addr); blocked && !(ok && known.Known(strings.TrimSpace(token))) {
			return Principal{}, &apperr.Error{Kind: apperr.RateLimited, Code: "rate_limited",
				Message: "too many failed authentications from this address, retry later", RetryAfter: wait}
		}
	}
	p, err := s.Auth.Authenticate(ctx, strings.TrimSpace(token))
	if err != nil {
		if s.AuthFailures != nil && apperr.KindOf(err) == apperr.Unauthenticated {
			s.AuthFailures.Failed(addr)
		}
		return Principal{}, err
	}
	if !p.Has(rt.Scope) {
		return Principal{}, errLacksScope(rt.Scope)
	}
	if s.Limiter != nil {
		ok, wait, err := s.Limiter.Allow(ctx, p)
		if err != nil {
			// The limiter being down must not take the API down: let the request through.
			slog.WarnContext(ctx, "rate limiter unavailable", "err", err)
		} else if !ok {
			return Principal{}, &apperr.Error{Kind: apperr.RateLimited, Code: "rate_limited",
				Message: fmt.Sprintf("rate limit of %d requests/s (burst %d) exceeded", p.RateLimit.Rate, p.RateLimit.Burst), RetryAfter: wait}
		}
	}
	return p, nil
}

// newRequestID is a UUIDv7 (the request log's BRIN index wants ids in time
// order) whose random bits come from the runtime's generator instead of
// crypto/rand: a request id names a request and guards nothing, and every
// request makes one (crypto/rand's read was most of what a status read
// spent on its id).
func newRequestID() string {
	return uuid.Must(uuid.NewV7FromReader(runtimeRandom{})).String()
}

// runtimeRandom reads the runtime's random generator (math/rand/v2): fast
// and safe for concurrent use, never for secrets. It does not fail.
type runtimeRandom struct{}

func (runtimeRandom) Read(p []byte) (int, error) {
	var b [8]byte
	for i := 0; i < len(p); i += 8 {
		binary.LittleEndian.PutUint64(b[:], rand.Uint64())
		copy(p[i:], b[:])
	}
	return len(p), nil
}

// statusRecorder is the request's state besides its response status: its
// id and its principal (see stateKey).
type statusRecorder struct {
	http.ResponseWriter
	status        int
	id            string
	idHeader      [1]string // the X-Request-Id header's value, id
	principal     Principal
	authenticated bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Status() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// series holds each method, route and status's counter and histogram
	// once looked up (seriesKey → *series): the vectors hash and compare
	// their label values on every look-up, twice a request. Methods,
	// routes and statuses are bounded, so the map is too.
	series sync.Map
}

type seriesKey struct {
	method, route string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "o2i_http_requests_total", Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "o2i_http_request_duration_seconds", Help: "HTTP request latency by method, route and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route", "status"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// knownMethods bound the metrics' method label: anything else is "other".
var knownMethods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodHead: http.MethodHead, http.MethodPost: http.MethodPost,
	http.MethodPut: http.MethodPut, http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
	http.MethodOptions: http.MethodOptions,
}

// logMethod is the request log's method: a known method as its constant
// (no copy of the request line per request), any other as logField.
func logMethod(m string) string {
	if l, ok := knownMethods[m]; ok {
		return l
	}
	return logField(m)
}

func methodLabel(m string) string {
	if l, ok := knownMethods[m]; ok {
		return l
	}
	return "other"
}

// gauges reports how full each pool is, when reg is not nil.
func (m *metrics) gauges(reg prometheus.Registerer, f *inFlight) {
	if reg == nil {
		return
	}
	for pool, n := range map[string]func() int{
		"api":           func() int { return len(f.api) },
		"public":        func() int { return len(f.public) },
		"public_bodies": func() int { return len(f.bodies.reading) },
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "o2i_http_in_flight", Help: "Requests holding a place, by pool: api (authenticated), public (public routes with a body, once read), public_bodies (public bodies being read).",
			ConstLabels: prometheus.Labels{"pool": pool},
		}, func() float64 { return float64(n()) }))
	}
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	k := seriesKey{methodLabel(method), route, status}
	v, ok := m.series.Load(k)
	if !ok {
		s := statusText(status)
		v, _ = m.series.LoadOrStore(k, &series{m.requests.WithLabelValues(k.method, route, s), m.duration.WithLabelValues(k.method, route, s)})
	}
	sr := v.(*series)
	sr.requests.Inc()
	sr.duration.Observe(d.Seconds())
}

var statusTexts = func() map[int]string {
	t := make(map[int]string)
	for c := 100; c < 600; c++ {
		t[c] = fmt.Sprint(c)
	}
	return t
}()

func statusText(code int) string {
	if s, ok := statusTexts[code]; ok {
		return s
	}
	return fmt.Sprint(code)
}
