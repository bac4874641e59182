package httpx

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/apperr"
)

// jsonOracle is what CheckJSON should find in a valid JSON body, worked out
// with encoding/json's tokenizer and decoder instead of the one-pass scan:
// where the nesting first exceeds MaxJSONDepth, and the first string that
// the decoder would change (NUL passed on, or anything replaced by U+FFFD),
// with its path and whether it is a member name. Offsets are -1 when absent.
type jsonOracle struct {
	deepAt, badAt int
	badPath       string
	badName       bool
}

func oracle(t *testing.T, body []byte) jsonOracle {
	type frame struct {
		object  bool
		key     string
		index   int
		wantKey bool
	}
	o := jsonOracle{deepAt: -1, badAt: -1}
	var stack []frame
	path := func(name bool) string {
		var p strings.Builder
		for i, f := range stack {
			if i == len(stack)-1 && name {
				break
			}
			if f.object {
				if p.Len() > 0 {
					p.WriteByte('.')
				}
				p.WriteString(f.key)
			} else {
				p.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		return p.String()
	}
	done := func() {
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
			return o
		}
		end := int(dec.InputOffset())
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, frame{object: v == '{', wantKey: true})
				if len(stack) > MaxJSONDepth && o.deepAt < 0 {
					o.deepAt = end - 1
				}
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			name := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey
			start := literalStart(t, body, end)
			if o.badAt < 0 && changedByDecoder(t, body[start:end]) {
				o.badAt, o.badPath, o.badName = start, path(name), name
			}
			if name {
				stack[len(stack)-1].key, stack[len(stack)-1].wantKey = v, false
				continue
			}
			done()
		default:
			done()
		}
	}
}

// literalStart finds the opening quote of the string literal that ends at
// end: the first quote before it that no backslash escapes.
func literalStart(t *testing.T, body []byte, end int) int {
	if end < 2 || body[end-1] != '"' {
		t.Fatalf("oracle: no string literal ends at %d", end)
	}
	for i := end - 2; i >= 0; i-- {
		if body[i] != '"' {
			continue
		}
		n := 0
		for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i
		}
	}
	t.Fatalf("oracle: no opening quote before %d", end)
	return 0
}

// changedByDecoder reports whether encoding/json decodes the literal to
// other text than it spells: NUL, or more U+FFFD than the literal writes
// (raw or as an escape), since each replaced byte or surrogate adds one.
func changedByDecoder(t *testing.T, lit []byte) bool {
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		t.Fatalf("oracle: literal %q: %v", lit, err)
	}
	written := bytes.Count(lit, []byte("\uFFFD"))
	for i := 1; i < len(lit)-1; i++ {
		if lit[i] != '\\' {
			continue
		}
		if lit[i+1] == 'u' && strings.EqualFold(string(lit[i+2:i+6]), "fffd") {
			written++
		}
		i++ // the escaped character; the rest of \uXXXX is plain text
	}
	return strings.ContainsRune(s, 0) || strings.Count(s, "\uFFFD") > written
}

// FuzzCheckJSON: CheckJSON never panics, refuses only with 400
// invalid_json, and on valid JSON refuses exactly what the oracle finds,
// reporting the first problem (too deep, or bad text at its path).
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{"orderNo":"A-1","items":[{"name":"Kaffee","quantity":2}]}`,
		nested(32), nested(33), strings.Repeat("]", 40) + strings.Repeat("[", 33),
		`{"s":"\"[[[[\\","d":[[[]]]}`,
		`{"items":[{"name":"a"},{"name":"b\u0000"}]}`,
		`{"billingAddress":{"ci\u0000ty":"x"}}`,
		"{\"a\":1,\"b\":[\"ok\",\"\xff\"]}",
		"{\"c\":\"\xc0\xaf\xed\xa0\x80\"}",
		`{"n":"\ud800"}`, `{"n":"\ud83d\ude00"}`, `{"n":"\ude00\ud83d"}`, `{"n":"\uD800\u0041"}`,
		`{"n":"\\u0000\\ud800"}`, `{"n":"\ufffd","m":"` + "\uFFFD" + `"}`,
		`"\u0000"`, `{"a" "\u0000"}`, `{"a":"\u00"}`, `[1,"\u0000"]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := CheckJSON(body)
		var e *apperr.Error
		if err != nil {
			if e = apperr.As(err); e == nil || e.Kind != apperr.Invalid || e.Code != "invalid_json" {
				t.Fatalf("want 400 invalid_json, got %v", err)
			}
		}
		if !json.Valid(body) {
			return // malformed JSON is the decoder's to report
		}
		o := oracle(t, body)
		switch {
		case o.deepAt < 0 && o.badAt < 0:
			if err != nil {
				t.Fatalf("refused %q: %v", body, err)
			}
		case err == nil:
			t.Fatalf("accepted %q (too deep at %d, bad text at %d)", body, o.deepAt, o.badAt)
		case o.badAt < 0 || (o.deepAt >= 0 && o.deepAt < o.badAt):
			if !strings.Contains(e.Message, "deeper than") {
				t.Fatalf("%q: want the depth refusal, got %v", body, err)
			}
		default:
			if e.Field != o.badPath || strings.HasPrefix(e.Message, "a member name") != o.badName {
				t.Fatalf("%q: want bad text at %q (member name %v), got field %q: %v", body, o.badPath, o.badName, e.Field, err)
			}
		}
	})
}
