package query

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/store"
)

// Products: GET /v1/products lists the project's catalogue, so that
// products an order line matched by sku or name (no productId) can be found
// and configured by their id (PUT /v1/products/{id}); without a revenue
// recognition such a product's held orders would never be released.

// Product is an entry of the catalogue listing.
type Product struct {
	ID                 string              `json:"id" required:"true" format:"uuid" description:"the catalogue id; PUT /v1/products/{id} accepts it"`
	ProductID          *string             `json:"productId" required:"true" description:"the caller's article id; null for products matched by sku or name"`
	MatchedBy          string              `json:"matchedBy" required:"true" enum:"product_id,sku,name" description:"how order lines find the product"`
	SKU                *string             `json:"sku" required:"true"`
	Name               string              `json:"name" required:"true" description:"the name of the order line that created the product"`
	RevenueRecognition *ProductRecognition `json:"revenueRecognition" required:"true" description:"null: not set (services of such a product without service_period wait under accrual accounting)"`
	CreatedAt          time.Time           `json:"createdAt" required:"true"`
}

// ProductRecognition is a product's revenue recognition.
type ProductRecognition struct {
	Mode         string `json:"mode" required:"true" enum:"immediate,saas"`
	PeriodMonths *int   `json:"periodMonths,omitempty"`
}

// ProductPage is a page of GET /v1/products.
type ProductPage struct {
	Data       []Product `json:"data" required:"true"`
	NextCursor *string   `json:"nextCursor" required:"true" description:"pass as cursor for the next page; on the last page it points after the last product"`
	HasMore    bool      `json:"hasMore" required:"true"`
	RequestID  string    `json:"requestId" required:"true"`
}

// ListProductsInput is the query of GET /v1/products.
type ListProductsInput struct {
	Limit        int    `query:"limit" minimum:"1" maximum:"100" default:"25"`
	Cursor       string `query:"cursor" allowEmptyValue:"true" description:"opaque; the nextCursor of the previous page"`
	Unconfigured string `query:"unconfigured" enum:"true,false" description:"true: only products without a revenue recognition"`
}

const productsDescription = "The project's catalogue, oldest first (keyset pagination by creation time: each product once). " +
	"Every order line is bound to one product, by productId, else by sku, else by exact name; products matched by sku or name " +
	"have no productId and are configured by their id: PUT /v1/products/{id}. unconfigured=true lists the products without a " +
	"revenue recognition, those whose service orders without service_period wait under accrual accounting. A cursor is bound " +
	"to the project and the filter; an altered or foreign cursor is 422 with field cursor."

// products reads up to limit products after position after, oldest first,
// and whether more follow.
func (s *Service) products(ctx context.Context, projectID string, unconfigured bool, after listPos, limit int) ([]Product, []listPos, bool, error) {
	sql := `SELECT id::text, match_kind, external_id, sku, name, revenue_recognition, default_period_months, created_at
		FROM products WHERE project_id = $1 AND (created_at, id) > ($2, $3::uuid)`
	if unconfigured {
		sql += ` AND revenue_recognition IS NULL`
	}
	sql += ` ORDER BY created_at, id LIMIT $4`
	rows, err := store.Query(ctx, s.pool, sql, projectID, after.at, after.id.String(), limit+1)
	if err != nil {
		return nil, nil, false, err
	}
	type row struct {
		p   Product
		pos listPos
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		var rec *string
		var months *int
		if err := r.Scan(&x.p.ID, &x.p.MatchedBy, &x.p.ProductID, &x.p.SKU, &x.p.Name, &rec, &months, &x.p.CreatedAt); err != nil {
			return row{}, err
		}
		if rec != nil {
			x.p.RevenueRecognition = &ProductRecognition{Mode: *rec, PeriodMonths: months}
		}
		x.p.CreatedAt = x.p.CreatedAt.UTC()
		x.pos = listPos{at: x.p.CreatedAt, id: uuid.MustParse(x.p.ID)}
		return x, nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	out := make([]Product, 0, len(list))
	pos := make([]listPos, 0, len(list))
	for _, x := range list {
		out, pos = append(out, x.p), append(pos, x.pos)
	}
	return out, pos, more, nil
}

func (s *Service) listProducts(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	projectID := httpx.ProjectID(ctx)
	q := r.URL.Query()
	limit, cursor, unconfigured := DefaultLimit, "", false
	for _, name := range []string{"limit", "cursor", "unconfigured"} {
		v := q[name]
		if len(v) > 1 {
			return apperr.Field(name, "%s may be given once", name)
		}
		if len(v) == 0 {
			continue
		}
		switch name {
		case "limit":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 || n > MaxLimit {
				return apperr.Field("limit", "limit must be an integer from 1 to %d, got %q", MaxLimit, v[0])
			}
			limit = n
		case "cursor":
			cursor = v[0]
		case "unconfigured":
			b, err := strconv.ParseBool(v[0])
			if err != nil || (v[0] != "true" && v[0] != "false") {
				return apperr.Field("unconfigured", "unconfigured must be true or false, got %q", v[0])
			}
			unconfigured = b
		}
	}
	key, err := s.cursors.get(ctx)
	if err != nil {
		return err
	}
	filters := "products\x00" + strconv.FormatBool(unconfigured)
	var after listPos
	if cursor != "" {
		if after.at, after.id, err = decodeTimeIDCursor(key, projectID, filters, cursor); err != nil {
			return err
		}
	}
	list, pos, more, err := s.products(ctx, projectID, unconfigured, after, limit)
	if err != nil {
		return err
	}
	last := after
	if len(pos) > 0 {
		last = pos[len(pos)-1]
	}
	c := encodeTimeIDCursor(key, projectID, filters, last.at, last.id)
	httpx.WriteJSON(w, r, http.StatusOK, ProductPage{Data: list, NextCursor: &c, HasMore: more, RequestID: httpx.RequestID(ctx)})
	return nil
}
