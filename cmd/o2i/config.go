package main

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/reqlog"
)

// Config is the service configuration. Every value comes from an O2I_*
// environment variable; the defaults are the addresses of the local stack.
type Config struct {
	HTTPAddr        string
	DatabaseURL     string
	DBMaxConns      int
	RedisURL        string
	KafkaBrokers    []string
	S3Endpoint      string
	S3AccessKey     string
	S3SecretKey     string
	S3UseTLS        bool
	S3Bucket        string
	S3TestBucket    string
	ShutdownTimeout time.Duration
	MaxInFlight     int
	// PublicBodyTimeout, PublicBodies and PublicPerAddr bound the public
	// routes with a body (the payment webhook) before their sender is
	// known; see httpx.Server.
	PublicBodyTimeout time.Duration
	PublicBodies      int
	PublicPerAddr     int
	// RequestLogAnonRate is how many requests without a project the request
	// log records a second per process (O2I_REQUEST_LOG_ANON_RATE).
	RequestLogAnonRate int
	// TrustedProxies are the load balancers whose X-Forwarded-For names the
	// client (O2I_TRUSTED_PROXIES).
	TrustedProxies  []netip.Prefix
	InvoicerWorkers int
	LogLevel        string
	DebugAddr       string
	MetricsAddr     string
	RequestTimeout  time.Duration
	// StatementTimeout and IdleInTxTimeout are PostgreSQL session limits of
	// the service's connections.
	StatementTimeout time.Duration
	IdleInTxTimeout  time.Duration

	// archiveReadOnly: the process only reads the archive (no invoicer
	// role), so it checks the buckets at start instead of creating them and
	// its S3 credentials need no write right.
	archiveReadOnly bool
	SMTPURL         string
	MailFrom        string
	// MailConcurrency is how many e-mail deliveries (SMTP sessions) the
	// invoicer role works on at once (O2I_MAIL_CONCURRENCY).
	MailConcurrency int
	StripeAPIBase   string
	// ProviderTimeout and ArchiveTimeout bound one call of the invoicer to
	// the payment provider and to the object store.
	ProviderTimeout time.Duration
	ArchiveTimeout  time.Duration
	// OTLPEndpoint is where spans go over OTLP/HTTP; empty: tracing off
	// (no-op spans, the trace context is still passed on).
	OTLPEndpoint string
	// PublicURL is the service's address as browsers see it: the links the
	// console e-mails, and (https) its Secure cookies and HSTS.
	PublicURL string
}

// envVar documents one variable; the README's configuration table lists the same.
type envVar struct {
	Name, Default, Means string
	secret               bool
}

