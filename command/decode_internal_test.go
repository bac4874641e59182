package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// The decoder must give exactly what encoding/json gives for every body it
// accepts; bodies it refuses go to encoding/json anyway.
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
		`{"a":[],"b":{},"c":[null,[{}]],"d":"\u0000\u001f","e":-1.5E+10}`,
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
		if !reflect.DeepEqual(got.m, want) {
			t.Errorf("%s:\n got %#v\nwant %#v", b, got.m, want)
		}
	}
	for _, b := range []string{`{"a":1}x`, `{"a":}`, `[1]`, `{"a":1,}`, `{"a":01}`, `"s"`, `{"a":1} {"b":2}`, `{"a":tru}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a"}`, `{"a":1`, `[`} {
		if _, err := decodeObject([]byte(b)); err == nil {
			t.Errorf("%s: accepted", b)
		}
	}
}

// FuzzDecodeObject: for any body, the decoder accepts exactly what
// encoding/json accepts as one JSON object, with the same values.
func FuzzDecodeObject(f *testing.F) {
	for _, b := range []string{`{"a":1}`, `{"a":[1,"x",{"b":null}],"c":true}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":1}x`, `{"a":1e400}`, ` {"a":-0.0} `, `{"a":{"a":{"a":[]}}}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeObject(body)
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var want any
		stdErr := dec.Decode(&want)
		if stdErr == nil {
			if _, end := dec.Token(); end != io.EOF {
				stdErr = errors.New("trailing data")
			}
		}
		_, isObject := want.(map[string]any)
		if stdErr != nil || !isObject {
			if err == nil {
				t.Fatalf("%q accepted, encoding/json: %v (%T)", body, stdErr, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q refused (%v), encoding/json accepts it", body, err)
		}
		if !reflect.DeepEqual(got.m, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", body, got.m, want)
		}
	})
}
