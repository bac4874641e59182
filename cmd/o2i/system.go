package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/httpx"
)

// systemRoutes are the public endpoints; discovery and the OpenAPI document
// are built from all (the same table the router mounts).
func systemRoutes(h *health, reg *prometheus.Registry, all func() []httpx.Route) []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/api/health", OperationID: "getHealth", Tag: "system",
			Summary:     "Health: status ok and db true when the process serves and PostgreSQL answers",
			Description: "Check both values, not only the HTTP status. 503 with db false when PostgreSQL does not answer.",
			Responses: []httpx.Response{
				{Status: 200, Body: httpx.HealthBody{}, Description: "healthy"},
				{Status: 503, Body: httpx.HealthBody{}, Description: "the database does not answer"},
			},
			Handler: func(w http.ResponseWriter, r *http.Request) error {
				res := h.check(r.Context())
				body := httpx.HealthBody{Status: "ok", DB: res["db"], Checks: res, RequestID: httpx.RequestID(r.Context())}
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
				doc, err := httpx.OpenAPI(all())
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
