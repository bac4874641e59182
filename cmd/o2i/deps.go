package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/store"
)

// deps are the connections to the four backing services.
type deps struct {
	cfg   Config
	pool  *pgxpool.Pool
	redis *redis.Client
	s3    *minio.Client
}

// connect opens every dependency and fails fast with one line naming the
// first one that is missing or unreachable.
func connect(ctx context.Context, cfg Config) (*deps, error) {
	d := &deps{cfg: cfg}
	var err error
	if d.pool, err = store.Open(ctx, cfg.DatabaseURL, int32(cfg.DBMaxConns),
		store.StatementTimeout(cfg.StatementTimeout), store.IdleInTransactionTimeout(cfg.IdleInTxTimeout)); err != nil {
		return nil, fmt.Errorf("dependency PostgreSQL (O2I_DATABASE_URL): %w", err)
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("dependency Redis (O2I_REDIS_URL): %w", err)
	}
	opt.PoolSize = 64
	opt.ContextTimeoutEnabled = true // a caller's deadline bounds every Redis call
	d.redis = redis.NewClient(opt)
	if err := d.checkRedis(ctx); err != nil {
		d.close()
		return nil, fmt.Errorf("dependency Redis at %s (O2I_REDIS_URL) unreachable: %w", opt.Addr, err)
	}
	if err := d.checkKafka(ctx); err != nil {
		d.close()
		return nil, fmt.Errorf("dependency Kafka at %v (O2I_KAFKA_BROKERS) unreachable: %w", cfg.KafkaBrokers, err)
	}
	transport, err := minio.DefaultTransport(cfg.S3UseTLS)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("dependency S3 (O2I_S3_ENDPOINT): %w", err)
	}
	// minio-go retries a failed request 10 times with growing waits by
	// default (minutes against a store that is down): the callers retry on
	// their own schedule, so a call gives up after a few tries, and an
	// answer that does not start within 30 s is a failure.
	transport.ResponseHeaderTimeout = 30 * time.Second
	d.s3, err = minio.New(cfg.S3Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(cfg.S3AccessKey, cfg.S3SecretKey, ""),
		Secure:     cfg.S3UseTLS,
		Transport:  transport,
		MaxRetries: 3,
	})
	if err != nil {
		d.close()
		return nil, fmt.Errorf("dependency S3 (O2I_S3_ENDPOINT): %w", err)
	}
	if err := d.checkS3(ctx); err != nil {
		d.close()
		return nil, fmt.Errorf("dependency S3 at %s (O2I_S3_ENDPOINT) unreachable: %w", cfg.S3Endpoint, err)
	}
	live, test := archive.New(d.s3, cfg.S3Bucket).EnsureBucket, archive.NewTest(d.s3, cfg.S3TestBucket).EnsureTestBucket
	if cfg.archiveReadOnly {
		live, test = archive.New(d.s3, cfg.S3Bucket).CheckBucket, archive.NewTest(d.s3, cfg.S3TestBucket).CheckBucket
	}
	if err := withTimeout(ctx, live); err != nil {
		d.close()
		return nil, fmt.Errorf("dependency S3 archive bucket (O2I_S3_BUCKET): %w", err)
	}
	if err := withTimeout(ctx, test); err != nil {
		d.close()
		return nil, fmt.Errorf("dependency S3 test bucket (O2I_S3_TEST_BUCKET): %w", err)
	}
	return d, nil
}

func (d *deps) close() {
	if d.redis != nil {
		d.redis.Close()
	}
	if d.pool != nil {
		d.pool.Close()
	}
}

func withTimeout(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return f(ctx)
}

func (d *deps) checkDB(ctx context.Context) error {
	return withTimeout(ctx, func(ctx context.Context) error {
		var one int
		return d.pool.QueryRow(ctx, "SELECT 1").Scan(&one)
	})
}

func (d *deps) checkRedis(ctx context.Context) error {
	return withTimeout(ctx, func(ctx context.Context) error { return d.redis.Ping(ctx).Err() })
}

func (d *deps) checkKafka(ctx context.Context) error {
	return withTimeout(ctx, func(ctx context.Context) error {
		var last error
		for _, b := range d.cfg.KafkaBrokers {
			conn, err := (&kafka.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", b)
			if err != nil {
				last = err
				continue
			}
			_, err = conn.Brokers()
			conn.Close()
			if err == nil {
				return nil
			}
			last = err
		}
		return last
	})
}

func (d *deps) checkS3(ctx context.Context) error {
	return withTimeout(ctx, func(ctx context.Context) error {
		_, err := d.s3.BucketExists(ctx, d.cfg.S3Bucket)
		if e, ok := err.(*url.Error); ok {
			return e.Err
		}
		return err
	})
}

// health runs every check at once; results are cached for a second so that a
// load balancer polling many replicas cannot overload the dependencies.
type health struct {
	d   *deps
	mu  sync.Mutex
	at  time.Time
	res map[string]bool
}

func (h *health) check(ctx context.Context) map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.at) < time.Second && h.res != nil {
		return h.res
	}
	checks := map[string]func(context.Context) error{
		"db": h.d.checkDB, "redis": h.d.checkRedis, "kafka": h.d.checkKafka, "s3": h.d.checkS3,
	}
	res := make(map[string]bool, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, f := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok := f(ctx) == nil
			mu.Lock()
			res[name] = ok
			mu.Unlock()
		}()
	}
	wg.Wait()
	h.res, h.at = res, time.Now()
	return res
}
