// Package store owns the PostgreSQL connection pool, the transaction helper,
// the mapping of PostgreSQL error codes and the embedded, versioned SQL
// migrations. It imports internal/apperr and pgx; nothing of the domain.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/o2i-service/o2i/internal/apperr"
)

//go:embed migrations/*.sql
var migrations embed.FS

// AcquireTimeout bounds how long a request waits for a pooled connection
// before it is answered 503 with Retry-After instead of hanging.
const AcquireTimeout = 2 * time.Second

// Option sets a session parameter of every connection of a pool.
type Option func(*pgxpool.Config)

// StatementTimeout ends any statement of the pool's sessions that runs
// longer than d (PostgreSQL's statement_timeout; 0 leaves the server's).
func StatementTimeout(d time.Duration) Option {
	return sessionParam("statement_timeout", d)
}

// IdleInTransactionTimeout ends a session of the pool that keeps a
// transaction open without a statement for longer than d, so that a
// forgotten transaction cannot hold back the outbox relay or VACUUM
// (PostgreSQL's idle_in_transaction_session_timeout; 0 leaves the server's).
func IdleInTransactionTimeout(d time.Duration) Option {
	return sessionParam("idle_in_transaction_session_timeout", d)
}

func sessionParam(name string, d time.Duration) Option {
	return func(c *pgxpool.Config) {
		if d > 0 {
			c.ConnConfig.RuntimeParams[name] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
}

// LocalStatementTimeout raises (or lowers) the statement_timeout for the
// rest of tx, for the few transactions, such as exports, whose statements
// may run longer than the pool's StatementTimeout.
func LocalStatementTimeout(ctx context.Context, tx pgx.Tx, d time.Duration) error {
	_, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, strconv.FormatInt(d.Milliseconds(), 10))
	return err
}

// Open connects a pool to url and checks that the database answers.
func Open(ctx context.Context, url string, maxConns int32, opts ...Option) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse O2I_DATABASE_URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	for _, o := range opts {
		o(cfg)
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	cfg.ConnConfig.Tracer = roundTripTracer{}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerUUIDStrings(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres at %s:%d unreachable: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// Migrate applies every embedded migration not yet applied. Concurrent
// callers serialise on a PostgreSQL advisory lock.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrate(ctx, db)
}

func migrate(ctx context.Context, db *sql.DB) ([]string, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, mustSub(migrations, "migrations"), goose.WithSessionLocker(locker), goose.WithAllowOutofOrder(true))
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	res, err := p.Up(ctx)
	var applied []string
	for _, r := range res {
		applied = append(applied, r.Source.Path)
	}
	if err != nil {
		return applied, fmt.Errorf("migrate: %w", err)
	}
	return applied, nil
}

// WithTx runs fn in one transaction: committed when fn returns nil, rolled
// back otherwise. It does not retry, so fn may have effects outside the
// transaction only if they are idempotent.
func WithTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) (err error) {
	conn, err := Acquire(ctx, pool)
	if err != nil {
		return err
	}
	defer conn.Release()
	return pgx.BeginFunc(ctx, conn, fn)
}

// Acquire takes a pooled connection, waiting at most AcquireTimeout; when the
// pool stays exhausted it returns an apperr Unavailable error (HTTP 503).
func Acquire(ctx context.Context, pool *pgxpool.Pool) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, AcquireTimeout)
	defer cancel()
	conn, err := pool.Acquire(actx)
	if err != nil {
		if ctx.Err() == nil {
			return nil, &apperr.Error{Kind: apperr.Unavailable, Code: "unavailable",
				Message: "database busy, retry later", RetryAfter: time.Second, Err: err}
		}
		return nil, err
	}
	return conn, nil
}

// IsUniqueViolation reports whether err is PostgreSQL's 23505, optionally on
// the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}

// Query runs sql on a connection taken with Acquire (so waiting for one is
// bounded by AcquireTimeout, then an apperr Unavailable error); the
// connection goes back to the pool when the rows are closed or read to the
// end. Request paths read with it instead of pool.Query, whose wait for a
// connection is bounded only by ctx.
func Query(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (pgx.Rows, error) {
	conn, err := Acquire(ctx, pool)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		conn.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, conn: conn}, nil
}

// QueryRow is Query for one row, with pgx.Row's semantics: Scan returns
// pgx.ErrNoRows when there is none.
func QueryRow(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) pgx.Row {
	rows, err := Query(ctx, pool, sql, args...)
	return &oneRow{rows: rows, err: err}
}

type releasingRows struct {
	pgx.Rows
	conn *pgxpool.Conn
	once sync.Once
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	r.once.Do(r.conn.Release)
}

func (r *releasingRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type oneRow struct {
	rows pgx.Rows
	err  error
}

func (r *oneRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
