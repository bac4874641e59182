package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"golang.org/x/text/encoding/charmap"

	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// datevRows fetches the project's DATEV export of from..to and returns, per
// document number, its bookings as "Belegdatum amount debit>credit BU".
func datevRows(t *testing.T, c *apitest.Client, key, from, to string) (map[string][]string, string) {
	t.Helper()
	r := c.Do("GET", "/v1/exports/datev?from="+from+"&to="+to, key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("DATEV export %s..%s: %d %s", from, to, r.Status, r.Body)
	}
	text, err := charmap.Windows1252.NewDecoder().Bytes(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	lines := strings.Split(strings.TrimSuffix(string(text), "\r\n"), "\r\n")
	for _, l := range lines[2:] {
		f := strings.Split(l, ";")
		if len(f) != 125 {
			t.Fatalf("booking with %d fields: %s", len(f), l)
		}
		doc := strings.Trim(f[10], `"`)
		rows[doc] = append(rows[doc], fmt.Sprintf("%s %s %s>%s %s", f[9], f[0], f[6], f[7], strings.Trim(f[8], `"`)))
	}
	return rows, string(text)
}

// placeAndIssue places an order of a service of netCents at 19 % for the
// period start..end that waits for its payment, so no invoicer issues it,
// and issues its invoice on the day given; it returns the invoice number.
func placeAndIssue(t *testing.T, c *apitest.Client, svc *invoicing.Service, pid, key, orderNo string, netCents int, start, end string, on time.Time) string {
	t.Helper()
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Abo","quantity":1,"unitNetCents":%d,"taxRate":19}],
		"service_period":{"start_date":%q,"end_date":%q}}`, orderNo, orderNo, netCents, start, end)), "Idempotency-Key", orderNo)
	if r.Status != http.StatusCreated {
		t.Fatalf("order %s: %d %s", orderNo, r.Status, r.Body)
	}
	id := r.JSON(t)["data"].(map[string]any)["id"].(string)
	out, err := svc.IssueInvoices(context.Background(), pid, id, invoicing.IssueDates{IssueDate: on})
	if err != nil || len(out) != 1 {
		t.Fatalf("issue %s: %v %v", orderNo, out, err)
	}
	return out[0].Number
}

// projectHistory reads the accounting history `o2i project show` prints.
func projectHistory(t *testing.T, pid string) (string, []accounting.MethodChange) {
	t.Helper()
	out, err := runCmd(t, "project", "show", "--project", pid)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Accounting        string                    `json:"accounting"`
		AccountingHistory []accounting.MethodChange `json:"accountingHistory"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("project show: %v: %s", err, out)
	}
	return p.Accounting, p.AccountingHistory
}

