package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/testenv"
)

// env is one test's service over the local stack with a fresh project.
type env struct {
	t       *testing.T
	pool    *pgxpool.Pool
	srv     *httptest.Server
	svc     *command.Service
	project string
	key     string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := testenv.Pool(t)
	svc := command.New(pool)
	s := &httpx.Server{Routes: svc.Routes(), Auth: apikey.NewAuthenticator(pool)}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	project := testenv.Project(t, pool, true)
	return &env{t: t, pool: pool, srv: srv, svc: svc, project: project, key: testenv.Key(t, pool, project)}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errBody(t *testing.T) httpx.ErrorBody {
	t.Helper()
	var e httpx.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	return e
}

func (r reply) order(t *testing.T) command.OrderResult {
	t.Helper()
	var env httpx.Envelope[command.OrderResult]
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return env.Data
}

// do sends a request; idemKey "" sends no Idempotency-Key header.
func (e *env) do(method, path, idemKey string, body []byte) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/json")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) postOrder(body []byte) reply {
	e.t.Helper()
	return e.do(http.MethodPost, "/v1/orders", uuid.NewString(), body)
}

// postAtOnce sends POST /v1/orders with bodies[i] and Idempotency-Key
// keys[i], all released at the same moment, each on its own connection.
// A 503 (no pooled connection within the service's wait for one on a
// loaded machine: nothing was done) is sent again with the same key, as a
// client would, at most five times; each try waits in the service again.
func (e *env) postAtOnce(bodies [][]byte, keys []string) []reply {
	e.t.Helper()
	replies := make([]reply, len(bodies))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for try := 1; ; try++ {
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/orders", bytes.NewReader(bodies[i]))
				req.Header.Set("Authorization", "Bearer "+e.key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", keys[i])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					e.t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				replies[i] = reply{status: resp.StatusCode, header: resp.Header, body: b}
				if resp.StatusCode != http.StatusServiceUnavailable || try == 5 {
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	return replies
}

// order is a valid order input as a generic JSON object, so that tests can
// change single values (json.Number keeps number literals exact).
func order(orderNo string) map[string]any {
	return map[string]any{
		"orderNo": orderNo,
		"billingAddress": map[string]any{
			"country_code": "DE", "name": "Erika Mustermann", "street": "Heidestraße 17",
			"postal_code": "51147", "city": "Köln",
		},
		"items": []any{
			map[string]any{"name": "Mug", "quantity": json.Number("2"), "unitGrossCents": json.Number("1190"), "taxRate": json.Number("19"), "sku": "MUG-1"},
			map[string]any{"name": "Plan", "quantity": json.Number("1.5"), "unitNetCents": json.Number("1000"), "productId": "PLAN-1"},
		},
		"email":            "erika@example.com",
		"paymentRef":       "pi_" + orderNo,
		"paymentGateway":   "stripe",
		"financialStatus":  "paid",
		"requiresShipping": true,
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func uniqueNo(prefix string) string { return prefix + "-" + uuid.NewString()[:13] }

// outboxEvents returns the project's events in outbox order (sent or not).
func (e *env) outboxEvents() []event.Event {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT payload FROM outbox WHERE project_id = $1 ORDER BY id`, e.project)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var evs []event.Event
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			e.t.Fatal(err)
		}
		ev, err := event.Decode(b)
		if err != nil {
			e.t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func orderOf(t *testing.T, ev event.Event) event.Order {
	t.Helper()
	var o event.Order
	if err := json.Unmarshal(ev.Data, &o); err != nil {
		t.Fatalf("event data %s: %v", ev.Data, err)
	}
	return o
}

// benchEnv is env for benchmarks: the handler without a network server.
type benchEnv struct {
	handler http.Handler
	key     string
}

func newEnvB(b *testing.B) *benchEnv {
	b.Helper()
	pool := testenv.Pool(b)
	svc := command.New(pool)
	s := &httpx.Server{Routes: svc.Routes(), Auth: apikey.NewAuthenticator(pool)}
	project := testenv.Project(b, pool, true)
	return &benchEnv{handler: s.Handler(), key: testenv.Key(b, pool, project)}
}

func mustJSONB(b *testing.B, v any) []byte {
	b.Helper()
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
