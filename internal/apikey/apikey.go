// Package apikey creates, lists and revokes API keys and authenticates bearer
// tokens. Keys are stored only as their SHA-256; the full key is shown once.
// It imports internal/apperr, internal/httpx (Principal, Scope),
// internal/store (bounded connection waits) and pgx.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
)

// Key formats. New keys use Prefix; keys issued with the older test and live
// prefixes stay valid unchanged. The secret part is SecretLen base62 characters.
const (
	Prefix       = "o2i_"
	LegacyTest   = "o2i_test_"
	LegacyLive   = "o2i_live_"
	SecretLen    = 40
	shownSecret  = 8 // characters of the secret shown in listings
	unusedWindow = 90 * 24 * time.Hour
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Created is the result of Create; Key is the full key, printed this once.
type Created struct {
	ID        string     `json:"id"`
	Key       string     `json:"key"`
	Prefix    string     `json:"prefix"`
	Name      string     `json:"name"`
	ProjectID string     `json:"projectId"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// Info describes a stored key without its secret.
type Info struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	Unused90d  bool       `json:"unused90d"`
}

// ParseExpiry turns 30d, 90d, 365d or never into a lifetime (0 = never).
func ParseExpiry(s string) (time.Duration, error) {
	switch s {
	case "30d":
		return 30 * 24 * time.Hour, nil
	case "90d":
		return 90 * 24 * time.Hour, nil
	case "365d":
		return 365 * 24 * time.Hour, nil
	case "never", "":
		return 0, nil
	}
	return 0, apperr.Field("expires", "expiry must be 30d, 90d, 365d or never, got %q", s)
}

// ParseScopes checks a comma-separated scope list.
func ParseScopes(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ok := false
		for _, sc := range httpx.Scopes {
			if string(sc) == part {
				ok = true
			}
		}
		if !ok {
			return nil, apperr.Field("scopes", "unknown scope %q (known: orders:write, invoices:read, archive:read)", part)
		}
		if !seen[part] {
			seen[part] = true
			out = append(out, part)
		}
	}
	if len(out) == 0 {
		return nil, apperr.Field("scopes", "at least one scope is required")
	}
	return out, nil
}

// Generate returns a new random key with the given format prefix and the part shown in listings.
func Generate(prefix string) (key, shown string, err error) {
	var b strings.Builder
	b.WriteString(prefix)
	max := big.NewInt(int64(len(base62)))
	for range SecretLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", "", err
		}
		b.WriteByte(base62[n.Int64()])
	}
	key = b.String()
	return key, key[:len(prefix)+shownSecret], nil
}

// wellFormed reports whether key has one of the accepted formats.
func wellFormed(key string) bool {
	var secret string
	switch {
	case strings.HasPrefix(key, LegacyTest):
		secret = key[len(LegacyTest):]
	case strings.HasPrefix(key, LegacyLive):
		secret = key[len(LegacyLive):]
	case strings.HasPrefix(key, Prefix):
		secret = key[len(Prefix):]
	default:
		return false
	}
	if len(secret) != SecretLen {
		return false
	}
	for i := 0; i < len(secret); i++ {
		if !isBase62[secret[i]] {
			return false
		}
	}
	return true
}

// isBase62 says which bytes are base62 characters.
var isBase62 = func() (t [256]bool) {
	for i := 0; i < len(base62); i++ {
		t[base62[i]] = true
	}
	return t
}()

// Hash is the stored form of a key.
func Hash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// Create stores a new key for a project. format is Prefix, or LegacyTest /
// LegacyLive to issue a key in an older format (for migrating integrations).
func Create(ctx context.Context, pool *pgxpool.Pool, projectID string, scopes []string, lifetime time.Duration, name, format string) (Created, error) {
	if format == "" {
		format = Prefix
	}
	if format != Prefix && format != LegacyTest && format != LegacyLive {
		return Created{}, apperr.Field("format", "unknown key format %q", format)
	}
	if _, err := uuid.Parse(projectID); err != nil {
		return Created{}, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	key, shown, err := Generate(format)
	if err != nil {
		return Created{}, err
	}
	c := Created{ID: uuid.New().String(), Key: key, Prefix: shown, Name: name, ProjectID: projectID, Scopes: scopes}
	if lifetime > 0 {
		t := time.Now().Add(lifetime).UTC().Truncate(time.Second)
		c.ExpiresAt = &t
	}
	tag, err := pool.Exec(ctx, `INSERT INTO api_keys (id, project_id, name, prefix, key_hash, scopes, expires_at)
		SELECT $1, id, $3, $4, $5, $6, $7 FROM projects WHERE id = $2`,
		c.ID, projectID, name, shown, Hash(key), scopes, c.ExpiresAt)
	if err != nil {
		return Created{}, fmt.Errorf("create key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return Created{}, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	return c, nil
}

// List returns the keys of a project, newest first.
func List(ctx context.Context, pool *pgxpool.Pool, projectID string, now time.Time) ([]Info, error) {
	if _, err := uuid.Parse(projectID); err != nil {
		return nil, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	rows, err := pool.Query(ctx, `SELECT id::text, name, prefix, scopes, created_at, last_used_at, expires_at, revoked_at
		FROM api_keys WHERE project_id = $1 ORDER BY created_at DESC, id`, projectID)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Info, error) {
		var i Info
		err := row.Scan(&i.ID, &i.Name, &i.Prefix, &i.Scopes, &i.CreatedAt, &i.LastUsedAt, &i.ExpiresAt, &i.RevokedAt)
		last := i.CreatedAt
		if i.LastUsedAt != nil {
			last = *i.LastUsedAt
		}
		i.Unused90d = now.Sub(last) > unusedWindow
		return i, err
	})
	if out == nil {
		out = []Info{}
	}
	return out, err
}

// Revoke revokes a key at once (authenticators notice within CacheTTL).
func Revoke(ctx context.Context, pool *pgxpool.Pool, keyID string) (Info, error) {
	if _, err := uuid.Parse(keyID); err != nil {
		return Info{}, apperr.New(apperr.NotFound, "key_not_found", "no key %q", keyID)
	}
	var i Info
	err := pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
		RETURNING id::text, name, prefix, scopes, created_at, last_used_at, expires_at, revoked_at`, keyID).
		Scan(&i.ID, &i.Name, &i.Prefix, &i.Scopes, &i.CreatedAt, &i.LastUsedAt, &i.ExpiresAt, &i.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Info{}, apperr.New(apperr.NotFound, "key_not_found", "no key %q", keyID)
	}
	return i, err
}

