package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"

	"github.com/o2i-service/o2i/internal/apperr"
)

// MaxBodyBytes is the documented limit of a request body (1 MiB).
const MaxBodyBytes = 1 << 20

// Envelope is the body of every successful JSON response.
type Envelope[T any] struct {
	Data      T      `json:"data" required:"true"`
	RequestID string `json:"requestId" required:"true"`
}

// WriteJSON writes v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":{"code":"internal_error","message":"internal error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// WriteData writes {"data": data, "requestId": ...} with the given status.
func WriteData[T any](w http.ResponseWriter, r *http.Request, status int, data T) {
	WriteJSON(w, r, status, Envelope[T]{Data: data, RequestID: RequestID(r.Context())})
}

// ReadBody returns the request body after checking its content type
// (415 unsupported_media_type), its size (413 payload_too_large, limit max
// bytes), its nesting depth and its text (400 invalid_json, see CheckJSON).
// A body still arriving at the connection's read deadline is 408
// request_timeout.
// Every JSON body the service reads comes through here.
func ReadBody(r *http.Request, max int64) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return nil, apperr.New(apperr.UnsupportedMediaType, "unsupported_media_type",
			"Content-Type must be application/json, got %q", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge(max)
		}
		return nil, errReading(err)
	}
	if err := CheckJSON(body); err != nil {
		return nil, err
	}
	return body, nil
}

func errTooLarge(max int64) error {
	return apperr.New(apperr.TooLarge, "payload_too_large", "request body exceeds %d bytes", max)
}

// errReading classifies a failed read of the body: past the connection's
// read deadline it is 408 request_timeout, anything else (the sender went
// away, broken chunked encoding) 400 invalid_json.
func errReading(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return apperr.New(apperr.RequestTimeout, "request_timeout", "the request body did not arrive in time")
	}
	return apperr.New(apperr.Invalid, "invalid_json", "reading the request body: %v", err)
}

// DecodeJSON decodes body into v. A syntax error is 400 invalid_json; a value
// of the wrong JSON type is 422 validation_failed naming the field.
func DecodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return apperr.New(apperr.Invalid, "invalid_json", "the request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return apperr.New(apperr.Invalid, "invalid_json", "malformed JSON at byte %d: %v", se.Offset, se)
		case errors.As(err, &te):
			f := te.Field
			return apperr.Field(f, "%s must be %s, got JSON %s", f, jsonKind(te.Type.Kind().String()), te.Value)
		default:
			return apperr.New(apperr.Invalid, "invalid_json", "malformed JSON: %v", err)
		}
	}
	if dec.More() {
		return apperr.New(apperr.Invalid, "invalid_json", "unexpected data after the JSON value")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	default:
		return fmt.Sprintf("a number (%s)", goKind)
	}
}
