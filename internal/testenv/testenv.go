// Package testenv connects tests to the local stack (PostgreSQL, Redis, the
// Kafka-protocol broker, MinIO, the SMTP sink) that `make test` brings up, using the same
// O2I_* variables and defaults as the service. A missing service fails the
// test; it is never skipped. Only tests import this package.
package testenv

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// Defaults mirror the service's configuration defaults (the local stack).
var defaults = map[string]string{
	"O2I_DATABASE_URL":    "postgres://o2i:o2i@127.0.0.1:25432/o2i?sslmode=disable",
	"O2I_REDIS_URL":       "redis://127.0.0.1:26379/0",
	"O2I_KAFKA_BROKERS":   "127.0.0.1:29092",
	"O2I_S3_ENDPOINT":     "127.0.0.1:29000",
	"O2I_S3_ACCESS_KEY":   "o2i-dev",
	"O2I_S3_SECRET_KEY":   "o2i-dev-secret",
	"O2I_S3_BUCKET":       "o2i-archive",
	"O2I_S3_TEST_BUCKET":  "o2i-archive-test",
	"O2I_SMTP_URL":        "smtp://127.0.0.1:22525",
	"O2I_STRIPE_API_BASE": "http://127.0.0.1:22112",
}

// Env returns the variable or its local-stack default.
func Env(name string) string {
	v := os.Getenv(name)
	if v != "" && sideListeners[name] {
		// A test never binds a fixed side port: the service of `make run`
		// may hold it beside `make test`.
		return "127.0.0.1:0"
	}
	if v != "" {
		return v
	}
	return defaults[name]
}

// sideListeners are the addresses of listeners besides the API's (metrics,
// profiles), which tests open on a free port.
var sideListeners = map[string]bool{"O2I_METRICS_ADDR": true, "O2I_DEBUG_ADDR": true}

// Getenv is Env as a function value, for code that takes a getenv.
func Getenv(name string) string { return Env(name) }

// KafkaBrokers returns the broker list.
func KafkaBrokers() []string { return strings.Split(Env("O2I_KAFKA_BROKERS"), ",") }

var (
	migrateOnce sync.Once
	migrateErr  error
)

// Pool returns a migrated connection pool, closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := store.Open(ctx, Env("O2I_DATABASE_URL"), 16)
	if err != nil {
		t.Fatalf("PostgreSQL of the local stack is required (run `make test`): %v", err)
	}
	migrateOnce.Do(func() { _, migrateErr = store.Migrate(ctx, pool) })
	if migrateErr != nil {
		pool.Close()
		t.Fatalf("migrate: %v", migrateErr)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Redis returns a client of the local stack's Redis, closed when the test ends.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(Env("O2I_REDIS_URL"))
	if err != nil {
		t.Fatalf("O2I_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis of the local stack is required (run `make test`): %v", err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Project creates a fresh project with complete demo seller data and returns its id.
func Project(t testing.TB, pool *pgxpool.Pool, testMode bool) string {
	t.Helper()
	ctx := context.Background()
	p, err := project.Create(ctx, pool, "test "+uuid.NewString()[:8], testMode, project.Accrual)
	if err != nil {
		t.Fatalf("create project: %v", err)
	}
	_, err = project.Apply(ctx, pool, p.ID, project.Update{Settings: func(s *project.Settings) {
		*s = DemoSeller()
	}})
	if err != nil {
		t.Fatalf("set project: %v", err)
	}
	return p.ID
}

// DemoSeller is complete seller data, enough for every kind of invoice.
func DemoSeller() project.Settings {
	return project.Settings{
		SellerName: "Muster Handel GmbH", SellerStreet: "Hauptstraße 1", SellerPostalCode: "10115",
		SellerCity: "Berlin", SellerCountry: "DE", SellerVATID: "DE123456789", SellerTaxNumber: "30/123/45678",
		SellerIBAN: "DE02120300000000202051", SellerBIC: "BYLADEM1001",
		ContactName: "Erika Mustermann", ContactPhone: "+49 30 1234567", ContactEmail: "rechnung@example.com",
	}
}

// Key creates an API key of the project with the scopes and returns the full key.
func Key(t testing.TB, pool *pgxpool.Pool, projectID string, scopes ...string) string {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{"orders:write", "invoices:read"}
	}
	c, err := apikey.Create(context.Background(), pool, projectID, scopes, 0, "test", apikey.Prefix)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return c.Key
}

// S3 returns a client of the local stack's MinIO.
func S3(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(Env("O2I_S3_ENDPOINT"), &minio.Options{
		Creds: credentials.NewStaticV4(Env("O2I_S3_ACCESS_KEY"), Env("O2I_S3_SECRET_KEY"), ""),
	})
	if err != nil {
		t.Fatalf("O2I_S3_ENDPOINT: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.ListBuckets(ctx); err != nil {
		t.Fatalf("MinIO of the local stack is required (run `make test`): %v", err)
	}
	return c
}
