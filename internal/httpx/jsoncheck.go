package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/o2i-service/o2i/internal/apperr"
)

// MaxJSONDepth is the deepest nesting of arrays and objects a request body
// may have. The service's bodies need four levels; 32 leaves room for
// whatever an integrator sends along and ignores.
const MaxJSONDepth = 32

// CheckJSON refuses, before anything decodes body, what no handler can use
// and what would otherwise reach a decoder or PostgreSQL:
//
//   - nesting deeper than MaxJSONDepth: 400 invalid_json;
//   - a string (member name or value) that is not valid Unicode text:
//     invalid UTF-8, the escape \u0000 (PostgreSQL refuses NUL in text and
//     jsonb) or an unpaired surrogate escape (\ud800). The decoders would
//     pass NUL on and silently replace the rest with U+FFFD. 400
//     invalid_json with field naming the JSON path of the string.
//
// It is one pass over the bytes (linear time, no allocation) that tracks
// whether it is inside a string and after a backslash, and counts [ and {.
// Only when it finds bad text does it decode the body a second time, to
// name the field. Malformed JSON is left to the decoder, which reports it.
func CheckJSON(body []byte) error {
	bad, at := scanJSON(body, MaxJSONDepth)
	switch bad {
	case jsonTooDeep:
		return apperr.New(apperr.Invalid, "invalid_json",
			"the JSON value nests arrays and objects deeper than %d levels (at byte %d)", MaxJSONDepth, at)
	case jsonBadText:
		why := badTextReason(body, at)
		path, name, ok := jsonPathAt(body, at)
		if !ok {
			return apperr.New(apperr.Invalid, "invalid_json", "a JSON string at byte %d %s", at, why)
		}
		where := "the value of " + path
		switch {
		case name && path == "":
			where = "a member name"
		case name:
			where = "a member name in " + path
		case path == "":
			where = "a JSON string"
		}
		return &apperr.Error{Kind: apperr.Invalid, Code: "invalid_json", Field: path,
			Message: where + " " + why + "; text must be valid UTF-8 without NUL characters"}
	}
	return nil
}

type jsonProblem int

const (
	jsonOK      jsonProblem = iota
	jsonTooDeep             // more than maxDepth open arrays and objects
	jsonBadText             // invalid UTF-8, \u0000 or an unpaired surrogate inside a string
)

// scanJSON finds the first problem of body and the byte offset where it is.
// Outside strings only quotes and brackets matter (any other byte that is
// not JSON is the decoder's to report); inside, an escape's character never
// ends the string, and \uXXXX escapes and multi-byte characters are checked.
func scanJSON(b []byte, maxDepth int) (jsonProblem, int) {
	depth := 0
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inStr {
			switch c {
			case '"':
				inStr = true
			case '[', '{':
				depth++
				if depth > maxDepth {
					return jsonTooDeep, i
				}
			case ']', '}':
				if depth > 0 { // a stray closer (malformed) must not buy depth
					depth--
				}
			}
			continue
		}
		switch {
		case c == '"':
			inStr = false
		case c == '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				v, ok := hex4(b, i+2)
				if !ok {
					i++ // malformed escape: the decoder reports it
					continue
				}
				switch {
				case v == 0:
					return jsonBadText, i
				case v >= 0xD800 && v <= 0xDBFF: // high surrogate: a low one must follow
					lo, ok := -1, false
					if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						lo, ok = hex4(b, i+8)
					}
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return jsonBadText, i
					}
					i += 11 // both escapes
				case v >= 0xDC00 && v <= 0xDFFF: // low surrogate without a high one
					return jsonBadText, i
				default:
					i += 5
				}
				continue
			}
			i++ // the escaped character
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return jsonBadText, i
			}
			i += n - 1
		}
	}
	return jsonOK, 0
}

// hex4 reads four hex digits at b[i:].
func hex4(b []byte, i int) (int, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// badTextReason says what is wrong at b[at], where scanJSON found bad text.
func badTextReason(b []byte, at int) string {
	if b[at] != '\\' {
		return "is not valid UTF-8 (byte 0x" + strconv.FormatUint(uint64(b[at]), 16) + " at byte " + strconv.Itoa(at) + ")"
	}
	if v, _ := hex4(b, at+2); v == 0 {
		return "holds \\u0000 (NUL)"
	}
	return "holds an unpaired UTF-16 surrogate escape (\\u" + string(b[at+2:at+6]) + ")"
}

// jsonPathAt returns the JSON path (items[0].name) of the string that holds
// byte offset off, and whether that string is a member name (the path is
// then the object's). ok is false when body is not valid JSON up to there.
func jsonPathAt(body []byte, off int) (path string, name, ok bool) {
	type frame struct {
		object  bool
		key     string // object: the member being read
		index   int    // array: the element being read
		wantKey bool   // object: the next string is a member name
	}
	var stack []frame
	done := func() { // a value ended: the enclosing container moves on
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false, false
		}
		isKey := false
		if _, isStr := tok.(string); isStr && len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey {
			isKey = true
		}
		if int(dec.InputOffset()) > off { // tok is the string that holds off
			var p []byte
			for i, f := range stack {
				if i == len(stack)-1 && isKey {
					break
				}
				if f.object {
					if len(p) > 0 {
						p = append(p, '.')
					}
					p = append(p, f.key...)
				} else {
					p = append(p, '[')
					p = strconv.AppendInt(p, int64(f.index), 10)
					p = append(p, ']')
				}
			}
			return string(p), isKey, true
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{object: t == '{', wantKey: true})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if isKey {
				stack[len(stack)-1].key = t
				stack[len(stack)-1].wantKey = false
				continue
			}
			done()
		default:
			done()
		}
	}
}
