package command

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// stdValue is what encoding/json's Decoder with UseNumber makes of b, the
// reference of parseJSONValue: ok is false where it refuses b.
func stdValue(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

var jsonValueSeeds = []string{
	`{}`, `[]`, ` {"a":1} `, `{"a":[1,2.5,-0.1e+3,true,false,null,"x"]}`, `{"a":{"b":{"c":[]}}}`,
	`{"a":1,"a":2}`, `"Köln"`, `"Lindenstraße 12"`, `"\u00e4\n\t\"\\\/\b\f\r"`, `"\ud83d\ude00"`, `"\ud83d"`,
	`"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, "\"\xff\xfe\"", "\"a\xc3\"", `"\u0000"`, "\"\x01\"",
	`01`, `-`, `1.`, `1e`, `.5`, `-0`, `1E+2`, `tru`, `truex`, `nul`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`,
	`{"a":1}x`, `{"a":1} {}`, ``, ` `, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, `{1:2}`, `[`, `{`, `{"a":`,
	`{"orderNo":"A-1","items":[{"quantity":2,"unitGrossCents":1899,"taxRate":7}],"billingAddress":{"country_code":"DE"}}`,
}

// parseJSONValue gives exactly encoding/json's values, and refuses what it
// refuses.
func TestParseJSONValueMatchesEncodingJSON(t *testing.T) {
	for _, s := range append(jsonValueSeeds, string(benchOrderBody)) {
		checkJSONValue(t, []byte(s))
	}
}

func FuzzParseJSONValue(f *testing.F) {
	for _, s := range append(jsonValueSeeds, string(benchOrderBody)) {
		f.Add([]byte(s))
	}
	f.Fuzz(checkJSONValue)
}

func checkJSONValue(t *testing.T, b []byte) {
	want, wantOK := stdValue(b)
	got, err := parseJSONValue(b)
	if (err == nil) != wantOK {
		t.Fatalf("%q: parseJSONValue error %v, encoding/json accepts: %v", b, err, wantOK)
	}
	if wantOK && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: parseJSONValue = %#v, encoding/json = %#v", b, got, want)
	}
}
