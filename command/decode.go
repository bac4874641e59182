package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/money"
)

// Request bodies are decoded into generic JSON values and read field by field,
// so that every failure names the exact JSON path of the offending value:
// object keys joined with dots, array indices in brackets, for example
// billingAddress.country_code or items[0].quantity. Numbers are kept as
// their literal text (json.Number) and parsed exactly: integers as int64,
// quantities and rates as money.Decimal, never through float64.

// maxCents bounds every amount in cents (10^13 cents, 100 billion units), and
// every line amount (quantity × unit price, see parseItem), so that no sum
// over an order can overflow int64: at most maxItems lines of at most 10^13
// cents, plus VAT of at most 100 % and shipping, stay below 2.1·10^16,
// far from 9.2·10^18. Credit redemptions sum to at most 100 × 10^13.
const maxCents = 10_000_000_000_000

// The longest text values of the write bodies, in characters (Unicode code
// points, not bytes); the OpenAPI document states each as maxLength. A
// value that is longer is 422 validation_failed naming its field. The
// bounds keep every value that PostgreSQL indexes below its index-row limit
// (2,704 bytes; a character is at most 4 bytes in UTF-8) and every event
// well below the broker's message limit (see maxOrderJSONBytes).
const (
	maxIDLength       = 200 // ids, references and codes: orderNo, paymentRef, sku, productId, ...
	maxLineLength     = 300 // names and address lines
	maxItemNameLength = 500 // a line's name: the catalogue key of lines without productId and sku
	maxEmailLength    = 254 // RFC 5321's limit of a forward path
	maxPostalLength   = 50  // postal_code
	maxVATIDLength    = 50  // vat_id
	maxLeitwegLength  = 46  // the longest Leitweg-ID: 12 + 1 + 30 + 1 + 2
	maxCurrencyLength = 3   // ISO 4217
)

