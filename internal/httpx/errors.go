package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/o2i-service/o2i/internal/apperr"
)

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error     ErrorDetail `json:"error" required:"true"`
	RequestID string      `json:"requestId" required:"true"`
}

// ErrorDetail says what went wrong; Field is the JSON path of the offending value.
type ErrorDetail struct {
	Code    string `json:"code" required:"true" description:"snake_case error code"`
	Message string `json:"message" required:"true"`
	Field   string `json:"field,omitempty" description:"JSON path of the offending value, for example items[0].quantity or billingAddress.country_code"`
}

// ErrorCodes lists every error code the service answers with, and its status.
// The README and the OpenAPI document list the same codes.
var ErrorCodes = []struct {
	Code   string
	Status int
	Means  string
}{
	{"invalid_json", 400, "the body is not valid JSON, nests deeper than 32 levels, or holds text that is not valid UTF-8 or contains NUL (field names the string)"},
	{"invalid_signature", 400, "the payment webhook's Stripe-Signature is missing, malformed, wrong or older than five minutes, or the project is unknown or has no webhook secret"},
	{"invalid_request", 400, "a path parameter, query parameter or header is malformed, for example not UTF-8 or with NUL (field names it)"},
	{"idempotency_key_missing", 400, "the Idempotency-Key header is required"},
	{"idempotency_key_too_long", 400, "the Idempotency-Key header is longer than 200 characters"},
	{"unauthorized", 401, "missing, malformed, unknown, expired or revoked API key"},
	{"forbidden", 403, "the key holds none of the scopes the endpoint accepts (the message names them)"},
	{"not_found", 404, "no such route"},
	{"order_not_found", 404, "no order with that orderNo in the key's project"},
	{"project_not_found", 404, "no such project (admin commands)"},
	{"invoice_not_found", 404, "no invoice with that reference in the key's project"},
	{"task_not_found", 404, "no review task with that id in the key's project"},
	{"product_not_found", 404, "no product with that productId in the key's project (a product exists once an order line named it)"},
	{"request_not_found", 404, "no recorded request with that id in the key's project within the last 30 days"},
	{"method_not_allowed", 405, "the route exists but not with this method; the header Allow lists the methods it serves"},
	{"request_timeout", 408, "the request body did not arrive in time (a public route's within a few seconds of its headers); the connection is closed"},
	{"conflict", 409, "the request conflicts with the current state"},
	{"payment_ref_conflict", 409, "another order of the project has this paymentRef"},
	{"idempotency_in_progress", 409, "a request with this Idempotency-Key is still running"},
	{"order_cancelled", 409, "the order is cancelled; its invoice-relevant content cannot change any more"},
	{"document_not_archived", 409, "the document is not archived yet"},
	{"xml_not_applicable", 409, "the document has no XML: a small-amount invoice (§ 33 UStDV) is a PDF only"},
	{"export_failed", 409, "a document of the range cannot be booked (the message names it)"},
	{"accounting_settings_invalid", 409, "the project's accounting settings are invalid (o2i project set)"},
	{"cause_not_fixed", 409, "a recheck of a hold whose cause the project's settings or the product still show; the message names what is missing"},
	{"task_not_a_hold", 409, "a recheck of a task that holds no order (informational: dismiss it)"},
	{"task_is_a_hold", 409, "a dismissal of a task that holds orders back: it is resolved by fixing its cause"},
	{"payload_too_large", 413, "the body exceeds the documented limit"},
	{"unsupported_media_type", 415, "the body must be application/json"},
	{"validation_failed", 422, "a field value breaks a rule; field names it"},
	{"idempotency_key_reused", 422, "the Idempotency-Key was used before with a different body"},
	{"rate_limited", 429, "the key's request rate limit is exceeded; see Retry-After"},
	{"internal_error", 500, "unexpected server error; retry with backoff"},
	{"not_implemented", 501, "the endpoint is part of the interface but not available in this deployment (documents without an archive)"},
	{"unavailable", 503, "temporarily overloaded or a dependency is down; see Retry-After"},
}

// Status returns the HTTP status of an error kind.
func Status(k apperr.Kind) int {
	switch k {
	case apperr.Invalid:
		return http.StatusBadRequest
	case apperr.Unauthenticated:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case apperr.RequestTimeout:
		return http.StatusRequestTimeout
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.UnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case apperr.Validation:
		return http.StatusUnprocessableEntity
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	case apperr.NotImplemented:
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

// classify turns any error into an *apperr.Error. Overload signals (pool
// acquisition timing out, a cancelled context on the server side) become
// Unavailable with a Retry-After; everything unknown is Internal.
func classify(ctx context.Context, err error) *apperr.Error {
	if e := apperr.As(err); e != nil {
		return e
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "53300", "57P03", "40001", "40P01": // too many connections, cannot connect now, serialization, deadlock
			return &apperr.Error{Kind: apperr.Unavailable, Code: "unavailable", Message: "temporarily unavailable, retry later", RetryAfter: time.Second, Err: err}
		}
	}
	// A deadline: an inner one, or the request's own (Server.RequestTimeout).
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return &apperr.Error{Kind: apperr.Unavailable, Code: "unavailable", Message: "temporarily overloaded, retry later", RetryAfter: time.Second, Err: err}
	}
	return &apperr.Error{Kind: apperr.Internal, Code: "internal_error", Message: "internal error", Err: err}
}

// WriteError renders err as the error body. Internal errors are logged with
// their chain; the client sees only "internal error".
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client went away: nothing reaches it, and it is no server
		// error. 499 (client closed request) is what the metrics and the
		// request log record.
		w.WriteHeader(499)
		return
	}
	e := classify(r.Context(), err)
	status := Status(e.Kind)
	if e.Kind == apperr.Internal || e.Kind == apperr.Unavailable {
		slog.ErrorContext(r.Context(), "request failed", "requestId", RequestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	if e.Kind == apperr.NotFound && e.Code == "" {
		e.Code = "not_found"
	}
	if e.Kind == apperr.RequestTimeout {
		// The rest of the body may still be on its way: what follows on
		// the connection is no next request.
		w.Header().Set("Connection", "close")
	}
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	} else if e.Kind == apperr.RateLimited || e.Kind == apperr.Unavailable {
		w.Header().Set("Retry-After", "1")
	}
	msg := e.Message
	if e.Kind == apperr.Internal {
		msg = "internal error"
	}
	WriteJSON(w, r, status, ErrorBody{
		Error:     ErrorDetail{Code: e.Code, Message: msg, Field: e.Field},
		RequestID: RequestID(r.Context()),
	})
}
