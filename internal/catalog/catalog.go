// Package catalog is the product catalogue of a project. Every order line is
// bound to one catalogue product, created on first sight:
//
//  1. with a productId (the caller's article id) by that id, even when the
//     line's name or SKU change later;
//  2. otherwise by SKU;
//  3. otherwise by the exact name.
//
// Different productIds are different products even with equal names.
// Products carry the settings invoicing needs later: the revenue recognition
// default and the default VAT rate. Products are never deleted, so ids are
// cached in memory. It imports internal/apperr, internal/money, internal/store
// (bounded connection waits) and pgx.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/store"
)

// Match kinds: how a line found its product.
const (
	ByProductID = "product_id"
	BySKU       = "sku"
	ByName      = "name"
)

// Revenue recognition defaults of a product.
const (
	RecognizeImmediately = "immediate" // revenue at the date of supply
	RecognizeSaaS        = "saas"      // deferred over the service period (default: DefaultPeriodMonths)
)

// Line is what identifies an order line's product.
type Line struct {
	ProductID string // the caller's article id; "" when not sent
	SKU       string
	Name      string
}

// Key is the catalogue key of a line: the first of productId, SKU and name
// that is present.
type Key struct {
	Kind  string
	Value string
}

// KeyOf returns the catalogue key of l.
func KeyOf(l Line) Key {
	switch {
	case l.ProductID != "":
		return Key{ByProductID, l.ProductID}
	case l.SKU != "":
		return Key{BySKU, l.SKU}
	default:
		return Key{ByName, l.Name}
	}
}

// Product is one catalogue entry.
type Product struct {
	ID                  string
	ProjectID           string
	MatchKind           string
	MatchValue          string
	Name                string // the name of the line that created it
	SKU                 string
	ExternalID          string         // the caller's productId
	RevenueRecognition  string         // "", immediate or saas
	DefaultPeriodMonths *int           // for saas
	DefaultTaxRate      *money.Decimal // percent; nil: not set
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Catalog resolves lines to products, caching the ids it has seen.
type Catalog struct {
	pool *pgxpool.Pool

	mu    sync.RWMutex
	cache map[cacheKey]string
}

type cacheKey struct {
	project string
	Key
}

const maxCached = 200_000

// New returns the catalogue over pool.
func New(pool *pgxpool.Pool) *Catalog {
	return &Catalog{pool: pool, cache: make(map[cacheKey]string)}
}

// Resolve returns the product id of every line (in order), creating the
// products not yet known. It is safe against concurrent callers: the same key
// always yields the same product.
func (c *Catalog) Resolve(ctx context.Context, projectID string, lines []Line) ([]string, error) {
	ids := make([]string, len(lines))
	var missing []Key
	seen := map[Key]bool{}
	c.mu.RLock()
	for i, l := range lines {
		k := KeyOf(l)
		if id, ok := c.cache[cacheKey{projectID, k}]; ok {
			ids[i] = id
		} else if !seen[k] {
			seen[k] = true
			missing = append(missing, k)
		}
	}
	c.mu.RUnlock()
	if len(missing) == 0 {
		return ids, nil
	}
	found, err := c.ensure(ctx, projectID, lines, missing)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.cache)+len(found) > maxCached {
		clear(c.cache)
	}
	for k, id := range found {
		c.cache[cacheKey{projectID, k}] = id
	}
	c.mu.Unlock()
	for i, l := range lines {
		if ids[i] == "" {
			ids[i] = found[KeyOf(l)]
			if ids[i] == "" {
				return nil, fmt.Errorf("catalog: product %v not resolved", KeyOf(l))
			}
		}
	}
	return ids, nil
}

