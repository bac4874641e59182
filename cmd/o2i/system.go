package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/o2i-service/o2i/internal/httpx"
)

// HealthBody is the body of GET /api/health.
type HealthBody struct {
	Status    string          `json:"status" required:"true" enum:"ok,degraded" description:"ok when the process serves and the database answers"`
	DB        bool            `json:"db" required:"true" description:"true when PostgreSQL answered a query"`
	Checks    map[string]bool `json:"checks" required:"true" description:"each dependency: db, redis, kafka, s3"`
	RequestID string          `json:"requestId" required:"true"`
}

// DiscoveryBody is the body of GET /v1.
type DiscoveryBody struct {
	Name       string          `json:"name" required:"true"`
	Version    string          `json:"version" required:"true"`
	OpenAPIURL string          `json:"openapi" required:"true"`
	Endpoints  []EndpointEntry `json:"endpoints" required:"true"`
	RequestID  string          `json:"requestId" required:"true"`
}

// EndpointEntry describes one endpoint in the discovery listing.
type EndpointEntry struct {
	Method  string `json:"method" required:"true"`
	Path    string `json:"path" required:"true"`
	Scope   string `json:"scope" required:"true" description:"required key scope, or public"`
	Summary string `json:"summary" required:"true"`
}

// OpenAPIDoc is the OpenAPI document itself.
type OpenAPIDoc map[string]any

// systemRoutes are the public endpoints; discovery and the OpenAPI document
// are built from all (the same table the router mounts).
func systemRoutes(h *health, reg *prometheus.Registry, all func() []httpx.Route) []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/health", OperationID: "getHealth", Tag: "system",
			Summary:     "Health: status ok and db true when the process serves and PostgreSQL answers",
			Description: "Check both values, not only the HTTP status. 503 with db false when PostgreSQL does not answer.",
			Responses: []httpx.Response{
				{Status: 200, Body: HealthBody{}, Description: "healthy"},
				{Status: 503, Body: HealthBody{}, Description: "the database does not answer"},
			},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				res := h.check(r.Context())
				body := HealthBody{Status: "ok", DB: res["db"], Checks: res, RequestID: httpx.RequestID(r.Context())}
				status := http.StatusOK
				if !body.DB {
					body.Status, status = "degraded", http.StatusServiceUnavailable
				}
				httpx.WriteJSON(w, r, status, body)
				return nil
			},
		},
		{
			Method: http.MethodGet, Path: "/v1", OperationID: "getDiscovery", Tag: "system",
			Summary:   "API discovery: every endpoint with method, path, scope and summary",
			Responses: []httpx.Response{{Status: 200, Body: DiscoveryBody{}}},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				body := DiscoveryBody{Name: "Order-to-Invoice Service", Version: httpx.APIVersion,
					OpenAPIURL: "/v1/openapi.json", RequestID: httpx.RequestID(r.Context())}
				for _, rt := range all() {
					scope := string(rt.Scope)
					if rt.Public() {
						scope = "public"
					}
					body.Endpoints = append(body.Endpoints, EndpointEntry{Method: rt.Method, Path: rt.Path, Scope: scope, Summary: rt.Summary})
				}
				httpx.WriteJSON(w, r, http.StatusOK, body)
				return nil
			},
		},
		{
			Method: http.MethodGet, Path: "/v1/openapi.json", OperationID: "getOpenAPI", Tag: "system",
			Summary:   "The OpenAPI 3.1 document of this interface",
			Responses: []httpx.Response{{Status: 200, Body: OpenAPIDoc{}}},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				doc, err := httpx.OpenAPI(all())
				if err != nil {
					return err
				}
				w.Header().Set("Content-Type", "application/json")
				_, err = w.Write(doc)
				return err
			},
		},
		{
			Method: http.MethodGet, Path: "/metrics", OperationID: "getMetrics", Tag: "system",
			Summary:   "Prometheus metrics",
			Responses: []httpx.Response{{Status: 200, Body: "", ContentType: "text/plain"}},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
				return nil
			},
		},
	}
}
