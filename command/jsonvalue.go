package command

import (
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// parseJSONValue decodes one JSON value, surrounded by nothing but white
// space, into the values encoding/json's Decoder with UseNumber gives
// (map[string]any, []any, string, json.Number, bool, nil), in one pass
// over the bytes. It reports only that b is not such a value: the caller
// decodes it again with encoding/json for the error it answers.
func parseJSONValue(b []byte) (any, error) {
	p := jsonParser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, errJSONSyntax
	}
	return v, nil
}

var errJSONSyntax = errors.New("malformed JSON")

// maxParseDepth bounds the recursion; deeper bodies (refused before by
// httpx.CheckJSON) go to encoding/json.
const maxParseDepth = 1000

type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	p.space()
	if p.i >= len(p.b) || depth > maxParseDepth {
		return nil, errJSONSyntax
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, errJSONSyntax
}

func (p *jsonParser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return errJSONSyntax
	}
	p.i += len(word)
	return nil
}

func (p *jsonParser) object(depth int) (any, error) {
	p.i++ // {
	m := make(map[string]any, 8)
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, errJSONSyntax
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, errJSONSyntax
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v // a repeated name: the last wins, as in encoding/json
		p.space()
		if p.i >= len(p.b) {
			return nil, errJSONSyntax
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, errJSONSyntax
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.b) {
			return nil, errJSONSyntax
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, errJSONSyntax
		}
	}
}

// str reads a string at p.i (its opening quote). Plain ASCII without
// escapes is one copy; anything else is decoded as encoding/json does:
// invalid UTF-8 and unpaired surrogate escapes become U+FFFD.
func (p *jsonParser) str() (string, error) {
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return string(p.b[start:j]), nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return p.slowStr(start)
		}
	}
	return "", errJSONSyntax
}

func (p *jsonParser) slowStr(start int) (string, error) {
	out := make([]byte, 0, 64)
	j := start
	for j < len(p.b) {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return string(out), nil
		case c < 0x20:
			return "", errJSONSyntax
		case c == '\\':
			if j+1 >= len(p.b) {
				return "", errJSONSyntax
			}
			switch e := p.b[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				j += 2
			case 'b':
				out, j = append(out, '\b'), j+2
			case 'f':
				out, j = append(out, '\f'), j+2
			case 'n':
				out, j = append(out, '\n'), j+2
			case 'r':
				out, j = append(out, '\r'), j+2
			case 't':
				out, j = append(out, '\t'), j+2
			case 'u':
				r, ok := hex4(p.b, j+2)
				if !ok {
					return "", errJSONSyntax
				}
				j += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if j+1 < len(p.b) && p.b[j] == '\\' && p.b[j+1] == 'u' {
						r2, ok2 = hex4(p.b, j+2)
					}
					if d := utf16.DecodeRune(r, r2); ok2 && d != utf8.RuneError {
						r, j = d, j+6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", errJSONSyntax
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(p.b[j:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, p.b[j:j+size]...)
			}
			j += size
		}
	}
	return "", errJSONSyntax
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a JSON number (-?int frac? exp?) as its literal text.
func (p *jsonParser) number() (any, error) {
	start, b := p.i, p.b
	j := start
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return nil, errJSONSyntax
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return nil, errJSONSyntax
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j >= len(b) || b[j] < '0' || b[j] > '9' {
			return nil, errJSONSyntax
		}
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	p.i = j
	return json.Number(b[start:j]), nil
}
