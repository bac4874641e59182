// Package apperr holds the small closed set of error kinds the service uses.
// Packages return *Error values (or wrap them); exactly one place, internal/httpx,
// maps a kind to an HTTP status and the error body. It imports only the standard library.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Kind is one of the closed set of error kinds.
type Kind int

// The kinds; each maps to one HTTP status in internal/httpx.
const (
	Internal             Kind = iota // 500
	Invalid                          // 400: the request itself is malformed
	Unauthenticated                  // 401
	Forbidden                        // 403
	NotFound                         // 404
	MethodNotAllowed                 // 405
	Conflict                         // 409
	TooLarge                         // 413
	UnsupportedMediaType             // 415
	Validation                       // 422: a field value breaks a rule
	RateLimited                      // 429
	Unavailable                      // 503
	NotImplemented                   // 501
	RequestTimeout                   // 408: the request (its body) did not arrive in time
)

// Error is a classified error. Code is the snake_case code clients see;
// Field is the JSON path of the offending value for Validation errors.
type Error struct {
	Kind       Kind
	Code       string
	Message    string
	Field      string
	RetryAfter time.Duration // for RateLimited and Unavailable
	Err        error         // cause, logged for Internal, never shown
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k with a client-facing code and message.
func New(k Kind, code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Field returns a validation_failed error for the value at the JSON path field.
func Field(field, format string, args ...any) *Error {
	return &Error{Kind: Validation, Code: "validation_failed", Field: field, Message: fmt.Sprintf(format, args...)}
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf returns the kind of err; Internal when err is not classified.
func KindOf(err error) Kind {
	if e := As(err); e != nil {
		return e.Kind
	}
	return Internal
}

// Wrap annotates *errp with the operation, keeping its kind:
//
//	defer apperr.Wrap(&err, "issue invoice %s", id)
func Wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}