// equalHash compares two hashes in constant time.
func equalHash(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// RevokeIn revokes a key of the project; a key of another project is
// key_not_found, as an unknown one.
func RevokeIn(ctx context.Context, pool *pgxpool.Pool, projectID, keyID string) (Info, error) {
	if _, err := uuid.Parse(keyID); err != nil {
		return Info{}, apperr.New(apperr.NotFound, "key_not_found", "no key %q", keyID)
	}
	if _, err := uuid.Parse(projectID); err != nil {
		return Info{}, apperr.New(apperr.NotFound, "key_not_found", "no key %q", keyID)
	}
	var i Info
	err := pool.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND project_id = $2
		RETURNING id::text, name, prefix, scopes, created_at, last_used_at, expires_at, revoked_at`, keyID, projectID).
		Scan(&i.ID, &i.Name, &i.Prefix, &i.Scopes, &i.CreatedAt, &i.LastUsedAt, &i.ExpiresAt, &i.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Info{}, apperr.New(apperr.NotFound, "key_not_found", "no key %q", keyID)
	}
	return i, err
}

// Rotate replaces a live key of the project by a new one with the same
// name, scopes and lifetime (counted from now), and revokes the old one, in
// one transaction. The new key is shown this once.
func Rotate(ctx context.Context, pool *pgxpool.Pool, projectID, keyID string) (Created, Info, error) {
	notFound := apperr.New(apperr.NotFound, "key_not_found", "no live key %q", keyID)
	if _, err := uuid.Parse(keyID); err != nil {
		return Created{}, Info{}, notFound
	}
	if _, err := uuid.Parse(projectID); err != nil {
		return Created{}, Info{}, notFound
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return Created{}, Info{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var old Info
	err = tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL
		AND (expires_at IS NULL OR expires_at > now())
		RETURNING id::text, name, prefix, scopes, created_at, last_used_at, expires_at, revoked_at`, keyID, projectID).
		Scan(&old.ID, &old.Name, &old.Prefix, &old.Scopes, &old.CreatedAt, &old.LastUsedAt, &old.ExpiresAt, &old.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Created{}, Info{}, notFound
	}
	if err != nil {
		return Created{}, Info{}, err
	}
	format := Prefix
	for _, p := range []string{LegacyTest, LegacyLive} {
		if strings.HasPrefix(old.Prefix, p) {
			format = p
		}
	}
	key, shown, err := Generate(format)
	if err != nil {
		return Created{}, Info{}, err
	}
	c := Created{ID: uuid.New().String(), Key: key, Prefix: shown, Name: old.Name, ProjectID: projectID, Scopes: old.Scopes}
	if old.ExpiresAt != nil {
		t := time.Now().Add(old.ExpiresAt.Sub(old.CreatedAt)).UTC().Truncate(time.Second)
		c.ExpiresAt = &t
	}
	if _, err := tx.Exec(ctx, `INSERT INTO api_keys (id, project_id, name, prefix, key_hash, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		c.ID, projectID, c.Name, shown, Hash(key), c.Scopes, c.ExpiresAt); err != nil {
		return Created{}, Info{}, fmt.Errorf("rotate key: %w", err)
	}
	return c, old, tx.Commit(ctx)
}
