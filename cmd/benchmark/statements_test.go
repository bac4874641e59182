package main

import (
	"strings"
	"testing"
)

func TestShortQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"SELECT 1", 20, "SELECT 1"},
		{"SELECT a,\n\t\tb   FROM t", 40, "SELECT a, b FROM t"},
		{"SELECT abcdefghij FROM t", 10, "SELECT ab…"},
		{"SELECT 'äöü' FROM t", 10, "SELECT 'ä…"},
	} {
		if got := shortQuery(c.in, c.n); got != c.want {
			t.Errorf("shortQuery(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestStatementReport: the totals per item split client statements (BEGIN
// and COMMIT among them, in any case) from those run inside functions and
// triggers, and the tops are by calls and by total time.
func TestStatementReport(t *testing.T) {
	t.Parallel()
	stmts := []statement{
		{query: "begin", toplevel: true, calls: 20},
		{query: "COMMIT", toplevel: true, calls: 20},
		{query: "INSERT INTO invoices VALUES ($1)", toplevel: true, calls: 10, totalMS: 50, rows: 10},
		{query: "SELECT slow()", toplevel: true, calls: 1, totalMS: 900, rows: 1},
		{query: "SELECT max(tx_id) FROM outbox", toplevel: false, calls: 30, totalMS: 3, rows: 30},
	}
	got := statementReport(stmts, 10, 1)
	for _, want := range []string{
		"5.10 sent by clients (2.00 BEGIN, 2.00 COMMIT), 3.00 run inside functions and triggers",
		" by calls:\n     3.00/inv      100 µs mean     1.00 rows/call  SELECT max(tx_id) FROM outbox (nested)",
		" by total time:\n     0.10/inv   900000 µs mean     1.00 rows/call  SELECT slow()",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if statementReport(stmts, 0, 1) != "" {
		t.Error("a report over no items is not empty")
	}
}
