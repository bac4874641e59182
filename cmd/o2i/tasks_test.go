package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestHeldOrderBecomesAReadableTask: an XRechnung order (Leitweg-ID) paid
// completely with store credit is due at once, but the project's invoice
// contact has no telephone number, so the invoicer holds it as a review
// task. The task is listed (filtered by order and status), served by its id,
// and listed by the admin command.
func TestHeldOrderBecomesAReadableTask(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	// The demo seller has a contact phone; XRechnung needs one (BR-DE-6).
	if _, err := project.Apply(context.Background(), pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.ContactPhone = ""
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	orderNo := "XR-" + uuid.NewString()[:8]
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pay-%s","financialStatus":"paid",
		"billingAddress":{"country_code":"DE","company_name":"Stadt Musterhausen","street":"Rathausplatz 1","postal_code":"10115",
			"city":"Berlin","leitweg_id":"04011000-12345-03"},
		"items":[{"name":"Online-Schulung","quantity":1,"unitGrossCents":11900,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":11900,"externalRef":"ref-xr"}],"grossTotalCents":11900}`, orderNo, orderNo)),
		"Idempotency-Key", orderNo)
	if r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}

	var task map[string]any
	testenv.Eventually(t, 60*time.Second, "the order held as a review task", func() bool {
		r := c.Do("GET", "/v1/tasks?status=open&orderNo="+url.QueryEscape(orderNo), key, nil)
		if r.Status != 200 {
			t.Fatalf("GET /v1/tasks: %d %s", r.Status, r.Body)
		}
		data := r.JSON(t)["data"].([]any)
		if len(data) == 0 {
			return false
		}
		if len(data) != 1 {
			t.Fatalf("%d tasks for the order: %s", len(data), r.Body)
		}
		task = data[0].(map[string]any)
		return true
	})
	// The phone is the project's: its one task holds the order (orderNo
	// null, the order in heldOrders and its sample).
	if task["type"] != "xrechnung_contact_phone_missing" || task["orderNo"] != nil || task["status"] != "open" ||
		task["resolvedAt"] != nil || task["resolution"] != nil || task["heldOrders"] != float64(1) ||
		fmt.Sprint(task["heldOrderSample"]) != "["+orderNo+"]" || fmt.Sprint(task["details"].(map[string]any)["missing"]) != "[contactPhone]" {
		t.Errorf("task %v", task)
	}
	id := task["id"].(string)
	one := c.Do("GET", "/v1/tasks/"+id, key, nil)
	if one.Status != 200 {
		t.Fatalf("GET /v1/tasks/%s: %d %s", id, one.Status, one.Body)
	}
	if diff := cmp.Diff(task, one.JSON(t)["data"]); diff != "" {
		t.Errorf("GET by id differs from the listing (-list +one):\n%s", diff)
	}
	// The order waits: no invoice is issued while the task is open.
	if d := waitStatus(t, c, key, orderNo, func(map[string]any) bool { return true }); len(d["invoices"].([]any)) != 0 {
		t.Errorf("held order has invoices: %v", d)
	}

	// The admin command lists the same object.
	out, err := runCmd(t, "tasks", "list", "--project", pid, "--order", orderNo, "--status", "open", "--type", "xrechnung_contact_phone_missing")
	if err != nil {
		t.Fatal(err)
	}
	var listed []map[string]any
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatalf("tasks list output %q: %v", out, err)
	}
	if len(listed) != 1 || !cmp.Equal(listed[0], task) {
		t.Errorf("tasks list: %s, want [%v]", out, task)
	}
	if out, err := runCmd(t, "tasks", "list", "--project", pid, "--status", "resolved"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("tasks list --status resolved: %q %v, want []", out, err)
	}
	for _, args := range [][]string{
		{"tasks", "list", "--project", pid, "--status", "done"},
		{"tasks", "list", "--project", pid, "--limit", "0"},
		{"tasks", "list", "--project", "not-a-project"},
		{"tasks", "list"},
		{"tasks", "show"},
	} {
		if out, err := runCmd(t, args...); err == nil {
			t.Errorf("%v: no error, printed %q", args, out)
		}
	}
}
