package command

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
)

// Idempotency (IETF draft "The Idempotency-Key HTTP Header Field", and
// Stripe's practice), per project and endpoint:
//
//   - The header is required on POST /v1/orders, POST /v1/fulfillments and
//     POST /v1/orders/{orderNo}/cancel (400 idempotency_key_missing), at most 200 characters (400
//     idempotency_key_too_long).
//   - The first successful (2xx) response is stored with the fingerprint of
//     the request (SHA-256 of the validated, normalised body) in the same
//     transaction as the state change and its events.
//   - The same key with the same fingerprint replays the stored response byte
//     for byte with its original status, X-Request-Id equal to the body's
//     original requestId, and Idempotent-Replayed: true.
//   - The same key with a different fingerprint is 422 idempotency_key_reused.
//   - The same key while its first request is still running is 409
//     idempotency_in_progress (a transaction-scoped advisory lock on the key).
//   - Failed requests (4xx, 5xx) store nothing: their transaction rolls back,
//     so a corrected retry with the same key is executed.
//   - Records are kept IdempotencyTTL and then deleted.

// IdempotencyTTL is how long a key is remembered (at least; the sweep deletes
// records older than this).
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKeyLength is the longest Idempotency-Key in characters.
const MaxIdempotencyKeyLength = 200

// Endpoints as recorded in idempotency_keys.
const (
	endpointOrders       = "POST /v1/orders"
	endpointFulfillments = "POST /v1/fulfillments"
	endpointCancel       = "POST /v1/orders/{orderNo}/cancel"
)

// keyedTx runs one keyed command in tx by the rules above: it takes the
// key's advisory lock, replays the response stored for the key (or refuses
// a different fingerprint), and otherwise runs fn and stores its 2xx
// response with the key, all in tx. POST /v1/orders has its own pipelined
// version of the same protocol (place_order.go, create_batch.go).
func keyedTx(ctx context.Context, tx pgx.Tx, projectID, endpoint, key string, fingerprint []byte, fn func() (response, error)) (response, error) {
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, lockKey(projectID, endpoint, key)).Scan(&locked); err != nil {
		return response{}, err
	}
	if !locked {
		return response{}, errInProgress()
	}
	var prevHash, prevBody []byte
	var prevStatus int16
	err := tx.QueryRow(ctx, `SELECT request_hash, response_status, response_body FROM idempotency_keys
WHERE project_id = $1 AND endpoint = $2 AND key = $3`, projectID, endpoint, key).Scan(&prevHash, &prevStatus, &prevBody)
	switch {
	case err == nil:
		if !bytes.Equal(prevHash, fingerprint) {
			return response{}, errKeyReused()
		}
		return response{status: int(prevStatus), body: prevBody, replayed: true}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return response{}, err
	}
	resp, err := fn()
	if err != nil {
		return response{}, err
	}
	if _, err := tx.Exec(ctx, insertIdempotencySQL, projectID, endpoint, key, fingerprint, resp.status, resp.body); err != nil {
		return response{}, err
	}
	return resp, nil
}

func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if k == "" {
		return "", apperr.New(apperr.Invalid, "idempotency_key_missing", "the Idempotency-Key header is required")
	}
	if utf8.RuneCountInString(k) > MaxIdempotencyKeyLength {
		return "", apperr.New(apperr.Invalid, "idempotency_key_too_long", "the Idempotency-Key header must be at most %d characters", MaxIdempotencyKeyLength)
	}
	return k, nil
}

// lockKey is the advisory lock of one idempotency key.
func lockKey(projectID, endpoint, key string) int64 {
	h := sha256.New()
	h.Write([]byte("o2i-idem\x00" + projectID + "\x00" + endpoint + "\x00"))
	h.Write([]byte(key))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]))
}

func errInProgress() error {
	return apperr.New(apperr.Conflict, "idempotency_in_progress", "a request with this Idempotency-Key is still running; retry later")
}

func errKeyReused() error {
	return apperr.New(apperr.Validation, "idempotency_key_reused", "this Idempotency-Key was used with a different request body")
}

// response is an HTTP response as sent and stored.
type response struct {
	status   int
	body     []byte
	replayed bool
}

// renderData encodes the success envelope exactly as httpx.WriteData does.
func renderData[T any](reqID string, data T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(httpx.Envelope[T]{Data: data, RequestID: reqID}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write sends resp. A replay carries the original body, the original
// requestId in X-Request-Id (equal to the body's) and Idempotent-Replayed:
// true; a replayed 201 is answered 200, since nothing is created by it (spec:
// an existing order is "updated or replayed (HTTP 200)").
func (resp response) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if resp.replayed {
		if resp.status == http.StatusCreated {
			resp.status = http.StatusOK
		}
		var env struct {
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal(resp.body, &env) == nil && env.RequestID != "" {
			h.Set("X-Request-Id", env.RequestID)
		}
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// sweepEvery is how often an API process deletes expired idempotency records.
const sweepEvery = 5 * time.Minute

// maybeSweep starts a sweep of expired idempotency records when the last one
// in this process is older than sweepEvery. Several replicas sweeping at
// once do no harm.
func (s *Service) maybeSweep() {
	now := time.Now().UnixNano()
	last := s.lastSweep.Load()
	if now-last < int64(sweepEvery) || !s.lastSweep.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := s.SweepIdempotency(ctx, time.Now().Add(-IdempotencyTTL))
		if err != nil {
			slog.Warn("sweep idempotency records", "err", err)
		} else if n > 0 {
			slog.Info("swept idempotency records", "deleted", n)
		}
	}()
}

// SweepIdempotency deletes idempotency records created before cutoff, in
// batches, and returns how many it deleted.
func (s *Service) SweepIdempotency(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
  SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT 5000))`, cutoff)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 5000 {
			return total, nil
		}
	}
}
