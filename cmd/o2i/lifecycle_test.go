package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/einvoice/referee"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// documents waits until the order's status record lists want documents,
// every one archived, and the order has status, and returns the documents.
func documents(t *testing.T, c *apitest.Client, key, orderNo, status string, want int) []map[string]any {
	t.Helper()
	d := waitStatus(t, c, key, orderNo, func(d map[string]any) bool {
		invs := d["invoices"].([]any)
		if d["status"] != status || len(invs) != want {
			return false
		}
		for _, inv := range invs {
			if inv.(map[string]any)["status"] != "archived" {
				return false
			}
		}
		return true
	})
	var out []map[string]any
	for _, inv := range d["invoices"].([]any) {
		out = append(out, inv.(map[string]any))
	}
	return out
}

// typesOf lists the documents' types in order.
func typesOf(docs []map[string]any) string {
	var ts []string
	for _, d := range docs {
		ts = append(ts, d["type"].(string))
	}
	return strings.Join(ts, ",")
}

// refereeFiles fetches each document's XML and PDF into a folder and has
// the official validator judge them all in one run (--strict: no errors,
// no warnings).
func refereeFiles(t *testing.T, c *apitest.Client, key string, docs []map[string]any) {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for _, d := range docs {
		for _, kind := range []string{"xml", "pdf"} {
			r := c.Do("GET", "/v1/invoices/"+d["id"].(string)+"/"+kind, key, nil)
			if r.Status != 200 {
				t.Fatalf("GET %s of %s: %d %s", kind, d["number"], r.Status, r.Body)
			}
			f := filepath.Join(dir, d["number"].(string)+"."+kind)
			if err := os.WriteFile(f, r.Body, 0o600); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	judgeFiles(t, files...)
}

// judgeFiles has the official validator judge the files in one run
// (--strict, mode auto: no errors, no warnings) and fails the test for each
// file that is not clean or was not judged.
func judgeFiles(t *testing.T, files ...string) {
	t.Helper()
	validator, err := referee.Path()
	if err != nil {
		t.Fatalf("the official validator is required: %v", err)
	}
	rep, err := referee.Run(validator, []string{"--strict"}, "auto", files...)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if r := rep.Results[f]; r == nil || !r.Clean() {
			t.Errorf("%s by the official rules: %+v", filepath.Base(f), r)
		}
	}
}

// TestCorrectionCancelsAndReissues: an invoiced order pushed again with
// other invoice-relevant content is answered 200; its invoice gets a
// cancellation (381, referencing the original by number and date) and the
// corrected order a new invoice with a new number, all archived and clean
// by the official rules. A change that does not touch the invoice (e-mail)
// issues no document.
func TestCorrectionCancelsAndReissues(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	no := "CORR-" + uuid.NewString()[:8]

	if r := c.Do("POST", "/v1/orders", key, creditOrder(no, "1", 1000, 1190), "Idempotency-Key", no+"-1"); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	first := documents(t, c, key, no, "invoiced", 1)

	// The corrected order: two hours instead of one.
	r := c.Do("POST", "/v1/orders", key, creditOrder(no, "2", 1000, 2380), "Idempotency-Key", no+"-2")
	if r.Status != http.StatusOK || r.JSON(t)["data"].(map[string]any)["status"] != "created" {
		t.Fatalf("correction: %d %s", r.Status, r.Body)
	}
	docs := documents(t, c, key, no, "invoiced", 3)
	if got := typesOf(docs); got != "invoice,cancellation,invoice" {
		t.Fatalf("documents %s, want invoice,cancellation,invoice", got)
	}
	if docs[0]["id"] != first[0]["id"] || docs[2]["number"] == first[0]["number"] {
		t.Errorf("documents %v after %v", docs, first)
	}
	// The cancellation references the original by number and date (BG-3).
	x := c.Do("GET", "/v1/invoices/"+docs[1]["id"].(string)+"/xml", key, nil)
	if x.Status != 200 {
		t.Fatalf("cancellation XML: %d", x.Status)
	}
	xml := strings.Join(strings.Fields(string(x.Body)), "")
	if !strings.Contains(xml, "<ram:TypeCode>381</ram:TypeCode>") ||
		!strings.Contains(xml, "<ram:InvoiceReferencedDocument><ram:IssuerAssignedID>"+first[0]["number"].(string)+"</ram:IssuerAssignedID>") {
		t.Errorf("cancellation XML does not cancel %s:\n%s", first[0]["number"], xml)
	}
	if fs := einvoice.CheckXML(x.Body); len(fs) > 0 {
		t.Errorf("cancellation by the rules: %v", fs)
	}
	// The order's newest document is the corrected invoice, over 23.80.
	inv := c.Do("GET", "/v1/invoices/"+no, key, nil).JSON(t)["data"].(map[string]any)
	if inv["id"] != docs[2]["id"] || inv["totalGrossCents"] != float64(2380) || inv["type"] != "invoice" {
		t.Errorf("GET /v1/invoices/%s = %v, want the new invoice %v", no, inv, docs[2])
	}
	refereeFiles(t, c, key, docs[1:])

	// An e-mail change touches no document.
	withMail := strings.Replace(string(creditOrder(no, "2", 1000, 2380)), `"financialStatus":"paid"`, `"financialStatus":"paid","email":"kunde@example.com"`, 1)
	if r := c.Do("POST", "/v1/orders", key, []byte(withMail), "Idempotency-Key", no+"-3"); r.Status != http.StatusOK {
		t.Fatalf("e-mail change: %d %s", r.Status, r.Body)
	}
	var status string
	var pending bool
	if err := pool.QueryRow(context.Background(), `SELECT status, correction_pending FROM orders WHERE project_id = $1 AND order_no = $2`, pid, no).
		Scan(&status, &pending); err != nil || status != "invoiced" || pending {
		t.Errorf("after the e-mail change: status %s, correction pending %v (%v)", status, pending, err)
	}
}

// TestCancelOrder: POST /v1/orders/{orderNo}/cancel cancels an invoiced
// order (its invoice gets a cancellation) and an order not invoiced yet
// (never invoiced); repeats are 200; unknown orders 404; a cancelled
// order's content is final.
func TestCancelOrder(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	invoiced, waiting := "CAN-I-"+suffix, "CAN-W-"+suffix

	if r := c.Do("POST", "/v1/orders", key, creditOrder(invoiced, "1", 1000, 1190), "Idempotency-Key", invoiced); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	first := documents(t, c, key, invoiced, "invoiced", 1)

	cancel := func(orderNo, idemKey string) apitest.Response {
		t.Helper()
		return c.Do("POST", "/v1/orders/"+orderNo+"/cancel", key, nil, "Idempotency-Key", idemKey)
	}
	r := cancel(invoiced, invoiced+"-c")
	data, _ := r.JSON(t)["data"].(map[string]any)
	if r.Status != 200 || data["status"] != "cancelled" || data["orderNo"] != invoiced {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if again := cancel(invoiced, invoiced+"-c"); again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(r.Body) {
		t.Errorf("replay: %d %s %v", again.Status, again.Body, again.Header)
	}
	if other := cancel(invoiced, invoiced+"-c2"); other.Status != 200 || other.JSON(t)["data"].(map[string]any)["status"] != "cancelled" {
		t.Errorf("second cancel: %d %s", other.Status, other.Body)
	}
	docs := documents(t, c, key, invoiced, "cancelled", 2)
	if got := typesOf(docs); got != "invoice,cancellation" || docs[0]["id"] != first[0]["id"] {
		t.Fatalf("documents %v", docs)
	}
	refereeFiles(t, c, key, docs[1:])
	if r := c.Do("POST", "/v1/orders", key, creditOrder(invoiced, "3", 1000, 3570), "Idempotency-Key", invoiced+"-x"); r.Status != http.StatusConflict ||
		r.JSON(t)["error"].(map[string]any)["code"] != "order_cancelled" {
		t.Errorf("change of a cancelled order: %d %s", r.Status, r.Body)
	}

	// An order waiting for its payment is cancelled without a document.
	if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"items":[{"name":"Kurs","quantity":1,"unitNetCents":1000,"taxRate":19}]}`, waiting, waiting)), "Idempotency-Key", waiting); r.Status != http.StatusCreated {
		t.Fatalf("waiting order: %d %s", r.Status, r.Body)
	}
	if r := cancel(waiting, waiting+"-c"); r.Status != 200 {
		t.Fatalf("cancel waiting order: %d %s", r.Status, r.Body)
	}
	if d := waitStatus(t, c, key, waiting, func(d map[string]any) bool { return d["status"] == "cancelled" }); len(d["invoices"].([]any)) != 0 {
		t.Errorf("documents of an order cancelled before invoicing: %v", d)
	}

	if r := cancel("NO-SUCH-"+suffix, "k-"+suffix); r.Status != 404 || r.JSON(t)["error"].(map[string]any)["code"] != "order_not_found" {
		t.Errorf("unknown order: %d %s", r.Status, r.Body)
	}
	if r := c.Do("POST", "/v1/orders/"+waiting+"/cancel", key, nil); r.Status != 400 || r.JSON(t)["error"].(map[string]any)["code"] != "idempotency_key_missing" {
		t.Errorf("no Idempotency-Key: %d %s", r.Status, r.Body)
	}
	reader := testenv.Key(t, pool, pid, "invoices:read")
	if r := c.Do("POST", "/v1/orders/"+waiting+"/cancel", reader, nil, "Idempotency-Key", "k2-"+suffix); r.Status != 403 {
		t.Errorf("cancel with an invoices:read key: %d %s", r.Status, r.Body)
	}
}

// TestMovedDateOfSupplyCorrectsTheInvoice: a fulfillment report that moves
// an invoiced goods order's date of supply is accepted; the invoice is
// cancelled and issued again with the new date.
func TestMovedDateOfSupplyCorrectsTheInvoice(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	if _, err := project.Apply(context.Background(), pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.InvoiceFirstGateways = []string{"invoice"}
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	no := "MOVE-" + uuid.NewString()[:8]
	if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentGateway":"invoice","requiresShipping":true,
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Tee","quantity":2.5,"unitNetCents":101,"taxRate":7}]}`, no)), "Idempotency-Key", no); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	ship := func(at, idemKey string) {
		t.Helper()
		r := c.Do("POST", "/v1/fulfillments", key, []byte(fmt.Sprintf(`{"orderNo":%q,"status":"fulfilled","shippedAt":%q}`, no, at)), "Idempotency-Key", idemKey)
		if r.Status != 200 {
			t.Fatalf("fulfilled %s: %d %s", at, r.Status, r.Body)
		}
	}
	ship("2026-11-20T09:00:00Z", no+"-f1")
	documents(t, c, key, no, "invoiced", 1)
	ship("2026-11-21T09:00:00Z", no+"-f2")
	docs := documents(t, c, key, no, "invoiced", 3)
	if got := typesOf(docs); got != "invoice,cancellation,invoice" {
		t.Fatalf("documents %s", got)
	}
	x := c.Do("GET", "/v1/invoices/"+docs[2]["id"].(string)+"/xml", key, nil)
	if !strings.Contains(string(x.Body), "20261121") || strings.Contains(string(x.Body), "20261120") {
		t.Errorf("the new invoice's date of supply is not 2026-11-21:\n%s", x.Body)
	}
	refereeFiles(t, c, key, docs)
}
