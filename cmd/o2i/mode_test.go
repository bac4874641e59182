package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestDocumentsFollowTheOrdersMode: an order's mode is fixed when it is
// received, and its documents follow it, not the project's mode at issue
// time. Taken live, invoiced after the project switched to test mode: a
// live number. Taken in test mode, invoiced after the project went live: a
// TEST- number. After switches in both directions every order has exactly
// one document, of its own mode; reset-test-data then discards exactly the
// test orders and their documents, and every live order keeps its one live
// document.
func TestDocumentsFollowTheOrdersMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false)
	const secret = "whsec_mode"
	withWebhookSecret(t, pool, pid, secret)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	pay := func(no string) {
		t.Helper()
		stripeEvent(t, pid, secret, "payment_intent.succeeded",
			fmt.Sprintf(`{"id":"pi_%s","object":"payment_intent","amount":4900,"amount_received":4900,"currency":"eur"}`, no))
	}
	taken := func(no string) {
		t.Helper()
		waitStatus(t, c, key, no, func(d map[string]any) bool { return d["waitingFor"] == "payment" })
	}
	isTest := func(number string) bool { return strings.HasPrefix(number, "TEST-") }

	liveWaiting := "ML-" + suffix // taken live, paid in test mode
	waitingOrder(t, c, key, liveWaiting)
	taken(liveWaiting)
	setTestMode(t, pid, true)
	testWaiting := "MT-" + suffix // taken in test mode, paid after going live
	waitingOrder(t, c, key, testWaiting)
	taken(testWaiting)
	testNow := "MTN-" + suffix // taken and invoiced in test mode
	paidByCredit(t, c, key, testNow)
	pay(liveWaiting)
	if n := archivedNumber(t, c, key, liveWaiting); isTest(n) {
		t.Errorf("order taken live, invoiced in test mode: %s, want a live number", n)
	}
	if n := archivedNumber(t, c, key, testNow); !isTest(n) {
		t.Errorf("order taken and invoiced in test mode: %s, want a TEST- number", n)
	}

	setTestMode(t, pid, false)
	pay(testWaiting)
	if n := archivedNumber(t, c, key, testWaiting); !isTest(n) {
		t.Errorf("order taken in test mode, invoiced live: %s, want a TEST- number", n)
	}
	liveNow := "MLN-" + suffix // taken and invoiced live
	paidByCredit(t, c, key, liveNow)
	if n := archivedNumber(t, c, key, liveNow); isTest(n) {
		t.Errorf("order taken and invoiced live: %s, want a live number", n)
	}

	// Every order: one document of its own mode, in the database and as
	// the API serves it.
	modes := map[string]bool{liveWaiting: false, testWaiting: true, testNow: true, liveNow: false}
	ownDocument := func(no string, test bool) {
		t.Helper()
		var n, own int
		if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE i.test_mode = o.test_mode AND o.test_mode = $3)
			FROM orders o JOIN invoices i ON i.order_id = o.id WHERE o.project_id = $1 AND o.order_no = $2`, pid, no, test).Scan(&n, &own); err != nil {
			t.Fatal(err)
		}
		if n != 1 || own != 1 {
			t.Errorf("order %s (test %v): %d documents, %d of its own mode; want exactly one", no, test, n, own)
		}
		d := documents(t, c, key, no, "invoiced", 1)
		r := c.Do("GET", "/v1/invoices/"+d[0]["id"].(string), key, nil)
		if r.Status != http.StatusOK || r.JSON(t)["data"].(map[string]any)["testMode"] != test || isTest(d[0]["number"].(string)) != test {
			t.Errorf("invoice of %s: %d %s, want testMode %v", no, r.Status, r.Body, test)
		}
	}
	for no, test := range modes {
		ownDocument(no, test)
	}

	out, err := runCmd(t, "project", "reset-test-data", "--project", pid)
	if err != nil {
		t.Fatalf("reset-test-data: %v", err)
	}
	var res struct {
		Orders, Invoices int
		Ranges           []string `json:"numberRangesRestarted"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Orders != 2 || res.Invoices != 2 || len(res.Ranges) != 1 {
		t.Errorf("reset: %s (%v), want the 2 test orders with their 2 documents, 1 range", out, err)
	}
	for no, test := range modes {
		if !test {
			ownDocument(no, false)
			continue
		}
		testenv.Eventually(t, 10*time.Second, "test order "+no+" gone", func() bool {
			return c.Do("GET", "/v1/orders/"+no, key, nil).Status == http.StatusNotFound
		})
		var left int
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders WHERE project_id = $1 AND order_no = $2)
			+ (SELECT count(*) FROM invoices WHERE project_id = $1 AND order_no = $2)`, pid, no).Scan(&left); err != nil || left != 0 {
			t.Errorf("test order %s: %d rows left (%v)", no, left, err)
		}
	}
	var live int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE project_id = $1 AND NOT test_mode`, pid).Scan(&live); err != nil || live != 2 {
		t.Errorf("live documents after the reset: %d (%v), want 2", live, err)
	}
}

// TestResetLeavesNoLiveOrderWithoutItsDocument: before documents followed
// their order's mode, a live order could be given a test document (taken
// live, invoiced while the project was in test mode). The reset selects by
// the order's mode: such an order and its document stay (it was invoiced,
// and keeps the one document it has), and so does their number range, which
// goes on without reusing a number; the test orders and their documents go.
func TestResetLeavesNoLiveOrderWithoutItsDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	legacy, test := "RL-"+suffix, "RT-"+suffix
	paidByCredit(t, c, key, legacy)
	legacyNumber := archivedNumber(t, c, key, legacy)
	paidByCredit(t, c, key, test)
	testNumber := archivedNumber(t, c, key, test)
	// The legacy state: the order was taken live.
	if _, err := pool.Exec(ctx, `UPDATE orders SET test_mode = false WHERE project_id = $1 AND order_no = $2`, pid, legacy); err != nil {
		t.Fatal(err)
	}

	out, err := runCmd(t, "project", "reset-test-data", "--project", pid)
	if err != nil {
		t.Fatalf("reset-test-data: %v", err)
	}
	var res struct {
		Orders, Invoices int
		Ranges           []string `json:"numberRangesRestarted"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Orders != 1 || res.Invoices != 1 || len(res.Ranges) != 0 {
		t.Errorf("reset: %s (%v), want 1 order, 1 invoice, no range restarted (the live order's document still uses it)", out, err)
	}
	testenv.Eventually(t, 10*time.Second, "test order "+test+" gone", func() bool {
		return c.Do("GET", "/v1/orders/"+test, key, nil).Status == http.StatusNotFound
	})
	if r := c.Do("GET", "/v1/invoices/"+testNumber, key, nil); r.Status != http.StatusNotFound {
		t.Errorf("test order's document %s after the reset: %d", testNumber, r.Status)
	}
	if d := documents(t, c, key, legacy, "invoiced", 1); d[0]["number"] != legacyNumber {
		t.Errorf("live order %s after the reset: documents %v, want its %s", legacy, d, legacyNumber)
	}
	if r := c.Do("GET", "/v1/invoices/"+legacyNumber+"/pdf", key, nil); r.Status != http.StatusOK {
		t.Errorf("PDF of %s after the reset: %d", legacyNumber, r.Status)
	}
	next := "RN-" + suffix
	paidByCredit(t, c, key, next)
	if n := archivedNumber(t, c, key, next); !strings.HasPrefix(n, "TEST-") || n == legacyNumber || n == testNumber {
		t.Errorf("next test document %s; want a new TEST- number after %s and %s", n, legacyNumber, testNumber)
	}
}
