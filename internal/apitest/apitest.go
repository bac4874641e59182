// Package apitest checks HTTP exchanges against the service's OpenAPI 3.1
// document. A response's status must be documented for the operation, a
// JSON body must validate against the documented schema (JSON Schema
// 2020-12), the documented headers must be there and valid, and the
// service's own headers must be documented; X-Request-Id must equal the
// body's requestId, and a 405 must carry Allow with the methods the
// document lists for the path. A request is checked against the document
// before it is sent (parameters and JSON body): the service accepting one
// the document refuses is a failure. The validator records which statuses
// each operation answered, for a contract test to require every operation
// with a success and an error. Only tests import it.
package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator validates requests and responses against one OpenAPI document.
type Validator struct {
	doc    map[string]any
	c      *jsonschema.Compiler
	paths  []pathPattern
	mu     sync.Mutex
	schema map[string]*jsonschema.Schema
	seen   map[string]map[int]int // "METHOD template" -> status -> responses checked
}

type pathPattern struct {
	template string
	re       *regexp.Regexp
	params   int
	names    []string // the path parameters, in the order of re's groups
}

// serviceHeaders are the response headers the service itself sets: when a
// response carries one, the document must list it for that status.
var serviceHeaders = []string{"X-Request-Id", "ETag", "Cache-Control", "Idempotent-Replayed", "Retry-After", "Content-Disposition", "Allow"}

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
	v := &Validator{doc: d, c: c, schema: map[string]*jsonschema.Schema{}, seen: map[string]map[int]int{}}
	paths, _ := d["paths"].(map[string]any)
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for tmpl := range paths {
		var names []string
		for _, m := range param.FindAllStringSubmatch(tmpl, -1) {
			names = append(names, m[1])
		}
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `([^/]+)`) + "$")
		v.paths = append(v.paths, pathPattern{template: tmpl, re: re, params: len(names), names: names})
	}
	sort.Slice(v.paths, func(i, j int) bool { return v.paths[i].params < v.paths[j].params })
	return v, nil
}

// Route returns the documented path template matching a concrete path.
func (v *Validator) Route(path string) (string, bool) {
	tmpl, _, ok := v.match(path)
	return tmpl, ok
}

// match returns the documented template of path with its path parameters
// (unescaped when path is the escaped form).
func (v *Validator) match(path string) (string, map[string]string, bool) {
	for _, p := range v.paths {
		m := p.re.FindStringSubmatch(path)
		if m == nil {
			continue
		}
		params := map[string]string{}
		for i, name := range p.names {
			val := m[i+1]
			if u, err := url.PathUnescape(val); err == nil {
				val = u
			}
			params[name] = val
		}
		return p.template, params, true
	}
	return "", nil, false
}

// operation returns the documented operation of method on path's template.
func (v *Validator) operation(method, path string) (tmpl string, params map[string]string, op map[string]any) {
	tmpl, params, ok := v.match(path)
	if !ok {
		return "", nil, nil
	}
	item, _ := v.doc["paths"].(map[string]any)[tmpl].(map[string]any)
	op, _ = item[strings.ToLower(method)].(map[string]any)
	return tmpl, params, op
}