// decodeObject parses body as one JSON object. Malformed JSON is 400
// invalid_json; a JSON value that is not an object as well.
func decodeObject(body []byte) (obj, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return obj{}, apperr.New(apperr.Invalid, "invalid_json", "the request body is empty")
	}
	// The body is read by the JSON v2 module's tokenizer into the values
	// encoding/json gives with UseNumber; a body it refuses is decoded
	// again by encoding/json, whose errors we report. The tokenizer reads
	// a bytes.Buffer in place, so every value's bytes sit at its offset in
	// the body.
	r := valueReader{
		dec:  jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)),
		body: string(body),
	}
	v, err := r.value()
	if err == nil {
		if _, end := r.dec.ReadToken(); end != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err != nil {
		return obj{}, decodeError(body, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return obj{}, apperr.New(apperr.Invalid, "invalid_json", "the request body must be a JSON object, got %s", kindOf(v))
	}
	return obj{m: m}, nil
}

// valueReader reads JSON values as encoding/json decodes them into an any
// with UseNumber: objects as map[string]any (of duplicate names the last
// wins), arrays as []any, numbers as their literal text, strings with
// invalid UTF-8 replaced by U+FFFD.
//
// A string without escapes and a number are substrings of body, the
// request body's one string copy, so an order's names and values cost no
// allocation each. A value kept beyond the request (a cache key) must be
// cloned, or it keeps the whole body alive.
type valueReader struct {
	dec  *jsontext.Decoder
	body string
}

func (r *valueReader) value() (any, error) {
	switch r.dec.PeekKind() {
	case '{':
		if _, err := r.dec.ReadToken(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for r.dec.PeekKind() != '}' {
			key, err := r.text()
			if err != nil {
				return nil, err
			}
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		_, err := r.dec.ReadToken()
		return m, err
	case '[':
		if _, err := r.dec.ReadToken(); err != nil {
			return nil, err
		}
		a := []any{}
		for r.dec.PeekKind() != ']' {
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := r.dec.ReadToken()
		return a, err
	case '"':
		return r.text()
	case '0':
		raw, err := r.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return json.Number(r.source(raw)), nil
	}
	// A literal, or what the tokenizer refuses (its error).
	tok, err := r.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}

// text reads a JSON string: a value whose kind was peeked, or an object's
// name, which the tokenizer only reads as a string.
func (r *valueReader) text() (string, error) {
	raw, err := r.dec.ReadValue()
	if err != nil {
		return "", err
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		s := r.source(raw)
		return s[1 : len(s)-1], nil
	}
	// Escapes or invalid UTF-8 (replaced by U+FFFD, as encoding/json does).
	b, _ := jsontext.AppendUnquote(nil, raw)
	return string(b), nil
}

// source is raw, the value just read, as the substring of the body it was
// read from.
func (r *valueReader) source(raw jsontext.Value) string {
	end := int(r.dec.InputOffset())
	return r.body[end-len(raw) : end]
}

// decodeError describes why body is not one JSON value: encoding/json's
// syntax error (its byte offset) when it finds one, else err.
func decodeError(body []byte, err error) error {
	std := json.NewDecoder(bytes.NewReader(body))
	var v any
	if serr := std.Decode(&v); serr != nil {
		var se *json.SyntaxError
		if errors.As(serr, &se) {
			return apperr.New(apperr.Invalid, "invalid_json", "malformed JSON at byte %d: %v", se.Offset, se)
		}
		return apperr.New(apperr.Invalid, "invalid_json", "malformed JSON: %v", serr)
	}
	if _, serr := std.Token(); serr != io.EOF {
		return apperr.New(apperr.Invalid, "invalid_json", "unexpected data after the JSON object")
	}
	return apperr.New(apperr.Invalid, "invalid_json", "malformed JSON: %v", err)
}

// obj is a JSON object at a path ("" for the body itself).
type obj struct {
	m    map[string]any
	path string
}

func (o obj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func atIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// get returns the value of key; ok is false when the key is absent or null.
func (o obj) get(key string) (any, bool) {
	v, present := o.m[key]
	return v, present && v != nil
}

func (o obj) has(key string) bool {
	_, ok := o.get(key)
	return ok
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "an unknown value"
}

func typeErr(path, want string, v any) error {
	return apperr.Field(path, "%s must be %s, got %s", path, want, kindOf(v))
}

// str returns a string field; absent, null and "" give "". With required, an
// absent, null, empty or blank value is a validation failure.
func (o obj) str(key string, required bool) (string, error) {
	v, ok := o.get(key)
	if !ok {
		if required {
			return "", apperr.Field(o.at(key), "%s is required", o.at(key))
		}
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", typeErr(o.at(key), "a string", v)
	}
	if required && strings.TrimSpace(s) == "" {
		return "", apperr.Field(o.at(key), "%s must not be empty", o.at(key))
	}
	return s, nil
}

// text is str with a maximum length in characters.
func (o obj) text(key string, required bool, max int) (string, error) {
	s, err := o.str(key, required)
	if err != nil {
		return "", err
	}
	return s, o.maxLen(key, s, max)
}

// id is text for an identifier (orderNo, paymentRef, sku, productId,
// references): besides the length, no control characters (CR, LF, TAB,
// ESC, ...) and no bidirectional formatting characters, which would split a
// record of a line-based export or show another text than is stored.
func (o obj) id(key string, required bool) (string, error) {
	s, err := o.text(key, required, maxIDLength)
	if err != nil {
		return "", err
	}
	return s, o.checkIdentifier(key, s)
}

// checkIdentifier refuses control and bidirectional formatting characters
// in the identifier s of field key (its path is built only for the error).
func (o obj) checkIdentifier(key, s string) error {
	for i, r := range s {
		if unicode.IsControl(r) || isBidiControl(r) {
			path := o.at(key)
			return apperr.Field(path, "%s must not contain control or bidirectional formatting characters (U+%04X at byte %d)", path, r, i)
		}
	}
	return nil
}

// isBidiControl reports the Unicode bidirectional formatting characters:
// the marks (ALM, LRM, RLM), embeddings and overrides (LRE, RLE, PDF, LRO,
// RLO) and isolates (LRI, RLI, FSI, PDI).
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// maxLen refuses s, the value of field key, when it has more than max
// characters.
func (o obj) maxLen(key, s string, max int) error {
	if len(s) <= max { // never more characters than bytes
		return nil
	}
	if n := utf8.RuneCountInString(s); n > max {
		path := o.at(key) // built only for the error
		return apperr.Field(path, "%s must be at most %d characters, got %d", path, max, n)
	}
	return nil
}

// object returns a nested object; ok is false when absent or null.
func (o obj) object(key string) (obj, bool, error) {
	v, ok := o.get(key)
	if !ok {
		return obj{}, false, nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return obj{}, false, typeErr(o.at(key), "an object", v)
	}
	return obj{m: m, path: o.at(key)}, true, nil
}

// array returns a nested array; ok is false when absent or null.
func (o obj) array(key string) ([]any, bool, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, false, nil
	}
	a, isArr := v.([]any)
	if !isArr {
		return nil, false, typeErr(o.at(key), "an array", v)
	}
	return a, true, nil
}

// boolean returns a boolean field; absent and null give def.
func (o obj) boolean(key string, def bool) (bool, error) {
	v, ok := o.get(key)
	if !ok {
		return def, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, typeErr(o.at(key), "a boolean", v)
	}
	return b, nil
}

// cents returns an integer amount of cents; nil when absent or null. A number
// with a fraction (1.5) is rejected, never rounded; an exponent that yields
// an integer (1e2) is fine. Amounts must lie in [min, maxCents].
func (o obj) cents(key string, min int64) (*int64, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return nil, typeErr(o.at(key), "an integer number of cents", v)
	}
	d, err := money.ParseDecimal(n.String())
	if err != nil || !d.IsInt() {
		return nil, apperr.Field(o.at(key), "%s must be an integer number of cents, got %s", o.at(key), n)
	}
	c, _ := d.Coef()
	if c < min {
		if min == 1 {
			return nil, apperr.Field(o.at(key), "%s must be greater than 0", o.at(key))
		}
		return nil, apperr.Field(o.at(key), "%s must not be negative", o.at(key))
	}
	if c > maxCents {
		return nil, apperr.Field(o.at(key), "%s must not exceed %d", o.at(key), int64(maxCents))
	}
	return &c, nil
}

// decimal returns an exact decimal number field; nil when absent or null.
func (o obj) decimal(key string) (*money.Decimal, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return nil, typeErr(o.at(key), "a number", v)
	}
	d, err := money.ParseDecimal(n.String())
	if err != nil {
		return nil, apperr.Field(o.at(key), "%s must be a decimal number with at most %d decimal places, got %s", o.at(key), money.MaxScale, n)
	}
	return &d, nil
}

var (
	hundred = money.Int(100)
	maxQty  = money.Int(1_000_000_000)
)

// rate returns a VAT rate in percent: a decimal in [0, 100].
func (o obj) rate(key string) (*money.Decimal, error) {
	d, err := o.decimal(key)
	if err != nil || d == nil {
		return d, err
	}
	if d.Sign() < 0 {
		return nil, apperr.Field(o.at(key), "%s must be a non-negative percent value (19 for nineteen percent)", o.at(key))
	}
	if d.Cmp(hundred) > 0 {
		return nil, apperr.Field(o.at(key), "%s must be a percent value of at most 100 (19 for nineteen percent)", o.at(key))
	}
	return d, nil
}

var (
	countryRE  = regexp.MustCompile(`^[A-Z]{2}$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

// isoDate parses YYYY-MM-DD.
func isoDate(s string) (time.Time, bool) {
	if len(s) != 10 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly, s)
	return t, err == nil
}

// dateTime parses an ISO 8601 date-time with offset (RFC 3339), for example
// 2026-03-01T10:15:00Z or 2026-03-01T11:15:00.5+01:00. The instant must lie
// in the years 0000 to 9999 in UTC as well, since it is stored and answered
// in UTC: 0000-01-01T00:00:00+01:00 would be year -1 there, no RFC 3339.
func dateTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if y := t.UTC().Year(); err != nil || y < 0 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// validEmail accepts a bare address (no display name) with a local part and
// a domain. Its length is checked before (maxEmailLength characters).
func validEmail(s string) bool {
	if strings.ContainsAny(s, " \t\r\n<>") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && at < len(s)-1
}