var envVars = []envVar{
	{"O2I_HTTP_ADDR", "127.0.0.1:8080", "address the API listens on", false},
	{"O2I_DATABASE_URL", "postgres://o2i:o2i@127.0.0.1:25432/o2i?sslmode=disable", "PostgreSQL connection URL", true},
	{"O2I_DB_MAX_CONNS", "32", "PostgreSQL pool size per process", false},
	{"O2I_INVOICER_WORKERS", strconv.Itoa(invoicing.DefaultInvoicerWorkers), "events the invoicer role handles at once (each order's events in order); its work mostly waits for PostgreSQL and the object store, so more than the cores; keep it below O2I_DB_MAX_CONNS", false},
	{"O2I_REDIS_URL", "redis://127.0.0.1:26379/0", "Redis URL (read models, rate limits)", true},
	{"O2I_KAFKA_BROKERS", "127.0.0.1:29092", "comma-separated Kafka bootstrap brokers", false},
	{"O2I_S3_ENDPOINT", "127.0.0.1:29000", "S3/MinIO endpoint host:port (archive)", false},
	{"O2I_S3_ACCESS_KEY", "o2i-dev", "S3 access key", false},
	{"O2I_S3_SECRET_KEY", "o2i-dev-secret", "S3 secret key", true},
	{"O2I_S3_USE_TLS", "false", "use https for S3", false},
	{"O2I_S3_BUCKET", "o2i-archive", "archive bucket (object lock, COMPLIANCE retention)", false},
	{"O2I_S3_TEST_BUCKET", "o2i-archive-test", "bucket of test documents (versioned, no object lock: a reset of test data removes them)", false},
	{"O2I_SHUTDOWN_TIMEOUT", "20s", "how long in-flight work may take on shutdown", false},
	{"O2I_MAX_IN_FLIGHT", "2048", "concurrent requests per API process before 503 with Retry-After", false},
	{"O2I_PUBLIC_BODY_TIMEOUT", httpx.DefaultPublicBodyTimeout.String(), "how long the body of a public request (the payment webhook) may take to arrive after its headers; past it 408 request_timeout", false},
	{"O2I_PUBLIC_BODIES", strconv.Itoa(httpx.DefaultMaxPublicBodies), "public request bodies read at once per API process, all client addresses together; more: 503 with Retry-After", false},
	{"O2I_PUBLIC_PER_ADDR", strconv.Itoa(httpx.DefaultMaxPublicPerAddr), "public requests with a body (the payment webhook) one client address may have in flight at once, body and handling; more: 429 with Retry-After. An IPv6 address counts by its /64; behind a load balancer every client has the balancer's address", false},
	{"O2I_REQUEST_LOG_ANON_RATE", strconv.Itoa(reqlog.DefaultAnonymousRate), "requests without a project (no key, a key that did not authenticate, the public routes) the request log records a second per API process, bursts of as many; the others are only counted (o2i_request_log_sampled_out_total). 0: none is recorded. Requests of a project are always recorded", false},
	{"O2I_TRUSTED_PROXIES", "", "comma-separated addresses or CIDR prefixes of the load balancers in front of the API; from them, the right-most X-Forwarded-For address that is not a trusted proxy is the client that per-address limits count (failed authentications, public bodies); unset: the TCP peer is the client", false},
	{"O2I_LOG_LEVEL", "info", "debug, info, warn or error", false},
	{"O2I_DEBUG_ADDR", "", "when set, serves Go's pprof profiles on this address (keep it private)", false},
	{"O2I_METRICS_ADDR", "", "when set, serves Prometheus metrics at /metrics on this address, apart from the API (keep it internal)", false},
	{"O2I_REQUEST_TIMEOUT", "30s", "deadline of one API request; past it the answer is 503 with Retry-After", false},
	{"O2I_DB_STATEMENT_TIMEOUT", "30s", "PostgreSQL statement_timeout of the service's sessions (0: the server's)", false},
	{"O2I_DB_IDLE_IN_TX_TIMEOUT", "60s", "PostgreSQL idle_in_transaction_session_timeout of the service's sessions (0: the server's)", false},
	{"O2I_SMTP_URL", "smtp://127.0.0.1:22525", "SMTP relay of the invoice e-mail: smtp://user:pass@host:port (STARTTLS when offered) or smtps://...", true},
	{"O2I_STRIPE_API_BASE", "https://api.stripe.com", "base URL of the payment provider's API (Stripe); the local stack's fake in .dev/env", false},
	{"O2I_PROVIDER_TIMEOUT", "5s", "bound of one request of the invoicer to the payment provider's API; past it the event goes to the retry table (a breaker per project stops calling a provider that keeps failing)", false},
	{"O2I_ARCHIVE_TIMEOUT", invoicing.DefaultArchiveTimeout.String(), "bound of one object-store write of the invoicer; past it the event goes to the retry table (a breaker per project stops calling a store that keeps failing for the project's documents)", false},
	{"O2I_MAIL_FROM", "Rechnungsversand <rechnung@localhost>", "sender address of the invoice e-mail (replies go to the project's invoice contact)", false},
	{"O2I_PUBLIC_URL", "http://127.0.0.1:8080", "the service's address as browsers see it (behind the load balancer): the links the console e-mails (invitations, password resets); with https the console's cookies are Secure with the __Host- prefix and it sends HSTS", false},
	{"O2I_MAIL_CONCURRENCY", strconv.Itoa(invoicing.DefaultMailConcurrency), "e-mail deliveries (SMTP sessions) the invoicer role sends at once, each under a claim of its own", false},
	{"O2I_OTLP_ENDPOINT", "", "when set, exports trace spans over OTLP/HTTP to this URL (an OpenTelemetry collector, e.g. http://collector:4318); unset: tracing off", false},
}

