package query

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/reqlog"
)

// RequestInput is the path of GET /v1/requests/{requestId}.
type RequestInput struct {
	RequestID string `path:"requestId" required:"true" description:"the X-Request-Id of an earlier request (a UUID)"`
}

// RequestRecord is one recorded request of the key's project.
type RequestRecord struct {
	RequestID      string    `json:"requestId" required:"true"`
	At             time.Time `json:"at" required:"true" description:"when the request arrived"`
	Method         string    `json:"method" required:"true"`
	Path           string    `json:"path" required:"true"`
	Route          string    `json:"route" required:"true" description:"the route pattern the request matched"`
	Status         int       `json:"status" required:"true"`
	DurationMicros int64     `json:"durationMicros" required:"true" description:"time to answer, in microseconds"`
	KeyPrefix      *string   `json:"keyPrefix" required:"true" description:"the first characters of the API key used"`
	IdempotencyKey *string   `json:"idempotencyKey" required:"true" description:"the Idempotency-Key header, when sent"`
}

// Request returns the recorded request of projectID with id requestID; a
// request of another project, an unknown one or one older than 30 days is
// apperr NotFound (request_not_found), the same answer for each.
func (s *Service) Request(ctx context.Context, projectID, requestID string) (RequestRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rec, err := reqlog.Show(ctx, s.pool, requestID)
	if err != nil {
		return RequestRecord{}, err
	}
	if rec.ProjectID == nil || *rec.ProjectID != projectID {
		return RequestRecord{}, apperr.New(apperr.NotFound, "request_not_found", "no request %q in the last 30 days", requestID)
	}
	return RequestRecord{RequestID: rec.RequestID, At: rec.At, Method: rec.Method, Path: rec.Path, Route: rec.Route,
		Status: rec.Status, DurationMicros: rec.DurationMicros, KeyPrefix: rec.KeyPrefix, IdempotencyKey: rec.IdempotencyKey}, nil
}

func (s *Service) getRequest(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.Request(r.Context(), httpx.ProjectID(r.Context()), chi.URLParam(r, "requestId"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, r, http.StatusOK, httpx.Envelope[RequestRecord]{Data: rec, RequestID: httpx.RequestID(r.Context())})
	return nil
}