// Operations lists the document's operations as "METHOD template", sorted.
func (v *Validator) Operations() []string {
	var out []string
	for tmpl, item := range v.doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				out = append(out, strings.ToUpper(method)+" "+tmpl)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Statuses returns the statuses of the responses checked for operation
// ("METHOD template"), sorted.
func (v *Validator) Statuses(operation string) []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []int
	for s := range v.seen[operation] {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

// Uncovered lists the operations of the document that no checked response
// answered with a success (below 400) or none with an error (400 and up).
func (v *Validator) Uncovered() []string {
	var out []string
	for _, op := range v.Operations() {
		var ok, failed bool
		for _, s := range v.Statuses(op) {
			ok = ok || s < 400
			failed = failed || s >= 400
		}
		switch {
		case !ok && !failed:
			out = append(out, op+": no response")
		case !ok:
			out = append(out, op+": no success")
		case !failed:
			out = append(out, op+": no error")
		}
	}
	return out
}

// CheckRequest validates a request before it is sent: the documented
// parameters (path, query and header; required ones present, each value
// valid by its schema) and the JSON body against the request body's
// schema. Requests to undocumented operations pass: their answer is
// judged by Check. The service may refuse a request the document allows
// (its rules go further than a schema); it must not accept one the
// document refuses, which Client.Do reports.
func (v *Validator) CheckRequest(method string, u *url.URL, header http.Header, body []byte) error {
	tmpl, params, op := v.operation(method, u.EscapedPath())
	if op == nil {
		return nil
	}
	where := method + " " + tmpl
	ps, _ := op["parameters"].([]any)
	query := u.Query()
	for i, raw := range ps {
		p, _ := raw.(map[string]any)
		name, _ := p["name"].(string)
		in, _ := p["in"].(string)
		required, _ := p["required"].(bool)
		var val string
		var present bool
		switch in {
		case "path":
			val, present = params[name]
		case "query":
			val = query.Get(name)
			present = query.Has(name)
			if empty, _ := p["allowEmptyValue"].(bool); empty && val == "" {
				present = false // given empty counts as not given
			}
		case "header":
			present = len(header.Values(name)) > 0
			val = header.Get(name)
		default:
			continue
		}
		if !present {
			if required {
				return fmt.Errorf("%s: the required %s parameter %s is missing", where, in, name)
			}
			continue
		}
		ptr := "#/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/parameters/" + strconv.Itoa(i) + "/schema"
		if err := v.validateText(ptr, val); err != nil {
			return fmt.Errorf("%s: %s parameter %s = %q: %v", where, in, name, val, err)
		}
	}
	rb, _ := op["requestBody"].(map[string]any)
	if rb == nil {
		return nil // a body the document does not describe is not read
	}
	if len(body) == 0 {
		if required, _ := rb["required"].(bool); required {
			return fmt.Errorf("%s: the request body is required", where)
		}
		return nil
	}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	content, _ := rb["content"].(map[string]any)
	if _, ok := content[ct]; !ok {
		return fmt.Errorf("%s: request content type %q is not documented", where, ct)
	}
	if ct != "application/json" {
		return nil
	}
	ptr := "#/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/requestBody/content/" + escape(ct) + "/schema"
	sch, err := v.compile(ptr)
	if err != nil {
		return fmt.Errorf("%s: compile %s: %w", where, ptr, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: the request body is not JSON: %w", where, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s: the request body does not match the OpenAPI document: %v\nbody: %s", where, err, body)
	}
	return nil
}

// validateText validates a parameter or header value, which is text, by
// the schema at ptr: read as the integer, number or boolean the schema
// asks for, when it does.
func (v *Validator) validateText(ptr, val string) error {
	sch, err := v.compile(ptr)
	if err != nil {
		return fmt.Errorf("compile %s: %w", ptr, err)
	}
	raw, _ := v.resolve(ptr).(map[string]any)
	var inst any = val
	types := map[string]bool{}
	switch t := raw["type"].(type) {
	case string:
		types[t] = true
	case []any:
		for _, x := range t {
			s, _ := x.(string)
			types[s] = true
		}
	}
	switch {
	case types["string"]:
	case types["integer"]:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		inst = json.Number(strconv.FormatInt(n, 10))
	case types["number"]:
		if _, err := strconv.ParseFloat(val, 64); err != nil {
			return fmt.Errorf("not a number")
		}
		inst = json.Number(val)
	case types["boolean"]:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return fmt.Errorf("not a boolean")
		}
		inst = b
	}
	return sch.Validate(inst)
}

// resolve returns the raw document value at a JSON pointer of the
// document ("#/paths/..."), following no references.
func (v *Validator) resolve(ptr string) any {
	var cur any = v.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// Check validates one response. Responses of undocumented routes (404 for
// unknown paths, 405) must still carry the error body; a 405 must carry
// Allow listing the methods the document has for the path.
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
	tmpl, _, op := v.operation(method, path)
	var ptr string
	if op == nil {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s: no such operation in the OpenAPI document (status %d)", method, path, status)
		}
		if status == http.StatusMethodNotAllowed {
			if err := v.checkAllow(method, path, tmpl, header); err != nil {
				return err
			}
		}
		if method == http.MethodHead {
			return nil // no body
		}
		ptr = "#/components/schemas/ErrorBody"
		ct = "application/json"
	} else {
		v.mu.Lock()
		key := method + " " + tmpl
		if v.seen[key] == nil {
			v.seen[key] = map[int]int{}
		}
		v.seen[key][status]++
		v.mu.Unlock()
		responses, _ := op["responses"].(map[string]any)
		resp, ok := responses[strconv.Itoa(status)].(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: status %d is not documented", method, tmpl, status)
		}
		if err := v.checkHeaders(method, tmpl, status, resp, header); err != nil {
			return err
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

// checkHeaders checks a response's headers against the documented ones:
// each required one present, each present one valid by its schema, and
// each of the service's own headers documented.
func (v *Validator) checkHeaders(method, tmpl string, status int, resp map[string]any, header http.Header) error {
	documented := map[string]bool{}
	hs, _ := resp["headers"].(map[string]any)
	for name, raw := range hs {
		documented[http.CanonicalHeaderKey(name)] = true
		h, _ := raw.(map[string]any)
		vals := header.Values(name)
		if len(vals) == 0 {
			if required, _ := h["required"].(bool); required {
				return fmt.Errorf("%s %s status %d: the documented header %s is missing", method, tmpl, status, name)
			}
			continue
		}
		if len(vals) > 1 {
			return fmt.Errorf("%s %s status %d: header %s sent %d times", method, tmpl, status, name, len(vals))
		}
		ptr := "#/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(status) + "/headers/" + escape(name) + "/schema"
		if err := v.validateText(ptr, vals[0]); err != nil {
			return fmt.Errorf("%s %s status %d: header %s: %q does not match the OpenAPI document: %v", method, tmpl, status, name, vals[0], err)
		}
	}
	for _, name := range serviceHeaders {
		if header.Get(name) != "" && !documented[http.CanonicalHeaderKey(name)] {
			return fmt.Errorf("%s %s status %d: the service sends the header %s (%q), the document does not list it", method, tmpl, status, name, header.Get(name))
		}
	}
	return nil
}

// checkAllow checks the Allow header of a 405: the methods of the path's
// operations in the document, or at least one method for a path the
// document does not have.
func (v *Validator) checkAllow(method, path, tmpl string, header http.Header) error {
	allow := header.Values("Allow")
	if len(allow) != 1 || allow[0] == "" {
		return fmt.Errorf("%s %s: 405 without one Allow header (%q)", method, path, allow)
	}
	if tmpl == "" {
		return nil
	}
	var want []string
	for m := range v.doc["paths"].(map[string]any)[tmpl].(map[string]any) {
		switch m {
		case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			want = append(want, strings.ToUpper(m))
		}
	}
	sort.Strings(want)
	if got := allow[0]; got != strings.Join(want, ", ") {
		return fmt.Errorf("%s %s: Allow %q, the document has %q for %s", method, path, got, strings.Join(want, ", "), tmpl)
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

// Client sends requests to a base URL and checks every exchange: the
// request against the document before it is sent, the response after.
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
// A response below 400 to a request the document refuses (a parameter or
// body it types differently, a required one missing) fails the test: the
// document must accept what the service does.
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
	var refused error
	if c.V != nil {
		refused = c.V.CheckRequest(method, req.URL, req.Header, body)
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
		if err := c.V.Check(method, req.URL.EscapedPath(), out.Status, out.Header, out.Body); err != nil {
			c.T.Errorf("OpenAPI: %v", err)
		}
		if refused != nil && out.Status < 400 {
			c.T.Errorf("OpenAPI: the service accepted (%d) a request the document refuses: %v", out.Status, refused)
		}
	}
	return out
}
