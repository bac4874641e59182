package query_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
)

// A period's listing walks the documents in the order of issue, page by
// page: each document of the period exactly once, none outside it, the
// mode and the years filters applied, and a cursor of one filter refused
// under another.
func TestListInvoicesOfAPeriod(t *testing.T) {
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	// Recorded out of issue order: seq order is not issue order.
	days := []string{"2025-12-31", "2026-03-05", "2026-03-01", "2026-03-31", "2026-04-01", "2026-03-15", "2026-03-01", "2027-01-02"}
	want := map[string]string{} // number → issue date, March 2026 live
	for i, d := range days {
		number := fmt.Sprintf("P-%d", i)
		test := i == 5
		if _, err := pool.Exec(ctx, `INSERT INTO invoice_view (project_id, id, version, number, status, order_no, type, format, issue_date,
			currency, total_net_cents, total_tax_cents, total_gross_cents, test_mode, created_at, rev)
			VALUES ($1, $2, 1, $3, 'archived', $4, 'invoice', 'zugferd', $5, 'EUR', 100, 19, 119, $6, now(), 1)`,
			pid, uuid.New(), number, "O-"+number, d, test); err != nil {
			t.Fatal(err)
		}
		if d >= "2026-03-01" && d <= "2026-03-31" && !test {
			want[number] = d
		}
	}
	q := query.New(pool, nil)
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	live := false
	f := query.InvoiceFilter{From: &from, To: &to, TestMode: &live}
	var got []string
	var issued []string
	cursor := ""
	for range 10 {
		page, err := q.ListInvoices(ctx, pid, f, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range page.Data {
			got = append(got, inv.Number)
			issued = append(issued, inv.IssueDate)
		}
		cursor = *page.NextCursor
		if !page.HasMore {
			break
		}
	}
	if len(got) != len(want) || !slices.IsSorted(issued) {
		t.Fatalf("walked %v (issued %v), want the %d of March 2026 in the order of issue", got, issued, len(want))
	}
	for _, n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s listed outside the period or mode", n)
		}
	}
	// The years of an auditor.
	page, err := q.ListInvoices(ctx, pid, query.InvoiceFilter{Years: []int{2025, 2027}}, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var years []string
	for _, inv := range page.Data {
		years = append(years, inv.Number)
	}
	if !slices.Equal(years, []string{"P-0", "P-7"}) {
		t.Errorf("years 2025 and 2027: %v", years)
	}
	if page, err := q.ListInvoices(ctx, pid, query.InvoiceFilter{Years: []int{}}, "", 10); err != nil || len(page.Data) != 0 {
		t.Errorf("no years: %d documents (%v)", len(page.Data), err)
	}
	if _, err := q.ListInvoices(ctx, pid, query.InvoiceFilter{}, cursor, 2); err == nil {
		t.Error("a period's cursor is taken by the unfiltered listing")
	}
}
