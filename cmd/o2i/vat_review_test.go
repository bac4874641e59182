package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestVATIDReviewTask: a service to a French buyer who sends a German VAT
// ID stays under the reverse charge, and a vat_id_review task asks to
// confirm the ID; a buyer whose VAT ID is of its own country gets the
// reverse charge without a task.
func TestVATIDReviewTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	post := func(orderNo, country, vatID string) {
		t.Helper()
		body := fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
			"billingAddress":{"country_code":%q,"company_name":"Client SARL","vat_id":%q,"street":"1 rue","postal_code":"75001","city":"Paris"},
			"items":[{"name":"Beratung","quantity":1,"unitNetCents":1000}],
			"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
			"creditRedemptions":[{"type":"referral_credit","amountCents":1000,"externalRef":"cr-%s"}],"grossTotalCents":1000}`,
			orderNo, country, vatID, orderNo)
		if r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
			t.Fatalf("order %s: %d %s", orderNo, r.Status, r.Body)
		}
	}
	mismatch, matching := "VATR-"+suffix, "VATOK-"+suffix
	post(mismatch, "FR", "DE 123 456 789")
	post(matching, "AT", "ATU12345678")
	for _, no := range []string{mismatch, matching} {
		inv := documents(t, c, key, no, "invoiced", 1)[0]
		r := c.Do("GET", "/v1/invoices/"+inv["id"].(string), key, nil)
		if d := r.JSON(t)["data"].(map[string]any); r.Status != 200 || d["totalTaxCents"] != float64(0) || d["totalGrossCents"] != float64(1000) {
			t.Errorf("invoice of %s: %d %s, want reverse charge without VAT", no, r.Status, r.Body)
		}
	}
	taskState(t, pool, pid, "vat_id_review", mismatch, "open")
	var raw []byte
	if err := pool.QueryRow(ctx, `SELECT details FROM tasks WHERE project_id = $1 AND kind = 'vat_id_review' AND subject = $2`, pid, mismatch).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var details map[string]any
	if err := json.Unmarshal(raw, &details); err != nil {
		t.Fatal(err)
	}
	if details["treatment"] != "reverse_charge" || details["vatId"] != "DE 123 456 789" || details["country"] != "FR" ||
		!strings.Contains(fmt.Sprint(details["details"]), "DE123456789 is not of the buyer's country FR") {
		t.Errorf("task details %v", details)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = 'vat_id_review' AND subject = $2`, pid, matching).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d vat_id_review tasks for a VAT ID of the buyer's country", n)
	}
}
