package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

func orderBody(orderNo string) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Tee","quantity":2,"unitNetCents":1000,"taxRate":7}],"requiresShipping":true,"paymentRef":%q}`, orderNo, "pay-"+orderNo))
}

// waitStatus polls GET /v1/orders/{orderNo} until ok accepts the record.
func waitStatus(t *testing.T, c *apitest.Client, key, orderNo string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var data map[string]any
	testenv.Eventually(t, 60*time.Second, "order "+orderNo+" in the expected state", func() bool {
		r := c.Do("GET", "/v1/orders/"+orderNo, key, nil)
		switch r.Status {
		case http.StatusOK:
			data, _ = r.JSON(t)["data"].(map[string]any)
			return ok(data)
		case http.StatusNotFound: // not projected yet
			return false
		}
		t.Fatalf("GET order: %d %s", r.Status, r.Body)
		return false
	})
	return data
}

// TestOrderFlowsThroughOutboxKafkaAndProjector is the whole path: the write
// side commits order and outbox row, the relay publishes to Kafka, the
// projector builds the status record that the read side serves.
func TestOrderFlowsThroughOutboxKafkaAndProjector(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	project := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, project)
	c := client(t)
	orderNo := "FLOW-" + uuid.NewString()[:8]

	r := c.Do("POST", "/v1/orders", key, orderBody(orderNo), "Idempotency-Key", "flow-"+orderNo)
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/orders: %d %s", r.Status, r.Body)
	}
	var created struct {
		Data struct{ ID, OrderNo, Status string }
	}
	if err := json.Unmarshal(r.Body, &created); err != nil || created.Data.Status != "created" {
		t.Fatalf("created: %s (%v)", r.Body, err)
	}
	data := waitStatus(t, c, key, orderNo, func(d map[string]any) bool { return d["status"] == "created" })
	if data["fulfillmentStatus"] != "unfulfilled" || len(data["invoices"].([]any)) != 0 {
		t.Errorf("status record %v", data)
	}

	r = c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"partial"}`, orderNo)), "Idempotency-Key", "ful1-"+orderNo)
	if r.Status != http.StatusOK {
		t.Fatalf("POST /v1/fulfillments: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, orderNo, func(d map[string]any) bool { return d["fulfillmentStatus"] == "partial" })
	r = c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled","shippedAt":"2026-11-20T10:00:00Z"}`, orderNo)),
		"Idempotency-Key", "ful2-"+orderNo)
	if r.Status != http.StatusOK {
		t.Fatalf("POST /v1/fulfillments: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, key, orderNo, func(d map[string]any) bool { return d["fulfillmentStatus"] == "fulfilled" })
}

// TestCrossProjectIsolation: a key sees and changes only its own project's data.
func TestCrossProjectIsolation(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	a, b := testenv.Project(t, pool, true), testenv.Project(t, pool, true)
	keyA, keyB := testenv.Key(t, pool, a), testenv.Key(t, pool, b)
	c := client(t)
	orderNo := "ISO-" + uuid.NewString()[:8]
	if r := c.Do("POST", "/v1/orders", keyA, orderBody(orderNo), "Idempotency-Key", "iso-a"); r.Status != http.StatusCreated {
		t.Fatalf("A creates: %d %s", r.Status, r.Body)
	}
	waitStatus(t, c, keyA, orderNo, func(d map[string]any) bool { return d != nil })

	if r := c.Do("GET", "/v1/orders/"+orderNo, keyB, nil); r.Status != http.StatusNotFound {
		t.Errorf("B reads A's order: %d %s", r.Status, r.Body)
	}
	r := c.Do("POST", "/v1/fulfillments", keyB, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled"}`, orderNo)), "Idempotency-Key", "iso-b")
	if code, _ := r.ErrorCode(t); r.Status != http.StatusNotFound || code != "order_not_found" {
		t.Errorf("B fulfils A's order: %d %s", r.Status, r.Body)
	}
	// The same orderNo (and Idempotency-Key) in B is B's own, separate order.
	r = c.Do("POST", "/v1/orders", keyB, orderBody(orderNo), "Idempotency-Key", "iso-a")
	if r.Status != http.StatusCreated {
		t.Errorf("B creates the same orderNo: %d %s", r.Status, r.Body)
	}
	if r := c.Do("GET", "/v1/invoices?orderNo="+orderNo, keyB, nil); r.Status != http.StatusOK {
		t.Errorf("B lists: %d", r.Status)
	}
	ra := c.Do("GET", "/v1/orders/"+orderNo, keyA, nil)
	if data, _ := ra.JSON(t)["data"].(map[string]any); data["fulfillmentStatus"] != "unfulfilled" {
		t.Errorf("A's order changed by B: %s", ra.Body)
	}
}
