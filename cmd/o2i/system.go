package main

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/httpx"
)

// systemRoutes are the public endpoints; discovery and the OpenAPI document
// are built from all (the same table the router mounts). They read no body
// and are counted in no in-flight pool (httpx.Server), so each answers from
// memory: health from checks cached for a second, the OpenAPI document
// rendered once.
func systemRoutes(h *health, reg *prometheus.Registry, all func() []httpx.Route) []httpx.Route {
	openAPI := sync.OnceValues(func() ([]byte, error) { return httpx.OpenAPI(all()) })
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/health", OperationID: "getHealth", Tag: "system",
			Summary:     "Health: status reports the process (ok), db the database (true when PostgreSQL answers)",
			Description: "Check both values, not only the HTTP status: status is ok whenever the process answers; db is false, with HTTP 503 and Retry-After, when PostgreSQL does not answer.",
			Responses: []httpx.Response{
				{Status: 200, Body: httpx.HealthBody{}, Description: "the process serves and the database answers"},
				{Status: 503, Body: httpx.HealthBody{}, Description: "the process serves (status ok) and the database does not answer (db false); health counts against no in-flight limit, so an overloaded server still answers it"},
			},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				status, retryAfter, body := httpx.Health(h.check(r.Context()))
				body.RequestID = httpx.RequestID(r.Context())
				if retryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
				}
				httpx.WriteJSON(w, r, status, body)
				return nil
			},
		},
		{
			Method: http.MethodGet, Path: "/v1", OperationID: "getDiscovery", Tag: "system",
			Summary:   "API discovery: every endpoint with method, path, scope and summary",
			Responses: []httpx.Response{{Status: 200, Body: httpx.DiscoveryBody{}}},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				body := httpx.DiscoveryBody{Name: "Order-to-Invoice Service", Version: httpx.APIVersion,
					OpenAPIURL: "/v1/openapi.json", RequestID: httpx.RequestID(r.Context())}
				for _, rt := range all() {
					scope := string(rt.Scope)
					if rt.Public() {
						scope = "public"
					}
					body.Endpoints = append(body.Endpoints, httpx.EndpointEntry{Method: rt.Method, Path: rt.Path, Scope: scope, Summary: rt.Summary})
				}
				httpx.WriteJSON(w, r, http.StatusOK, body)
				return nil
			},
		},
		{
			Method: http.MethodGet, Path: "/v1/openapi.json", OperationID: "getOpenAPI", Tag: "system",
			Summary:   "The OpenAPI 3.1 document of this interface",
			Responses: []httpx.Response{{Status: 200, Body: httpx.OpenAPIDoc{}}},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				doc, err := openAPI()
				if err != nil {
					return err
				}
				w.Header().Set("Content-Type", "application/json")
				_, err = w.Write(doc)
				return err
			},
		},
	}
}
