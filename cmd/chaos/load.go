package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// apiClient speaks to the service under test with one API key.
type apiClient struct {
	base, key string
	http      *http.Client
}

// loadResult is what the clients saw.
type loadResult struct {
	acked   []string // order numbers answered 201 or 200
	gaveUp  int
	retries int64
}

// clientPatience is how long a client retries one order: the delivery
// contract asks for 24 hours; a fault run's outages are far shorter.
const clientPatience = 15 * time.Minute

func orderNumbers(projectID string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("CHAOS-%s-%06d", projectID[:8], i+1)
	}
	return out
}

// chaosOrder is a digital order paid completely with store credit, with a
// service period: due at once, invoiced without a payment, and e-mailed to
// an address of its own (orderEmail), so that the messages at the SMTP sink
// name their order. The body is the same on every retry.
func chaosOrder(orderNo string) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid","email":%q,
"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
"items":[{"name":"Beratung je Stunde","quantity":1,"unitNetCents":1000,"taxRate":19,"sku":"BER-STD"}],
"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
"creditRedemptions":[{"type":"referral_credit","amountCents":1190,"externalRef":"ref-%s"}],"grossTotalCents":1190}`, orderNo, orderEmail(orderNo), orderNo))
}

// orderEmail is the order's e-mail address: its number, lower case.
func orderEmail(orderNo string) string { return strings.ToLower(orderNo) + "@example.com" }

// sendOrders sends every order from c.clients clients at most c.rate a
// second, each order until it is acknowledged (or clientPatience ends).
func sendOrders(ctx context.Context, api *apiClient, orders []string, c config, acked *atomic.Int64) loadResult {
	return sendOrdersSpread(ctx, []*apiClient{api}, orders, c, acked)
}

// postUntilAcknowledged posts the order as the delivery contract demands:
// network errors, 429 and 5xx are retried with the same Idempotency-Key,
// after Retry-After or an exponential backoff (capped at 5 s), and so are
// the answers the error table says to try again later: 408 (the body came
// too slowly) and 409 idempotency_in_progress (an earlier try of this order,
// given up by the client at its timeout, still runs on the server). It
// returns the retries and whether the order was acknowledged; an order given
// up on is logged with its last answer.
func (a *apiClient) postUntilAcknowledged(ctx context.Context, orderNo string) (int, bool) {
	body := chaosOrder(orderNo)
	deadline := time.Now().Add(clientPatience)
	wait := 100 * time.Millisecond
	for try := 0; ; try++ {
		status, retryAfter, code, err := a.post(ctx, "/v1/orders", orderNo, body)
		switch {
		case err == nil && (status == 201 || status == 200):
			return try, true
		case err == nil && !retryable(status, code):
			log.Printf("load: %s given up: %d %s", orderNo, status, code)
			return try, false // a 4xx the order cannot recover from: a bug of this run
		case ctx.Err() != nil || time.Now().After(deadline):
			log.Printf("load: %s given up after %d tries: %d %s %v", orderNo, try+1, status, code, err)
			return try, false
		}
		d := wait
		if retryAfter > 0 {
			d = retryAfter
		}
		sleep(ctx, d)
		wait = min(wait*2, 5*time.Second)
	}
}

// retryable reports whether an answer is one to try again later.
func retryable(status int, code string) bool {
	return status == 408 || status == 429 || status >= 500 || status == 409 && code == "idempotency_in_progress"
}

// post sends body and returns the status, Retry-After and, for an error
// answer, its error code.
func (a *apiClient) post(ctx context.Context, path, idemKey string, body []byte) (int, time.Duration, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", a.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var ra time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		ra = time.Duration(s) * time.Second
	}
	var code string
	if resp.StatusCode >= 400 {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil {
			code = e.Error.Code
		}
	}
	return resp.StatusCode, ra, code, nil
}

// get reads path, retrying network errors, 429 and 5xx for up to a
// minute; it returns the final status and body.
func (a *apiClient) get(ctx context.Context, path string) (int, []byte, error) {
	deadline := time.Now().Add(time.Minute)
	wait := 100 * time.Millisecond
	for {
		status, body, ra, err := a.getOnce(ctx, path)
		if err == nil && status != 429 && status < 500 {
			return status, body, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("GET %s: %d %.200s", path, status, body)
			}
			return status, body, err
		}
		if ra > 0 {
			wait = ra
		}
		sleep(ctx, wait)
		wait = min(wait*2, 5*time.Second)
	}
}

func (a *apiClient) getOnce(ctx context.Context, path string) (int, []byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+path, nil)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	var ra time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		ra = time.Duration(s) * time.Second
	}
	return resp.StatusCode, body, ra, err
}

// waitHealthy waits until the health endpoint says ok with the database.
func (a *apiClient) waitHealthy(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		status, body, _, err := a.getOnce(ctx, "/api/health")
		if err == nil && status == 200 && bytes.Contains(body, []byte(`"db":true`)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy after %s (%d %v)", limit, status, err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
}
