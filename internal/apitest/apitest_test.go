package apitest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/apitest"
)

// doc is a small document: a versioned read with ETag, a write with a
// required JSON body, a required header and an optional replay header.
const doc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/things/{id}": {
      "get": {
        "parameters": [
          {"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[a-z/]+$"}},
          {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 10}},
          {"name": "status", "in": "query", "allowEmptyValue": true, "schema": {"type": "string", "enum": ["open"]}}
        ],
        "responses": {
          "200": {"description": "ok", "headers": {
              "X-Request-Id": {"required": true, "schema": {"type": "string"}},
              "ETag": {"required": true, "schema": {"type": "string", "pattern": "^\"[^\"]*\"$"}}},
            "content": {"application/json": {"schema": {"type": "object", "required": ["requestId"], "properties": {"requestId": {"type": "string"}}}}}},
          "404": {"description": "no", "headers": {"X-Request-Id": {"required": true, "schema": {"type": "string"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
        }
      },
      "put": {
        "parameters": [
          {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
          {"name": "Idempotency-Key", "in": "header", "required": true, "schema": {"type": "string", "minLength": 1}}
        ],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
          "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "n": {"type": ["integer", "null"]}}}}}},
        "responses": {
          "200": {"description": "ok", "headers": {
              "X-Request-Id": {"required": true, "schema": {"type": "string"}},
              "Idempotent-Replayed": {"schema": {"type": "string", "enum": ["true"]}}}}
        }
      }
    }
  },
  "components": {"schemas": {"ErrorBody": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object"}}}}}
}`

func validator(t *testing.T) *apitest.Validator {
	t.Helper()
	v, err := apitest.New([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckRequest(t *testing.T) {
	t.Parallel()
	v := validator(t)
	json := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"k"}}
	tests := []struct {
		name, method, path string
		header             http.Header
		body               string
		refused            string // "" when valid
	}{
		{"read", "GET", "/things/a?limit=3", nil, "", ""},
		{"escaped path parameter", "GET", "/things/a%2Fb", nil, "", ""},
		{"path parameter off its pattern", "GET", "/things/A", nil, "", "path parameter id"},
		{"integer parameter", "GET", "/things/a?limit=x", nil, "", "not an integer"},
		{"integer over maximum", "GET", "/things/a?limit=11", nil, "", "query parameter limit"},
		{"empty allowed", "GET", "/things/a?status=", nil, "", ""},
		{"enum", "GET", "/things/a?status=closed", nil, "", "query parameter status"},
		{"write", "PUT", "/things/a", json, `{"name":"x","n":null,"extra":1}`, ""},
		{"body missing", "PUT", "/things/a", json, "", "request body is required"},
		{"body typed differently", "PUT", "/things/a", json, `"{\"name\":\"x\"}"`, "does not match"},
		{"member typed differently", "PUT", "/things/a", json, `{"name":1}`, "does not match"},
		{"required header missing", "PUT", "/things/a", http.Header{"Content-Type": {"application/json"}}, `{"name":"x"}`, "Idempotency-Key is missing"},
		{"undocumented content type", "PUT", "/things/a", http.Header{"Content-Type": {"text/plain"}, "Idempotency-Key": {"k"}}, `x`, "not documented"},
		{"undocumented operation", "DELETE", "/things/a", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse("http://h" + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			err = v.CheckRequest(tt.method, u, tt.header, []byte(tt.body))
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("got %v, want an error with %q", err, tt.refused)
			}
		})
	}
}

func TestCheckResponseHeaders(t *testing.T) {
	t.Parallel()
	v := validator(t)
	h := func(kv ...string) http.Header {
		out := http.Header{"X-Request-Id": {"r1"}}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	withJSON := func(hd http.Header) http.Header { hd.Set("Content-Type", "application/json"); return hd }
	body := []byte(`{"requestId":"r1"}`)
	tests := []struct {
		name, method string
		status       int
		header       http.Header
		body         []byte
		fails        string
	}{
		{"versioned read", "GET", 200, withJSON(h("ETag", `"7"`)), body, ""},
		{"ETag missing", "GET", 200, withJSON(h()), body, "header ETag is missing"},
		{"ETag unquoted", "GET", 200, withJSON(h("ETag", `7`)), body, "header ETag"},
		{"undocumented service header", "GET", 200, withJSON(h("ETag", `"7"`, "Retry-After", "1")), body, "does not list it"},
		{"replay", "PUT", 200, h("Idempotent-Replayed", "true"), nil, ""},
		{"replay header value", "PUT", 200, h("Idempotent-Replayed", "yes"), nil, "Idempotent-Replayed"},
		{"undocumented status", "PUT", 404, withJSON(h()), []byte(`{"error":{}}`), "not documented"},
		{"405 with Allow", "DELETE", 405, withJSON(h("Allow", "GET, PUT")), []byte(`{"error":{}}`), ""},
		{"405 without Allow", "DELETE", 405, withJSON(h()), []byte(`{"error":{}}`), "without one Allow"},
		{"405 with another Allow", "DELETE", 405, withJSON(h("Allow", "GET")), []byte(`{"error":{}}`), `the document has "GET, PUT"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check(tt.method, "/things/a", tt.status, tt.header, tt.body)
			switch {
			case tt.fails == "" && err != nil:
				t.Errorf("failed: %v", err)
			case tt.fails != "" && (err == nil || !strings.Contains(err.Error(), tt.fails)):
				t.Errorf("got %v, want an error with %q", err, tt.fails)
			}
		})
	}
}

func TestUncovered(t *testing.T) {
	t.Parallel()
	v := validator(t)
	ok := http.Header{"X-Request-Id": {"r"}, "Content-Type": {"application/json"}, "Etag": {`"1"`}}
	if err := v.Check("GET", "/things/a", 200, ok, []byte(`{"requestId":"r"}`)); err != nil {
		t.Fatal(err)
	}
	if err := v.Check("GET", "/things/b", 404, http.Header{"X-Request-Id": {"r"}, "Content-Type": {"application/json"}}, []byte(`{"error":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := v.Check("PUT", "/things/a", 200, http.Header{"X-Request-Id": {"r"}}, nil); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(v.Uncovered(), "; ")
	if got != "PUT /things/{id}: no error" {
		t.Errorf("uncovered %q, want the PUT without an error", got)
	}
}
