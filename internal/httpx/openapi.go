package httpx

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/swaggest/jsonschema-go"
	"github.com/swaggest/openapi-go"
	"github.com/swaggest/openapi-go/openapi31"
)

// APIVersion is the version of the interface description.
const APIVersion = "1.0.0"

const apiDescription = `Turns a seller's orders into legally valid German e-invoices (ZUGFeRD, XRechnung 3.0), archives them under GoBD and serves status, metadata, PDF and XML.

All money amounts are integer cents. Every response carries the header X-Request-Id, equal to the body's requestId. Errors have the body {"error":{"code","message","field"},"requestId"}; field is the JSON path of the offending value: object keys joined with dots, array indices in brackets, for example items[0].quantity or billingAddress.country_code.

Request bodies are limited to 1 MiB (413 payload_too_large) and must be application/json (415 unsupported_media_type). They may nest arrays and objects at most 32 levels deep, and all text (string values and member names, path and query parameters, the Idempotency-Key header) must be valid UTF-8 without NUL characters (400 invalid_json or invalid_request, field naming the value). String lengths are limits in characters (Unicode code points), as each field's maxLength states; longer values, more items than maxItems and amounts beyond maximum are 422 validation_failed with the field. Members a body's schema does not list are accepted and ignored (forward compatibility: additionalProperties is allowed), so a client may send fields of a later version. Every key has a request rate limit (default 1,000 requests/s with a burst of 2,000, configurable per project); over it the answer is 429 rate_limited with Retry-After. When the service is overloaded it answers 503 with Retry-After instead of holding the request. A method a path does not serve is 405 method_not_allowed with the header Allow listing the methods it does.`

// OpenAPI renders the OpenAPI 3.1 document of routes.
func OpenAPI(routes []Route) ([]byte, error) {
	r := openapi31.NewReflector()
	r.Spec.Info.WithTitle("Order-to-Invoice Service").WithVersion(APIVersion).WithDescription(apiDescription)
	r.Spec.WithServers(openapi31.Server{URL: "http://127.0.0.1:8080"})
	r.JSONSchemaReflector().DefaultOptions = append(r.JSONSchemaReflector().DefaultOptions,
		jsonschema.InterceptDefName(func(_ reflect.Type, name string) string { return schemaName(name) }),
		jsonschema.InterceptNullability(nullableRef))
	r.SpecEns().SetHTTPBearerTokenSecurity("bearer", "API key", "API key of one project: Authorization: Bearer <API key>")

	for _, rt := range routes {
		oc, err := r.NewOperationContext(rt.Method, rt.Path)
		if err != nil {
			return nil, fmt.Errorf("openapi %s %s: %w", rt.Method, rt.Path, err)
		}
		oc.SetID(rt.OperationID)
		oc.SetSummary(rt.Summary)
		desc := rt.Description
		if !rt.Public() {
			if rt.Scope == ScopeAnyKey {
				desc = strings.TrimSpace(desc + "\n\nAny integration key of the project: required scope `" +
					strings.ReplaceAll(rt.Scope.acceptedText(), " or ", "` or `") + "`; a key with only `" + string(ScopeArchiveRead) + "` is 403.")
			} else {
				desc = strings.TrimSpace(desc + "\n\nRequired scope: `" + string(rt.Scope) + "`.")
			}
			oc.AddSecurity("bearer")
		}
		oc.SetDescription(desc)
		if rt.Tag != "" {
			oc.SetTags(rt.Tag)
		}
		if rt.Input != nil {
			oc.AddReqStructure(rt.Input)
		}
		if rt.Body != nil {
			oc.AddReqStructure(rt.Body, openapi.WithContentType("application/json"))
		}
		// A body of the route's own at an error status (the health check's
		// 503) is one of two: its own or the error body that every route
		// can answer there (an overloaded server's 503).
		own := map[int]map[string]any{}
		for _, resp := range rt.Responses {
			opts := []openapi.ContentOption{openapi.WithHTTPStatus(resp.Status)}
			if resp.ContentType != "" {
				opts = append(opts, openapi.WithContentType(resp.ContentType))
			}
			if resp.Description != "" {
				d := resp.Description
				opts = append(opts, func(cu *openapi.ContentUnit) { cu.Description = d })
			}
			if status := resp.Status; status >= 400 && resp.ContentType == "" {
				opts = append(opts, openapi.WithCustomize(func(cor openapi.ContentOrReference) {
					own[status] = jsonSchemaOf(cor)
				}))
			}
			oc.AddRespStructure(resp.Body, opts...)
		}
		for _, status := range errorStatuses(rt) {
			oc.AddRespStructure(ErrorBody{}, openapi.WithHTTPStatus(status), openapi.WithCustomize(func(cor openapi.ContentOrReference) {
				if mine := own[status]; mine != nil {
					setJSONSchema(cor, map[string]any{"oneOf": []any{mine, jsonSchemaOf(cor)}})
				}
			}))
		}
		if err := r.AddOperation(oc); err != nil {
			return nil, fmt.Errorf("openapi %s %s: %w", rt.Method, rt.Path, err)
		}
	}
	raw, err := json.Marshal(r.Spec)
	if err != nil {
		return nil, err
	}
	return decorate(raw, routes)
}

