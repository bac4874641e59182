package httpx_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/o2i-service/o2i/internal/httpx"
)

type thingInput struct {
	ID   string `path:"id" required:"true"`
	Name string `json:"name" required:"true"`
}

type thingParams struct {
	ID string `path:"id" required:"true"`
}

type ownBody struct {
	Kind string `json:"kind" required:"true"`
}

// TestOpenAPIRequestBodiesAndHeaders: every request body is required,
// whether declared with the parameters (Input) or as a type of its own
// (Body), and a route's response headers are documented on their statuses
// next to X-Request-Id (and Retry-After on 429 and 503).
func TestOpenAPIRequestBodiesAndHeaders(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, r *http.Request) error { return nil }
	doc, err := httpx.OpenAPI([]httpx.Route{
		{Method: "PUT", Path: "/things/{id}", Scope: httpx.ScopeOrdersWrite, OperationID: "putThing", Input: thingInput{},
			Responses: []httpx.Response{{Status: 200, Body: httpx.Envelope[ownBody]{}, Headers: []httpx.Header{httpx.IdempotentReplayedHeader}}},
			Errors:    []int{409}, ErrorHeaders: map[int][]httpx.Header{409: {httpx.RetryAfterHeader}}, Handler: ok},
		{Method: "POST", Path: "/hooks/{id}", OperationID: "postHook", Input: thingParams{}, Body: ownBody{},
			Responses: []httpx.Response{{Status: 200, Body: httpx.Envelope[ownBody]{}}}, Handler: ok},
	})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]struct {
			Parameters  []struct{ Name, In string }
			RequestBody struct {
				Required bool
				Content  map[string]struct{ Schema map[string]any }
			}
			Responses map[string]struct {
				Headers map[string]struct{ Required bool }
			}
		}
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	put, hook := d.Paths["/things/{id}"]["put"], d.Paths["/hooks/{id}"]["post"]
	for name, rb := range map[string]bool{"putThing": put.RequestBody.Required, "postHook": hook.RequestBody.Required} {
		if !rb {
			t.Errorf("%s: request body not required", name)
		}
	}
	if got := hook.RequestBody.Content["application/json"].Schema["$ref"]; got != "#/components/schemas/TestOwnBody" {
		t.Errorf("hook body schema %v, want the body type's own", hook.RequestBody.Content["application/json"].Schema)
	}
	if len(hook.Parameters) != 1 || hook.Parameters[0].Name != "id" {
		t.Errorf("hook parameters %+v, want the path parameter id alone", hook.Parameters)
	}
	headers := func(status string, op string) map[string]bool {
		o := put
		if op == "hook" {
			o = hook
		}
		out := map[string]bool{}
		for name, h := range o.Responses[status].Headers {
			out[name] = h.Required
		}
		return out
	}
	tests := []struct {
		op, status string
		want       map[string]bool // name -> required
	}{
		{"put", "200", map[string]bool{"X-Request-Id": true, "Idempotent-Replayed": false}},
		{"put", "409", map[string]bool{"X-Request-Id": true, "Retry-After": true}},
		{"put", "429", map[string]bool{"X-Request-Id": true, "Retry-After": true}},
		{"put", "403", map[string]bool{"X-Request-Id": true}},
		{"hook", "200", map[string]bool{"X-Request-Id": true}},
		{"hook", "503", map[string]bool{"X-Request-Id": true, "Retry-After": true}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, headers(tt.status, tt.op)); diff != "" {
			t.Errorf("%s %s headers (-want +got):\n%s", tt.op, tt.status, diff)
		}
	}
}
