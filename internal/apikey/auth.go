package apikey

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/store"
)

// CacheTTL is how long an authenticator trusts what it read about a key: a
// revocation or a project's new rate limit takes effect within this time.
const CacheTTL = 5 * time.Second

// UnknownCacheSize is how many made-up keys an authenticator remembers as
// unknown (least recently used first out). They are kept apart from the
// real keys, so a flood of made-up keys cannot push the real ones out.
const UnknownCacheSize = 16384

// Authenticator resolves bearer keys against the database, caching each key
// for CacheTTL and recording last use in batches off the request path.
type Authenticator struct {
	pool *pgxpool.Pool
	now  func() time.Time

	mu      sync.Mutex
	cache   map[[sha256.Size]byte]cached // keys that exist, by key hash
	unknown *lru.Cache[[sha256.Size]byte, time.Time]
	used    map[string]time.Time
}

type cached struct {
	hash      []byte
	p         httpx.Principal
	expiresAt *time.Time
	revoked   bool
	unknown   bool
	fetched   time.Time
}

// NewAuthenticator returns an authenticator over pool.
func NewAuthenticator(pool *pgxpool.Pool) *Authenticator {
	unknown, _ := lru.New[[sha256.Size]byte, time.Time](UnknownCacheSize)
	return &Authenticator{pool: pool, now: time.Now, cache: map[[sha256.Size]byte]cached{}, unknown: unknown, used: map[string]time.Time{}}
}

func unauthorized(msg string) error {
	return apperr.New(apperr.Unauthenticated, "unauthorized", "%s", msg)
}

// Authenticate implements httpx.Authenticator. A key cached within
// CacheTTL costs one hash, one map look-up and one lock.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (httpx.Principal, error) {
	if !wellFormed(token) {
		return httpx.Principal{}, unauthorized("malformed API key")
	}
	k := keyHash(token)
	now := a.now()
	a.mu.Lock()
	c, ok := a.cache[k]
	fresh := ok && now.Sub(c.fetched) <= CacheTTL
	if fresh && c.usable(now) {
		a.used[c.p.KeyID] = now
		a.mu.Unlock()
		return c.p, nil
	}
	a.mu.Unlock()
	if !fresh {
		if at, ok := a.unknown.Get(k); ok && now.Sub(at) <= CacheTTL {
			return httpx.Principal{}, unauthorized("unknown API key")
		}
		var err error
		h := k // a copy the loaded entry keeps (k itself stays on the stack)
		c, err = a.load(ctx, h[:])
		if err != nil {
			return httpx.Principal{}, err
		}
		c.fetched = now
		if c.unknown {
			a.unknown.Add(k, now)
			a.mu.Lock()
			delete(a.cache, k) // deleted since it was cached
			a.mu.Unlock()
			return httpx.Principal{}, unauthorized("unknown API key")
		}
		a.mu.Lock()
		a.cache[k] = c
		a.mu.Unlock()
	}
	switch {
	case c.unknown || !equalHash(c.hash, k[:]):
		return httpx.Principal{}, unauthorized("unknown API key")
	case c.revoked:
		return httpx.Principal{}, unauthorized("API key revoked")
	case c.expiresAt != nil && !now.Before(*c.expiresAt):
		return httpx.Principal{}, unauthorized("API key expired")
	}
	a.mu.Lock()
	a.used[c.p.KeyID] = now
	a.mu.Unlock()
	return c.p, nil
}

// usable reports whether a cached key may authenticate at now: it exists,
// is not revoked and has not expired.
func (c cached) usable(now time.Time) bool {
	return !c.unknown && !c.revoked && (c.expiresAt == nil || now.Before(*c.expiresAt))
}

// Known implements httpx.KnownKeys: token is a key that authenticated
// before (it is in the cache of existing keys, however old the entry), so
// looking it up costs no made-up-key query. Revoked and expired keys are
// still refused by Authenticate.
func (a *Authenticator) Known(token string) bool {
	if !wellFormed(token) {
		return false
	}
	a.mu.Lock()
	c, ok := a.cache[keyHash(token)]
	a.mu.Unlock()
	return ok && !c.unknown
}

// keyHash is the SHA-256 of a key. A key of up to 128 bytes is hashed
// from a copy on the stack: converting the string to a []byte would
// allocate one for every request.
func keyHash(token string) [sha256.Size]byte {
	var buf [128]byte
	if len(token) <= len(buf) {
		return sha256.Sum256(append(buf[:0], token...))
	}
	return sha256.Sum256([]byte(token))
}

func (a *Authenticator) load(ctx context.Context, h []byte) (cached, error) {
	c := cached{hash: h}
	var revokedAt *time.Time
	var scopes []string
	err := store.QueryRow(ctx, a.pool, `SELECT k.id::text, k.project_id::text, k.prefix, k.scopes, k.expires_at, k.revoked_at,
			p.rate_limit_rps, p.rate_limit_burst
		FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.key_hash = $1`, h).
		Scan(&c.p.KeyID, &c.p.ProjectID, &c.p.KeyPrefix, &scopes, &c.expiresAt, &revokedAt, &c.p.RateLimit.Rate, &c.p.RateLimit.Burst)
	if errors.Is(err, pgx.ErrNoRows) {
		c.unknown = true
		return c, nil
	}
	if err != nil {
		return c, err
	}
	c.revoked = revokedAt != nil
	for _, s := range scopes {
		c.p.Scopes = append(c.p.Scopes, httpx.Scope(s))
	}
	return c, nil
}

// FlushLastUsed writes the collected last-use times in one statement.
func (a *Authenticator) FlushLastUsed(ctx context.Context) error {
	a.mu.Lock()
	used := a.used
	a.used = map[string]time.Time{}
	a.mu.Unlock()
	if len(used) == 0 {
		return nil
	}
	ids := make([]string, 0, len(used))
	ats := make([]time.Time, 0, len(used))
	for id, at := range used {
		ids = append(ids, id)
		ats = append(ats, at)
	}
	_, err := a.pool.Exec(ctx, `UPDATE api_keys k SET last_used_at = u.at
		FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at)
		WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, ids, ats)
	return err
}

// Run flushes last-use times every interval until ctx ends, then once more.
func (a *Authenticator) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := a.FlushLastUsed(fctx); err != nil {
				slog.Warn("api keys: flush last use", "err", err)
			}
			cancel()
			return
		case <-t.C:
			if err := a.FlushLastUsed(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("api keys: flush last use", "err", err)
			}
		}
	}
}
