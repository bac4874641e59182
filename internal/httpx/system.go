package httpx

import (
	"net/http"
	"time"
)

// The bodies of the public system endpoints.

// HealthBody is the body of GET /api/health.
type HealthBody struct {
	Status    string          `json:"status" required:"true" enum:"ok" description:"the process: ok whenever it answers, whatever its dependencies do (see db and checks)"`
	DB        bool            `json:"db" required:"true" description:"the database: true when PostgreSQL answered a query; false gives HTTP 503 with Retry-After"`
	Checks    map[string]bool `json:"checks" required:"true" description:"each dependency: db, redis, kafka, s3"`
	RequestID string          `json:"requestId" required:"true"`
}

// HealthRetryAfter is the Retry-After of a health answer without the database.
const HealthRetryAfter = 5 * time.Second

// Health decides the answer of GET /api/health from the dependency checks
// (true: it answered; a missing check counts as failed). status reports the
// process, which is ok whenever it answers; db reports PostgreSQL apart. The
// HTTP status is 200 while the database answers, else 503 with retryAfter
// (0 with 200). Redis, Kafka and S3 are reported in checks and change
// neither.
func Health(checks map[string]bool) (httpStatus int, retryAfter time.Duration, body HealthBody) {
	body = HealthBody{Status: "ok", DB: checks["db"], Checks: checks}
	if !body.DB {
		return http.StatusServiceUnavailable, HealthRetryAfter, body
	}
	return http.StatusOK, 0, body
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