// errorStatuses are the error responses a route can give: its own plus what
// every route (400: path and query parameters that are not text, see
// checkRequest) and every authenticated route can answer.
func errorStatuses(rt Route) []int {
	set := map[int]bool{http.StatusBadRequest: true}
	for _, s := range rt.Errors {
		set[s] = true
	}
	if !rt.Public() {
		set[http.StatusUnauthorized] = true
		set[http.StatusForbidden] = true
		set[http.StatusTooManyRequests] = true
	}
	set[http.StatusInternalServerError] = true
	set[http.StatusServiceUnavailable] = true
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

// decorate adds what the reflector cannot express from Go types: the
// response headers (X-Request-Id on every response, Retry-After on 429 and
// 503, the routes' own), request bodies as required, the closed list of
// error codes and a description on every operation and response.
func decorate(raw []byte, routes []Route) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	codes := make([]any, 0, len(ErrorCodes))
	var codeDesc strings.Builder
	codeDesc.WriteString("snake_case error code:\n")
	for _, c := range ErrorCodes {
		codes = append(codes, c.Code)
		fmt.Fprintf(&codeDesc, "- `%s` (%d): %s\n", c.Code, c.Status, c.Means)
	}
	schemas, _ := get(doc, "components", "schemas").(map[string]any)
	for _, s := range schemas {
		props, _ := get(s, "properties").(map[string]any)
		if code, ok := props["code"].(map[string]any); ok && props["message"] != nil {
			code["enum"] = codes
			code["description"] = codeDesc.String()
		}
	}
	if info, ok := doc["info"].(map[string]any); ok {
		info["license"] = map[string]any{"name": "Proprietary", "identifier": "LicenseRef-Proprietary"}
	}
	own := map[string]map[string][]Header{} // operation id -> status -> headers
	empty := map[string]map[string]bool{}   // operation id -> query parameters allowing empty
	for _, rt := range routes {
		empty[rt.OperationID] = emptyAllowed(rt.Input)
		hs := map[string][]Header{}
		for _, resp := range rt.Responses {
			hs[strconv.Itoa(resp.Status)] = append(hs[strconv.Itoa(resp.Status)], resp.Headers...)
		}
		for status, h := range rt.ErrorHeaders {
			hs[strconv.Itoa(status)] = append(hs[strconv.Itoa(status)], h...)
		}
		own[rt.OperationID] = hs
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			om, _ := op.(map[string]any)
			if om == nil {
				continue
			}
			if om["security"] == nil {
				om["security"] = []any{} // public: explicitly no authentication
			}
			// Every body the service reads is required: a request without
			// one is refused (415 or 400 invalid_json).
			if rb, ok := om["requestBody"].(map[string]any); ok {
				rb["required"] = true
			}
			id, _ := om["operationId"].(string)
			params, _ := om["parameters"].([]any)
			for _, p := range params {
				if pm, ok := p.(map[string]any); ok && pm["in"] == "query" && empty[id][fmt.Sprint(pm["name"])] {
					pm["allowEmptyValue"] = true
				}
			}
			responses, _ := om["responses"].(map[string]any)
			for status, resp := range responses {
				rm, _ := resp.(map[string]any)
				if rm == nil {
					continue
				}
				headers, _ := rm["headers"].(map[string]any)
				if headers == nil {
					headers = map[string]any{}
				}
				headers["X-Request-Id"] = map[string]any{
					"description": "Unique id of this request; equal to the body's requestId.",
					"required":    true,
					"schema":      map[string]any{"type": "string"},
				}
				hs := own[id][status]
				if status == "429" || status == "503" {
					hs = append(hs, RetryAfterHeader)
				}
				for _, h := range hs {
					headers[h.Name] = headerObject(h)
				}
				rm["headers"] = headers
			}
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// emptyAllowed returns the query parameters of an Input struct tagged
// allowEmptyValue:"true".
func emptyAllowed(input any) map[string]bool {
	t := reflect.TypeOf(input)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if name := f.Tag.Get("query"); name != "" && f.Tag.Get("allowEmptyValue") == "true" {
			out[name] = true
		}
	}
	return out
}

// headerObject is the OpenAPI header object of h.
func headerObject(h Header) map[string]any {
	schema := h.Schema
	if schema == nil {
		schema = map[string]any{"type": "string"}
	}
	o := map[string]any{"description": h.Description, "schema": schema}
	if h.Required {
		o["required"] = true
	}
	return o
}

// jsonSchemaOf returns the application/json schema of a response, or nil.
func jsonSchemaOf(cor openapi.ContentOrReference) map[string]any {
	r, ok := cor.(*openapi31.ResponseOrReference)
	if !ok || r.Response == nil {
		return nil
	}
	return r.Response.Content["application/json"].Schema
}

// setJSONSchema replaces the application/json schema of a response.
func setJSONSchema(cor openapi.ContentOrReference, schema map[string]any) {
	r, ok := cor.(*openapi31.ResponseOrReference)
	if !ok || r.Response == nil {
		return
	}
	mt := r.Response.Content["application/json"]
	mt.Schema = schema
	r.Response.Content["application/json"] = mt
}

func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// schemaName shortens the reflector's component names: the module path and
// the package prefixes go; envelopes are named after their data.
func schemaName(name string) string {
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, name)
	name = strings.ReplaceAll(strings.ReplaceAll(name, "GithubComO2IServiceO2I", ""), "githubcomo2iserviceo2i", "")
	name, envelope := strings.CutPrefix(name, "HttpxEnvelope")
	for _, p := range []string{"Command", "Query", "Httpx", "Readmodel"} {
		name = strings.TrimPrefix(name, p)
	}
	if envelope {
		name += "Envelope"
	}
	return name
}

// nullableRef makes a required pointer to a struct, which the service sends
// as null when absent, "that object or null": the reflector gives a bare
// $ref, which a null does not match.
func nullableRef(p jsonschema.InterceptNullabilityParams) {
	if p.Type == nil || p.Type.Kind() != reflect.Ptr || p.Schema.Ref == nil || p.OmitEmpty || p.NullAdded {
		return
	}
	ref := *p.Schema.Ref
	p.Schema.Ref, p.Schema.Type = nil, nil
	null := jsonschema.Schema{}
	null.AddType(jsonschema.Null)
	p.Schema.AnyOf = []jsonschema.SchemaOrBool{(&jsonschema.Schema{Ref: &ref}).ToSchemaOrBool(), null.ToSchemaOrBool()}
}
