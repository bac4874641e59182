package query

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/readmodel"
	"github.com/o2i-service/o2i/internal/store"
)

// OrderStatus returns the revision and JSON of an order's status record:
// from Redis, or from PostgreSQL when Redis has no entry or is down.
func (s *Service) OrderStatus(ctx context.Context, projectID, orderNo string) (int64, []byte, error) {
	key := nearKey(projectID, orderNo)
	if rev, body, ok := s.near.get(key); ok {
		return rev, body, nil
	}
	if s.redis != nil {
		rev, body, err := readmodel.Get(ctx, s.redis, projectID, orderNo)
		if err == nil {
			s.near.put(key, rev, body)
			return rev, body, nil
		}
		if !errors.Is(err, readmodel.ErrMiss) {
			slog.WarnContext(ctx, "order status: redis unavailable, reading PostgreSQL", "err", err)
		}
	}
	rev, body, err := s.orderStatusFromDB(ctx, projectID, orderNo)
	if err == nil {
		s.near.put(key, rev, body)
	}
	return rev, body, err
}

func (s *Service) orderStatusFromDB(ctx context.Context, projectID, orderNo string) (int64, []byte, error) {
	var rev int64
	row := readmodel.Row{OrderNo: orderNo}
	err := store.QueryRow(ctx, s.pool, `SELECT rev, status, fulfillment_status, invoices, waiting_for, waiting_for_all, holds, payment
		FROM order_view WHERE project_id = $1 AND order_no = $2`, projectID, orderNo).
		Scan(&rev, &row.Status, &row.FulfillmentStatus, &row.Invoices, &row.WaitingFor, &row.WaitingForAll, &row.Holds, &row.Payment)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, apperr.New(apperr.NotFound, "order_not_found", "no order %q", orderNo)
	}
	if err != nil {
		return 0, nil, err
	}
	body, err := readmodel.Encode(row)
	return rev, body, err
}

func (s *Service) getOrder(w http.ResponseWriter, r *http.Request) error {
	orderNo := chi.URLParam(r, "orderNo")
	_, body, err := s.OrderStatus(r.Context(), httpx.ProjectID(r.Context()), orderNo)
	if err != nil {
		return err
	}
	writeTagged(w, r, contentETag(body), body)
	return nil
}

// contentETag is the ETag of a record: a hash of its own bytes, so it
// changes exactly when the record does and says nothing about anything else
// (a read model's revision is a global sequence: it would let one tenant
// watch the whole system's event volume between its polls).
func contentETag(data []byte) string {
	sum := sha256.Sum256(data)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// writeTagged answers with {"data": data, "requestId"} and the ETag given;
// a matching If-None-Match gets 304 without a body.
func writeTagged(w http.ResponseWriter, r *http.Request, etag string, data []byte) {
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, no-cache")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	id := httpx.RequestID(r.Context())
	buf := make([]byte, 0, len(data)+len(id)+32)
	buf = append(buf, `{"data":`...)
	buf = append(buf, data...)
	buf = append(buf, `,"requestId":"`...)
	buf = append(buf, id...)
	buf = append(buf, "\"}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
