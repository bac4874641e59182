package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/o2i-service/o2i/console"
	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/ratelimit"
	"github.com/o2i-service/o2i/internal/reqlog"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/tracing"
)

// Roles a process can run; `serve` runs all of them unless told otherwise.
var allRoles = []string{"api", "relay", "projector", "invoicer"}

type listeningKey struct{}

type metricsListeningKey struct{}

// runListening is run with a callback that receives the API's bound address
// (tests listen on port 0).
func runListening(ctx context.Context, args []string, getenv func(string) string, out io.Writer, listening func(string)) error {
	return run(context.WithValue(ctx, listeningKey{}, listening), args, getenv, out, out)
}

// withMetricsListening makes serve report the bound address of its metrics
// listener to f (tests listen on port 0).
func withMetricsListening(ctx context.Context, f func(string)) context.Context {
	return context.WithValue(ctx, metricsListeningKey{}, f)
}

// HTTP server limits: how long a client may take to send the headers and
// the whole request, how long the answer may take to write (routes that
// stream longer move their own deadline), how long an idle keep-alive
// connection stays, and the size of the headers.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// Failed authentications per client address, before keys are looked up.
const (
	authFailuresPerSecond = 10
	authFailuresBurst     = 100
	authFailureClients    = 65536
)

func serve(ctx context.Context, cfg Config, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rolesFlag := fs.String("roles", strings.Join(allRoles, ","), "comma-separated roles to run: "+strings.Join(allRoles, ","))
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	var roles []string
	for _, r := range strings.Split(*rolesFlag, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(allRoles, r) {
			return fmt.Errorf("unknown role %q (known: %s)", r, strings.Join(allRoles, ","))
		}
		roles = append(roles, r)
	}
	if len(roles) == 0 {
		return fmt.Errorf("--roles is empty")
	}

	// Under a container's memory limit, the collector works harder as the
	// heap nears 90 % of it instead of the process being killed; outside
	// one, a default per core keeps the resident memory from following
	// the highest live heap since the start (GOMEMLIMIT, when set, wins).
	container, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup))
	if err != nil {
		container = 0
	}
	_, envSet := os.LookupEnv("GOMEMLIMIT")
	limit, source := memoryLimit(envSet, container, runtime.GOMAXPROCS(0))
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	slog.Info("memory limit", "GOMEMLIMIT", debug.SetMemoryLimit(-1), "from", source)
	if getenvGOGC() == "" {
		// The service holds little long-lived heap; collecting less often
		// trades memory (plentiful) for latency under load.
		debug.SetGCPercent(400)
	}
	shutdownTracing, err := tracing.Setup(ctx, cfg.OTLPEndpoint, "o2i", tracing.Roles.StringSlice(roles))
	if err != nil {
		return err
	}
	defer func() {
		// The spans not yet exported go out before the process ends.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdownTracing(tctx); err != nil {
			slog.Warn("tracing shutdown", "err", err)
		}
	}()
	cfg.archiveReadOnly = !slices.Contains(roles, "invoicer")
	d, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), store.RoundTrips)

	// Workers stop when workCtx ends; the API drains first so that accepted
	// requests' effects are still relayed and projected.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var wg sync.WaitGroup
	errc := make(chan error, len(roles)+1)
	start := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(workCtx); err != nil && workCtx.Err() == nil {
				errc <- fmt.Errorf("role %s: %w", name, err)
			}
		}()
	}
	w := newWiring(d, reg)
	for _, role := range roles {
		if role == "api" {
			continue
		}
		f := w.worker(role)
		if f == nil {
			slog.Info("role has no work in this version yet", "role", role)
			continue
		}
		start(role, f)
	}
	slog.Info("serving", "roles", roles)
	if cfg.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(ctx, cfg.MetricsAddr, reg)
		if err != nil {
			stopWork()
			wg.Wait()
			return err
		}
		defer stopMetrics()
	}
	if cfg.DebugAddr != "" {
		go func() {
			// net/http/pprof registers its handlers on the default mux.
			if err := http.ListenAndServe(cfg.DebugAddr, http.DefaultServeMux); err != nil {
				slog.Error("debug server", "addr", cfg.DebugAddr, "err", err)
			}
		}()
	}

	if !slices.Contains(roles, "api") {
		select {
		case <-ctx.Done():
		case err = <-errc:
		}
		stopWork()
		wg.Wait()
		return err
	}

	auth := apikey.NewAuthenticator(d.pool)
	rlog := reqlog.New(d.pool, 65536)
	rlog.AnonymousRate = cfg.RequestLogAnonRate
	_ = rlog.RegisterMetrics(reg) // only fails on a second registration
	var bg sync.WaitGroup
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	bg.Add(3)
	go func() { defer bg.Done(); auth.Run(bgCtx, 5*time.Second) }()
	go func() { defer bg.Done(); rlog.Run(bgCtx) }()
	go func() { defer bg.Done(); _ = w.queries.Run(bgCtx) }()

	srv := &httpx.Server{
		Routes:            w.routes(&health{d: d}),
		Auth:              auth,
		Limiter:           ratelimit.New(d.redis),
		Recorder:          rlog,
		Registry:          reg,
		MaxInFlight:       cfg.MaxInFlight,
		RequestTimeout:    cfg.RequestTimeout,
		AuthFailures:      httpx.NewClientLimiter(authFailuresPerSecond, authFailuresBurst, authFailureClients),
		PublicBodyTimeout: cfg.PublicBodyTimeout,
		MaxPublicBodies:   cfg.PublicBodies,
		MaxPublicPerAddr:  cfg.PublicPerAddr,
		TrustedProxies:    cfg.TrustedProxies,
	}
	con, err := console.New(d.pool, w.queries, console.Config{PublicURL: cfg.PublicURL, Sender: mailSender(cfg), TrustedProxies: cfg.TrustedProxies,
		ResetTestData: func(ctx context.Context, projectID string) (any, error) {
			return w.commands.ResetTestData(ctx, w.archive, d.redis, projectID)
		},
		RecheckTask: func(ctx context.Context, projectID, id string) (any, bool, error) {
			return w.commands.RecheckTask(ctx, projectID, id)
		},
		DismissTask: func(ctx context.Context, projectID, id string) (any, error) {
			return w.commands.DismissTask(ctx, projectID, id)
		}})
	if err != nil {
		stopWork()
		stopBG()
		return fmt.Errorf("O2I_PUBLIC_URL: %w", err)
	}
	hs := &http.Server{Handler: withConsole(srv.Handler(), con.Handler()), ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		stopWork()
		stopBG()
		return fmt.Errorf("listen on %s (O2I_HTTP_ADDR): %w", cfg.HTTPAddr, err)
	}
	slog.Info("api listening", "addr", ln.Addr().String())
	if f, ok := ctx.Value(listeningKey{}).(func(string)); ok {
		f(ln.Addr().String())
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	slog.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		slog.Warn("http shutdown", "err", serr)
	}
	stopBG()
	bg.Wait()
	stopWork()
	wg.Wait()
	return err
}

// withConsole serves the console under /console/ and the API (with its
// key authentication, limits and request log) everywhere else: one origin,
// one listener.
func withConsole(api, con http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, console.Prefix) {
			con.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// mailSender is the SMTP sender of the configuration (checked by loadConfig).
func mailSender(cfg Config) account.Sender {
	s, err := mail.NewSender(cfg.SMTPURL, cfg.MailFrom)
	if err != nil {
		return nil
	}
	return s
}

func getenvGOGC() string { return os.Getenv("GOGC") }

// serveMetrics serves the Prometheus metrics at /metrics on addr, a
// listener of its own so that they never reach the public API port.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (O2I_METRICS_ADDR): %w", addr, err)
	}
	slog.Info("metrics listening", "addr", ln.Addr().String())
	if f, ok := ctx.Value(metricsListeningKey{}).(func(string)); ok {
		f(ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics server", "addr", addr, "err", err)
		}
	}()
	return func() { _ = hs.Close() }, nil
}
