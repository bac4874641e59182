package command

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// The decoder must give exactly what encoding/json gives for every body it
// accepts (its numbers are the v1 module's Number, the same literal text);
// bodies it refuses go to encoding/json anyway.
func TestDecodeObjectAgreesWithEncodingJSON(t *testing.T) {
	bodies := []string{
		`{"orderNo":"A-1","items":[{"name":"Kaffee","quantity":2,"unitGrossCents":1899,"taxRate":7}]}`,
		`{"a":1.50,"b":1e3,"c":-0,"d":12345678901234567890,"e":0.1e-2,"f":null,"g":true,"h":false}`,
		`{"dup":1,"dup":2}`,
		`{"s":"Lindenstra\u00dfe \"12\" \\ \/ \b\f\n\r\t","emoji":"\ud83d\ude00","bad":"\ud800"}`,
		"{\"raw\":\"Straße 1\"}",
		"{\"invalid\":\"\xff\xfe\"}",
		`  {"nested":{"deep":[[],{},[1,[2,[3]]]]}}  `,
		`{"":"empty key","k":""}`,
	}
	for _, b := range bodies {
		got, err := decodeObject([]byte(b))
		if err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(b)))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%s: encoding/json: %v", b, err)
		}
		if want = ownNumbers(want); !reflect.DeepEqual(got.m, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", b, got.m, want)
		}
	}
	for _, b := range []string{`{"a":1}x`, `{"a":}`, `[1]`, `{"a":1,}`, `{"a":01}`, `"s"`} {
		if _, err := decodeObject([]byte(b)); err == nil {
			t.Errorf("%s: accepted", b)
		}
	}
}

// ownNumbers returns v with encoding/json's numbers as the decoder's type.
func ownNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return jsonNumber(x)
	case map[string]any:
		for k, e := range x {
			x[k] = ownNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = ownNumbers(e)
		}
	}
	return v
}
