package httpx

// The bodies of the public system endpoints.

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