// TestDATEVExportOverAMethodChange: a live project on accrual accounting
// invoices a service of December 2026 to March 2027 on 1 December 2026, then
// switches to cash-basis accounting from 2027 and invoices a service of
// February to May 2027 on 1 February 2027. The 2026 invoice stays deferred:
// its deferral in the 2026 export, its releases in the 2027 export; the 2027
// invoice books its revenue at once, with nothing on deferred revenue. The
// switch cannot reach back into 2026, which has a document, and the 2026
// export is the same after the switch as before.
func TestDATEVExportOverAMethodChange(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	svc := invoicing.New(pool)
	suffix := uuid.NewString()[:8]

	issue := func(orderNo string, netCents int, start, end string, on time.Time) string {
		t.Helper()
		return placeAndIssue(t, c, svc, pid, key, orderNo, netCents, start, end, on)
	}

	// 121,00 net over 121 days: 1,00 a day; January, February and March (90,00) deferred.
	dec := issue("DEC-"+suffix, 12100, "2026-12-01", "2027-03-31", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	wantDec2026 := []string{"0112 143,99 10000>8400 ", "0112 90,00 8400>0990 40"}
	rows, _ := datevRows(t, c, key, "2026-01-01", "2026-12-31")
	if diff := cmp.Diff(wantDec2026, rows[dec]); diff != "" {
		t.Errorf("2026 export before the switch, %s (-want +got):\n%s", dec, diff)
	}

	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "cash", "--accounting-from", "2026"); err == nil ||
		!strings.Contains(err.Error(), "from 2027 at the earliest") {
		t.Errorf("a switch reaching back into 2026, which has a document: %v", err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "cash", "--accounting-from", "2027"); err != nil {
		t.Fatal(err)
	}
	method, history := projectHistory(t, pid)
	if method != "cash" || len(history) != 2 || history[0].Method != "accrual" || history[1] != (accounting.MethodChange{From: 2027, Method: "cash"}) {
		t.Errorf("after the switch: accounting %s, history %+v", method, history)
	}

	// 120,00 net over 120 days; under accrual March to May (92,00) would be deferred.
	feb := issue("FEB-"+suffix, 12000, "2027-02-01", "2027-05-31", time.Date(2027, 2, 1, 9, 0, 0, 0, time.UTC))

	rows, _ = datevRows(t, c, key, "2026-01-01", "2026-12-31")
	if diff := cmp.Diff(wantDec2026, rows[dec]); diff != "" {
		t.Errorf("2026 export after the switch, %s (-want +got):\n%s", dec, diff)
	}
	if len(rows) != 1 {
		t.Errorf("2026 export books %d documents, want 1: %v", len(rows), rows)
	}
	rows, file := datevRows(t, c, key, "2027-01-01", "2027-12-31")
	want2027 := map[string][]string{
		dec: {"0101 31,00 0990>8400 40", "0102 28,00 0990>8400 40", "0103 31,00 0990>8400 40"},
		feb: {"0102 142,80 10000>8400 "},
	}
	if diff := cmp.Diff(want2027, rows); diff != "" {
		t.Errorf("2027 export (-want +got):\n%s", diff)
	}
	if strings.Contains(file, "RAP 02/2027") {
		t.Errorf("the 2027 invoice is deferred:\n%s", file)
	}
}

// TestCashProjectExportHasNoDeferral: a live project on cash-basis
// accounting (EÜR) invoices a service whose period runs three months on:
// its DATEV export books the revenue at once and nothing on deferred
// revenue (0990), where an accrual project's export defers the later months.
func TestCashProjectExportHasNoDeferral(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	c := client(t)
	today := time.Now().UTC()
	from, to := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly), today.Format(time.DateOnly)
	start, end := today.Format(time.DateOnly), today.AddDate(0, 3, 0).Format(time.DateOnly)
	for _, method := range []string{"cash", "accrual"} {
		pid := testenv.Project(t, pool, false)
		if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", method); err != nil {
			t.Fatal(err)
		}
		// No documents yet: the change takes effect this year.
		if got, history := projectHistory(t, pid); got != method || accounting.MethodIn(history, today.Year()) != method {
			t.Errorf("%s: accounting %s, history %+v", method, got, history)
		}
		key := testenv.Key(t, pool, pid)
		no := "EUR-" + uuid.NewString()[:8]
		if r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
			"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
			"items":[{"name":"Abo","quantity":1,"unitNetCents":10000,"taxRate":19}],
			"service_period":{"start_date":%q,"end_date":%q},
			"creditRedemptions":[{"type":"referral_credit","amountCents":11900,"externalRef":"cr-%s"}],"grossTotalCents":11900}`,
			no, start, end, no)), "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("order: %d %s", r.Status, r.Body)
		}
		number := documents(t, c, key, no, "invoiced", 1)[0]["number"].(string)
		rows, file := datevRows(t, c, key, from, to)
		var deferred int
		for _, b := range rows[number] {
			if strings.Contains(b, "0990") {
				deferred++
			}
		}
		switch method {
		case "cash":
			if want := []string{today.Format("0201") + " 119,00 10000>8400 ", today.Format("0201") + " 119,00 1700>10000 "}; !cmp.Equal(want, rows[number]) {
				t.Errorf("cash: bookings %q, want %q", rows[number], want)
			}
			if strings.Contains(file, ";0990;") || strings.Contains(file, "RAP") {
				t.Errorf("cash: a booking on deferred revenue:\n%s", file)
			}
		case "accrual":
			if deferred != 1 {
				t.Errorf("accrual: %d bookings on deferred revenue, want the deferral of the later months: %q", deferred, rows[number])
			}
		}
	}
}

// TestAccountingChangeTakesEffectFromItsYear: the method in force in the
// year of issue decides the prior-year review task (spec: service_period
// rule 4, accrual accounting only), not a change planned for next year;
// once this year has a document, a change takes effect from next year by
// default and cannot be made for this year.
func TestAccountingChangeTakesEffectFromItsYear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	c := client(t)
	svc := invoicing.New(pool)
	year := time.Now().UTC().Year()
	next := fmt.Sprint(year + 1)
	for _, tc := range []struct {
		name  string
		sets  [][]string
		now   string // the method in force this year
		tasks int
	}{
		{"accrual, cash planned from next year", [][]string{{"--accounting", "cash", "--accounting-from", next}}, "accrual", 1},
		{"cash, accrual planned from next year", [][]string{{"--accounting", "cash"}, {"--accounting", "accrual", "--accounting-from", next}}, "cash", 0},
	} {
		pid := testenv.Project(t, pool, true)
		for _, args := range tc.sets {
			if _, err := runCmd(t, append([]string{"project", "set", "--project", pid}, args...)...); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		_, history := projectHistory(t, pid)
		if accounting.MethodIn(history, year) != tc.now || len(history) != 2 || history[1].From != year+1 {
			t.Errorf("%s: history %+v", tc.name, history)
		}
		key := testenv.Key(t, pool, pid)
		no := "PYM-" + uuid.NewString()[:8]
		placeAndIssue(t, c, svc, pid, key, no, 1000, fmt.Sprintf("%d-12-01", year-1), fmt.Sprintf("%d-12-31", year), time.Now().UTC())
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = 'prior_year_revenue' AND subject = $2 AND status = 'open'`,
			pid, no).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != tc.tasks {
			t.Errorf("%s: %d prior_year_revenue tasks, want %d", tc.name, n, tc.tasks)
		}
	}

	// A live project with a document of this year: a change takes effect
	// from next year, and this year is refused.
	pid := testenv.Project(t, pool, false)
	key := testenv.Key(t, pool, pid)
	no := "NOW-" + uuid.NewString()[:8]
	if r := c.Do("POST", "/v1/orders", key, creditOrder(no, "1", 1000, 1190), "Idempotency-Key", no); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, no, "invoiced", 1)
	thisYear := fmt.Sprint(year)
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "accrual", "--accounting-from", thisYear); err != nil {
		t.Errorf("a command that changes nothing: %v", err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "cash", "--accounting-from", thisYear); err == nil ||
		!strings.Contains(err.Error(), "already has documents") {
		t.Errorf("a change for this year, which has a document: %v", err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "cash"); err != nil {
		t.Fatal(err)
	}
	want := []accounting.MethodChange{{From: year, Method: "accrual"}, {From: year + 1, Method: "cash"}}
	if method, history := projectHistory(t, pid); method != "cash" || !cmp.Equal(want, history) {
		t.Errorf("the default after a document of this year: %s, history %+v, want %+v", method, history, want)
	}
	// Repeating the command changes nothing; taking the planned change back
	// from this year would change this year; --accounting-from alone is a mistake.
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "cash", "--accounting-from", next); err != nil {
		t.Errorf("the same change again: %v", err)
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting", "accrual", "--accounting-from", thisYear); err == nil {
		t.Error("a change for this year succeeded")
	}
	if _, err := runCmd(t, "project", "set", "--project", pid, "--accounting-from", next); err == nil {
		t.Error("--accounting-from without --accounting succeeded")
	}
	if _, history := projectHistory(t, pid); !cmp.Equal(want, history) {
		t.Errorf("history %+v, want %+v", history, want)
	}
}
