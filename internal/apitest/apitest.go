// Package apitest checks HTTP responses against the service's OpenAPI 3.1
// document: the status must be documented for the operation and a JSON body
// must validate against the documented schema (JSON Schema 2020-12). It also
// checks that X-Request-Id equals the body's requestId. Only tests import it.
package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator validates responses against one OpenAPI document.
type Validator struct {
	doc    map[string]any
	c      *jsonschema.Compiler
	paths  []pathPattern
	mu     sync.Mutex
	schema map[string]*jsonschema.Schema
}

type pathPattern struct {
	template string
	re       *regexp.Regexp
	params   int
}

// New parses an OpenAPI document.
func New(doc []byte) (*Validator, error) {
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("mem://openapi.json", parsed); err != nil {
		return nil, err
	}
	v := &Validator{doc: d, c: c, schema: map[string]*jsonschema.Schema{}}
	paths, _ := d["paths"].(map[string]any)
	for tmpl := range paths {
		n := strings.Count(tmpl, "{")
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$")
		v.paths = append(v.paths, pathPattern{template: tmpl, re: re, params: n})
	}
	sort.Slice(v.paths, func(i, j int) bool { return v.paths[i].params < v.paths[j].params })
	return v, nil
}

// Route returns the documented path template matching a concrete path.
func (v *Validator) Route(path string) (string, bool) {
	for _, p := range v.paths {
		if p.re.MatchString(path) {
			return p.template, true
		}
	}
	return "", false
}

// Check validates one response. Responses of undocumented routes (404 for
// unknown paths, 405) must still carry the error body.
func (v *Validator) Check(method, path string, status int, header http.Header, body []byte) error {
	if id := header.Get("X-Request-Id"); id == "" {
		return fmt.Errorf("%s %s: no X-Request-Id header", method, path)
	}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if ct == "application/json" && len(body) > 0 {
		var b map[string]any
		if err := json.Unmarshal(body, &b); err == nil {
			if rid, ok := b["requestId"]; ok && rid != header.Get("X-Request-Id") {
				return fmt.Errorf("%s %s: requestId %v differs from X-Request-Id %s", method, path, rid, header.Get("X-Request-Id"))
			}
		}
	}
	tmpl, ok := v.Route(path)
	op := map[string]any(nil)
	if ok {
		item, _ := v.doc["paths"].(map[string]any)[tmpl].(map[string]any)
		op, _ = item[strings.ToLower(method)].(map[string]any)
	}
	var ptr string
	if op == nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s: no such operation in the OpenAPI document (status %d)", method, path, status)
		}
		ptr = "#/components/schemas/ErrorBody"
		ct = "application/json"
	} else {
		responses, _ := op["responses"].(map[string]any)
		resp, ok := responses[strconv.Itoa(status)].(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: status %d is not documented", method, tmpl, status)
		}
		content, _ := resp["content"].(map[string]any)
		if len(content) == 0 {
			if len(body) > 0 {
				return fmt.Errorf("%s %s: status %d documents no body, got %d bytes", method, tmpl, status, len(body))
			}
			return nil
		}
		if _, ok := content[ct]; !ok {
			return fmt.Errorf("%s %s: status %d: content type %q is not documented", method, tmpl, status, ct)
		}
		if ct != "application/json" {
			return nil
		}
		ptr = "#/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(status) +
			"/content/" + escape(ct) + "/schema"
	}
	sch, err := v.compile(ptr)
	if err != nil {
		return fmt.Errorf("%s %s: compile %s: %w", method, path, ptr, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: body is not JSON: %w", method, path, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s %s status %d: body does not match the OpenAPI document: %v\nbody: %s", method, path, status, err, body)
	}
	return nil
}

func (v *Validator) compile(ptr string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.schema[ptr]; ok {
		return s, nil
	}
	s, err := v.c.Compile("mem://openapi.json" + ptr)
	if err != nil {
		return nil, err
	}
	v.schema[ptr] = s
	return s, nil
}

func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Client sends requests to a base URL and checks every response.
type Client struct {
	T       testing.TB
	BaseURL string
	V       *Validator
	HTTP    *http.Client
}

// Response is a checked response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic map.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// ErrorCode returns error.code and error.field of an error body.
func (r Response) ErrorCode(t testing.TB) (code, field string) {
	t.Helper()
	m := r.JSON(t)
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", r.Body)
	}
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	return code, field
}

// Do sends a request; key "" sends none. Headers are name, value pairs.
func (c *Client) Do(method, path, key string, body []byte, headers ...string) Response {
	c.T.Helper()
	req, err := http.NewRequest(method, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		c.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		c.T.Fatal(err)
	}
	out := Response{Status: resp.StatusCode, Header: resp.Header, Body: buf.Bytes()}
	if c.V != nil {
		if err := c.V.Check(method, req.URL.Path, out.Status, out.Header, out.Body); err != nil {
			c.T.Errorf("OpenAPI: %v", err)
		}
	}
	return out
}
