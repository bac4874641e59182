package httpx

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/o2i-service/o2i/internal/apperr"
)

// checkRequest prepares what handlers read besides the body and refuses
// what they cannot use (400 invalid_request, field naming the parameter or
// header):
//
//   - Path parameters are unescaped. chi matches on the escaped path
//     (r.URL.RawPath) whenever the request has one, which Go keeps only when
//     the path has escapes that unescaping would lose, such as %2F: an
//     orderNo "A/B-1" arrives as /v1/orders/A%2FB-1 and chi's parameter is
//     "A%2FB-1". Without RawPath chi matched the unescaped path and the
//     parameters are already text.
//   - Path parameters, query parameters and the Idempotency-Key header must
//     be valid UTF-8 without NUL: PostgreSQL refuses both in text, and the
//     values are looked up or stored there. A query string that does not
//     parse (a bad %-escape, a semicolon) is refused rather than read
//     partly.
func checkRequest(r *http.Request) error {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		for i, name := range rctx.URLParams.Keys {
			v := rctx.URLParams.Values[i]
			if r.URL.RawPath != "" {
				u, err := url.PathUnescape(v)
				if err != nil {
					return badParam(name, "the path parameter %s is not correctly %%-escaped", name)
				}
				v = u
				rctx.URLParams.Values[i] = v
			}
			if !validText(v) {
				return badParam(name, "the path parameter %s must be UTF-8 text without NUL characters", name)
			}
		}
	}
	if r.URL.RawQuery != "" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return apperr.New(apperr.Invalid, "invalid_request", "the query string is malformed: %v", err)
		}
		for name, vs := range q {
			if !validText(name) {
				return apperr.New(apperr.Invalid, "invalid_request", "a query parameter name must be UTF-8 text without NUL characters")
			}
			for _, v := range vs {
				if !validText(v) {
					return badParam(name, "the query parameter %s must be UTF-8 text without NUL characters", name)
				}
			}
		}
	}
	// Go's server already answers 400 to NUL and other control characters in
	// header values, but passes bytes above 0x7F through.
	if k := r.Header.Get("Idempotency-Key"); k != "" && !validText(k) {
		return badParam("Idempotency-Key", "the Idempotency-Key header must be UTF-8 text without NUL characters")
	}
	return nil
}

func badParam(name, format string, args ...any) error {
	e := apperr.New(apperr.Invalid, "invalid_request", format, args...)
	e.Field = name
	return e
}

// validText reports whether s is valid UTF-8 without NUL.
func validText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// loggable makes s safe for the request log (PostgreSQL text, written in
// batches: one bad value would lose the whole batch). Invalid UTF-8 and NUL
// become U+FFFD.
// maxLoggedBytes bounds each text field of a request log entry a client
// chooses (method, path, Idempotency-Key): a client may send a request
// line and headers of up to 64 KiB, and the log keeps requests for 30 days,
// so an entry's size is bounded, not only the number of entries.
const maxLoggedBytes = 512

// logField is loggable cut to maxLoggedBytes at a character boundary, with
// "…" marking the cut.
func logField(s string) string {
	s = loggable(s)
	if len(s) <= maxLoggedBytes {
		// A copy: the request's path and method are parts of its whole
		// request line, which an entry must not keep alive.
		return strings.Clone(s)
	}
	cut := maxLoggedBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func loggable(s string) string {
	if validText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