func loadConfig(getenv func(string) string) (Config, error) {
	v := func(name string) string {
		if s := getenv(name); s != "" {
			return s
		}
		for _, e := range envVars {
			if e.Name == name {
				return e.Default
			}
		}
		return ""
	}
	var c Config
	var err error
	c.HTTPAddr = v("O2I_HTTP_ADDR")
	c.DatabaseURL = v("O2I_DATABASE_URL")
	if c.DBMaxConns, err = strconv.Atoi(v("O2I_DB_MAX_CONNS")); err != nil || c.DBMaxConns <= 0 {
		return c, fmt.Errorf("O2I_DB_MAX_CONNS must be a positive integer, got %q", v("O2I_DB_MAX_CONNS"))
	}
	c.RedisURL = v("O2I_REDIS_URL")
	for _, b := range strings.Split(v("O2I_KAFKA_BROKERS"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.KafkaBrokers = append(c.KafkaBrokers, b)
		}
	}
	if len(c.KafkaBrokers) == 0 {
		return c, fmt.Errorf("O2I_KAFKA_BROKERS is empty")
	}
	c.S3Endpoint = v("O2I_S3_ENDPOINT")
	c.S3AccessKey = v("O2I_S3_ACCESS_KEY")
	c.S3SecretKey = v("O2I_S3_SECRET_KEY")
	if c.S3UseTLS, err = strconv.ParseBool(v("O2I_S3_USE_TLS")); err != nil {
		return c, fmt.Errorf("O2I_S3_USE_TLS must be true or false, got %q", v("O2I_S3_USE_TLS"))
	}
	c.S3Bucket = v("O2I_S3_BUCKET")
	c.S3TestBucket = v("O2I_S3_TEST_BUCKET")
	if c.S3TestBucket == c.S3Bucket {
		return c, fmt.Errorf("O2I_S3_TEST_BUCKET must differ from O2I_S3_BUCKET (%q): test documents have no retention", c.S3Bucket)
	}
	if c.ShutdownTimeout, err = time.ParseDuration(v("O2I_SHUTDOWN_TIMEOUT")); err != nil {
		return c, fmt.Errorf("O2I_SHUTDOWN_TIMEOUT: %w", err)
	}
	if c.MaxInFlight, err = strconv.Atoi(v("O2I_MAX_IN_FLIGHT")); err != nil || c.MaxInFlight <= 0 {
		return c, fmt.Errorf("O2I_MAX_IN_FLIGHT must be a positive integer, got %q", v("O2I_MAX_IN_FLIGHT"))
	}
	for _, n := range []struct {
		name string
		dst  *int
	}{
		{"O2I_INVOICER_WORKERS", &c.InvoicerWorkers},
		{"O2I_PUBLIC_BODIES", &c.PublicBodies},
		{"O2I_PUBLIC_PER_ADDR", &c.PublicPerAddr},
		{"O2I_MAIL_CONCURRENCY", &c.MailConcurrency},
	} {
		if *n.dst, err = strconv.Atoi(v(n.name)); err != nil || *n.dst <= 0 {
			return c, fmt.Errorf("%s must be a positive integer, got %q", n.name, v(n.name))
		}
	}
	if c.RequestLogAnonRate, err = strconv.Atoi(v("O2I_REQUEST_LOG_ANON_RATE")); err != nil || c.RequestLogAnonRate < 0 {
		return c, fmt.Errorf("O2I_REQUEST_LOG_ANON_RATE must be an integer of at least 0, got %q", v("O2I_REQUEST_LOG_ANON_RATE"))
	}
	c.LogLevel = v("O2I_LOG_LEVEL")
	c.DebugAddr = v("O2I_DEBUG_ADDR")
	c.MetricsAddr = v("O2I_METRICS_ADDR")
	for _, d := range []struct {
		name string
		dst  *time.Duration
		min  time.Duration
	}{
		{"O2I_REQUEST_TIMEOUT", &c.RequestTimeout, time.Second},
		{"O2I_PUBLIC_BODY_TIMEOUT", &c.PublicBodyTimeout, time.Second},
		{"O2I_DB_STATEMENT_TIMEOUT", &c.StatementTimeout, 0},
		{"O2I_DB_IDLE_IN_TX_TIMEOUT", &c.IdleInTxTimeout, 0},
		{"O2I_PROVIDER_TIMEOUT", &c.ProviderTimeout, 100 * time.Millisecond},
		{"O2I_ARCHIVE_TIMEOUT", &c.ArchiveTimeout, 100 * time.Millisecond},
	} {
		if *d.dst, err = time.ParseDuration(v(d.name)); err != nil || *d.dst < d.min {
			return c, fmt.Errorf("%s must be a duration of at least %s, like 30s, got %q", d.name, d.min, v(d.name))
		}
	}
	c.SMTPURL = v("O2I_SMTP_URL")
	c.MailFrom = v("O2I_MAIL_FROM")
	c.StripeAPIBase = v("O2I_STRIPE_API_BASE")
	if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("O2I_STRIPE_API_BASE must be an http(s) URL, got %q", c.StripeAPIBase)
	}
	c.OTLPEndpoint = v("O2I_OTLP_ENDPOINT")
	if c.TrustedProxies, err = httpx.ParseTrustedProxies(v("O2I_TRUSTED_PROXIES")); err != nil {
		return c, fmt.Errorf("O2I_TRUSTED_PROXIES: %w", err)
	}
	if c.OTLPEndpoint != "" {
		if u, err := url.Parse(c.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("O2I_OTLP_ENDPOINT must be an http(s) URL, got %q", c.OTLPEndpoint)
		}
	}
	c.PublicURL = strings.TrimRight(v("O2I_PUBLIC_URL"), "/")
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return c, fmt.Errorf("O2I_PUBLIC_URL must be an http(s) URL without a path, like https://invoices.example.com, got %q", c.PublicURL)
	}
	if _, err := mail.NewSender(c.SMTPURL, c.MailFrom); err != nil {
		return c, fmt.Errorf("O2I_SMTP_URL / O2I_MAIL_FROM: %w", err)
	}
	return c, nil
}
