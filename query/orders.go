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
	rec, err := s.orderStatus(ctx, projectID, orderNo)
	return rec.rev, rec.body, err
}

// statusRecord is an order's status record as served: its revision, its
// JSON, and what every response of it repeats, computed once when the
// record is read from Redis or PostgreSQL and kept with it in the near
// cache: its ETag and the response up to the request id.
type statusRecord struct {
	rev  int64
	body []byte
	etag []string // the ETag header's value, shared by every response (never modified)
	head []byte   // {"data":<body>,"requestId":"
}

func newStatusRecord(rev int64, body []byte) statusRecord {
	head := make([]byte, 0, len(dataHead)+len(body)+len(dataTail))
	head = append(append(append(head, dataHead...), body...), dataTail...)
	// body is kept inside head: a record costs the near cache its JSON once.
	return statusRecord{rev: rev, body: head[len(dataHead) : len(head)-len(dataTail)], etag: []string{contentETag(body)}, head: head}
}

const dataHead, dataTail = `{"data":`, `,"requestId":"`

func (s *Service) orderStatus(ctx context.Context, projectID, orderNo string) (statusRecord, error) {
	key := nearKey(projectID, orderNo)
	if rec, ok := s.near.get(key); ok {
		return rec, nil
	}
	if s.redis != nil {
		rev, body, err := readmodel.Get(ctx, s.redis, projectID, orderNo)
		if err == nil {
			rec := newStatusRecord(rev, body)
			s.near.put(key, rec)
			return rec, nil
		}
		if !errors.Is(err, readmodel.ErrMiss) {
			slog.WarnContext(ctx, "order status: redis unavailable, reading PostgreSQL", "err", err)
		}
	}
	rev, body, err := s.orderStatusFromDB(ctx, projectID, orderNo)
	if err != nil {
		return statusRecord{}, err
	}
	rec := newStatusRecord(rev, body)
	s.near.put(key, rec)
	return rec, nil
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
	rec, err := s.orderStatus(r.Context(), httpx.ProjectID(r.Context()), orderNo)
	if err != nil {
		return err
	}
	writeRecord(w, r, rec.etag, rec.head)
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
	head := make([]byte, 0, len(dataHead)+len(data)+len(dataTail))
	writeRecord(w, r, []string{etag}, append(append(append(head, dataHead...), data...), dataTail...))
}

// Header values every versioned read sends, shared by all responses:
// net/http only reads them (Header.Clone copies the map, not the slices'
// contents it appends to).
var (
	noCache  = []string{"private, no-cache"}
	jsonType = []string{"application/json"}
)

// writeRecord is writeTagged for a response whose bytes up to the request
// id are ready (head: {"data":<data>,"requestId":"); head and etag (the
// header's value, one element) are only read.
func writeRecord(w http.ResponseWriter, r *http.Request, etag []string, head []byte) {
	h := w.Header()
	h["Etag"] = etag // canonical form of ETag, as Header.Set would store it
	h["Cache-Control"] = noCache
	if etagMatches(r.Header.Get("If-None-Match"), etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	id := httpx.RequestID(r.Context())
	buf := make([]byte, 0, len(head)+len(id)+3)
	buf = append(buf, head...)
	buf = append(buf, id...)
	buf = append(buf, "\"}\n"...)
	h["Content-Type"] = jsonType
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