// ensure inserts the missing keys (in a fixed order, so that concurrent
// callers cannot deadlock) and reads back every id.
func (c *Catalog) ensure(ctx context.Context, projectID string, lines []Line, keys []Key) (map[Key]string, error) {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Kind != keys[j].Kind {
			return keys[i].Kind < keys[j].Kind
		}
		return keys[i].Value < keys[j].Value
	})
	first := map[Key]Line{}
	for _, l := range lines {
		if _, ok := first[KeyOf(l)]; !ok {
			first[KeyOf(l)] = l
		}
	}
	n := len(keys)
	pids, kinds, values, names, skus, exts := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
	for i, k := range keys {
		l := first[k]
		pids[i] = uuid.NewString()
		kinds[i], values[i], names[i] = k.Kind, k.Value, l.Name
		if l.SKU != "" {
			skus[i] = &l.SKU
		}
		if l.ProductID != "" {
			exts[i] = &l.ProductID
		}
	}
	found := make(map[Key]string, n)
	rows, err := store.Query(ctx, c.pool, `INSERT INTO products (id, project_id, match_kind, match_value, name, sku, external_id)
SELECT t.id, $1, t.k, t.v, t.n, t.s, t.e
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS t(id, k, v, n, s, e)
ON CONFLICT (project_id, match_kind, match_value) DO NOTHING
RETURNING match_kind, match_value, id::text`, projectID, pids, kinds, values, names, skus, exts)
	if err != nil {
		return nil, fmt.Errorf("catalog: insert products: %w", err)
	}
	if err := collect(rows, found); err != nil {
		return nil, err
	}
	if len(found) < n {
		// Existing products (or ones a concurrent request just committed).
		rows, err := store.Query(ctx, c.pool, `SELECT p.match_kind, p.match_value, p.id::text FROM products p
JOIN unnest($2::text[], $3::text[]) AS t(k, v) ON p.match_kind = t.k AND p.match_value = t.v
WHERE p.project_id = $1`, projectID, kinds, values)
		if err != nil {
			return nil, fmt.Errorf("catalog: read products: %w", err)
		}
		if err := collect(rows, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func collect(rows pgx.Rows, into map[Key]string) error {
	defer rows.Close()
	for rows.Next() {
		var k Key
		var id string
		if err := rows.Scan(&k.Kind, &k.Value, &id); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		into[k] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}

const productColumns = `id::text, project_id::text, match_kind, match_value, name, coalesce(sku, ''), coalesce(external_id, ''),
coalesce(revenue_recognition, ''), default_period_months, default_tax_rate::text, created_at, updated_at`

func scanProduct(row pgx.Row) (Product, error) {
	var p Product
	var rate *string
	err := row.Scan(&p.ID, &p.ProjectID, &p.MatchKind, &p.MatchValue, &p.Name, &p.SKU, &p.ExternalID,
		&p.RevenueRecognition, &p.DefaultPeriodMonths, &rate, &p.CreatedAt, &p.UpdatedAt)
	if err != nil {
		return Product{}, err
	}
	if rate != nil {
		d, err := money.ParseDecimal(*rate)
		if err != nil {
			return Product{}, fmt.Errorf("catalog: default_tax_rate %q: %w", *rate, err)
		}
		p.DefaultTaxRate = &d
	}
	return p, nil
}

// Get returns a product of the project; apperr NotFound (product_not_found) if there is none.
func Get(ctx context.Context, q Querier, projectID, id string) (Product, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Product{}, apperr.New(apperr.NotFound, "product_not_found", "no product %s", id)
	}
	p, err := scanProduct(q.QueryRow(ctx, `SELECT `+productColumns+` FROM products WHERE project_id = $1 AND id = $2`, projectID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Product{}, apperr.New(apperr.NotFound, "product_not_found", "no product %s", id)
	}
	return p, err
}

// FindByProductID returns the project's product bound to the caller's article
// id productID; apperr NotFound (product_not_found) if no order line has
// named it yet.
func FindByProductID(ctx context.Context, q Querier, projectID, productID string) (Product, error) {
	p, err := scanProduct(q.QueryRow(ctx, `SELECT `+productColumns+` FROM products
WHERE project_id = $1 AND match_kind = $2 AND match_value = $3`, projectID, ByProductID, productID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Product{}, apperr.New(apperr.NotFound, "product_not_found", "no product with productId %q in this project (products are created by the first order line naming them)", productID)
	}
	return p, err
}

// List returns the project's products in creation order.
func List(ctx context.Context, q Querier, projectID string) ([]Product, error) {
	rows, err := q.Query(ctx, `SELECT `+productColumns+` FROM products WHERE project_id = $1 ORDER BY created_at, id`, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ps []Product
	for rows.Next() {
		p, err := scanProduct(rows)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

// Settings are the invoicing defaults of a product; nil fields stay unchanged.
type Settings struct {
	RevenueRecognition  *string        // "" clears; immediate or saas
	DefaultPeriodMonths *int           // 0 clears
	DefaultTaxRate      *money.Decimal // negative is invalid
	ClearTaxRate        bool
}

// Querier is what Get and List read through: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Configure changes a product's invoicing defaults and returns it. Invalid
// values are apperr Validation errors naming the setting.
func Configure(ctx context.Context, pool *pgxpool.Pool, projectID, id string, s Settings) (Product, error) {
	if s.RevenueRecognition != nil {
		switch *s.RevenueRecognition {
		case "", RecognizeImmediately, RecognizeSaaS:
		default:
			return Product{}, apperr.Field("revenueRecognition", "must be immediate, saas or empty")
		}
	}
	if s.DefaultPeriodMonths != nil && *s.DefaultPeriodMonths < 0 {
		return Product{}, apperr.Field("defaultPeriodMonths", "must not be negative")
	}
	if s.DefaultTaxRate != nil && s.DefaultTaxRate.Sign() < 0 {
		return Product{}, apperr.Field("defaultTaxRate", "must not be negative")
	}
	if _, err := Get(ctx, pool, projectID, id); err != nil {
		return Product{}, err
	}
	var rr *string
	setRR := s.RevenueRecognition != nil
	if setRR && *s.RevenueRecognition != "" {
		rr = s.RevenueRecognition
	}
	var months *int
	setMonths := s.DefaultPeriodMonths != nil
	if setMonths && *s.DefaultPeriodMonths > 0 {
		months = s.DefaultPeriodMonths
	}
	var rate *string
	setRate := s.DefaultTaxRate != nil || s.ClearTaxRate
	if s.DefaultTaxRate != nil {
		r := s.DefaultTaxRate.String()
		rate = &r
	}
	// A revenue recognition set fixes the cause of the task that holds the
	// product's orders: reported fixed in the same statement (one
	// transaction), the invoicer then releases them.
	return scanProduct(pool.QueryRow(ctx, `WITH p AS (UPDATE products SET
  revenue_recognition = CASE WHEN $3 THEN $4 ELSE revenue_recognition END,
  default_period_months = CASE WHEN $5 THEN $6 ELSE default_period_months END,
  default_tax_rate = CASE WHEN $7 THEN $8::numeric ELSE default_tax_rate END,
  updated_at = now()
WHERE project_id = $1 AND id = $2
RETURNING *), fixed AS (
INSERT INTO cause_fixes (task_id, project_id, reason)
SELECT t.id, t.project_id, 'product revenue recognition set' FROM tasks t, p
 WHERE t.project_id = $1 AND t.status = 'open' AND t.kind = 'product_without_revenue_recognition' AND t.subject = $9
   AND p.revenue_recognition IS NOT NULL
ON CONFLICT (task_id) DO UPDATE SET fixed_at = now(), reason = excluded.reason)
SELECT `+productColumns+` FROM p`, projectID, id, setRR, rr, setMonths, months, setRate, rate, HoldSubject(id)))
}

// HoldSubject is the subject of the task that holds the orders of product
// id (catalogue id) for its missing revenue recognition: one open task per
// project and product.
func HoldSubject(id string) string { return "product:" + id }
