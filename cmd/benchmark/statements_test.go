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

// TestWALReport: relations are summed over their record types, listed
// largest first (ties by name), per item, each with its largest record
// types by bytes; a report over no items is empty.
func TestWALReport(t *testing.T) {
	t.Parallel()
	recs := []walRecords{
		{relation: "invoices", recordType: "INSERT", count: 10, bytes: 16000},
		{relation: "invoices", recordType: "LOCK", count: 40, bytes: 2000},
		{relation: "invoices", recordType: "HOT_UPDATE", count: 10, bytes: 1800},
		{relation: "invoices", recordType: "PRUNE", count: 5, bytes: 300},
		{relation: "outbox", recordType: "INSERT", count: 30, bytes: 33000},
		{relation: "(no relation)", recordType: "COMMIT", count: 30, bytes: 1000},
		{relation: "archive_pending", recordType: "INSERT", count: 10, bytes: 1000},
	}
	got := walReport(recs, 10, 3)
	for _, want := range []string{
		"WAL per invoice by relation (the first block of each record): 5.5 KB in 13.5 records",
		"\n     3300 B   3.00 records  outbox",
		"\n     2010 B   6.50 records  invoices                                           INSERT 1.00, LOCK 4.00, HOT_UPDATE 1.00",
		"\n      100 B   3.00 records  (no relation)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "archive_pending") || strings.Contains(got, "PRUNE") {
		t.Errorf("report goes past its top 3 relations or 3 record types:\n%s", got)
	}
	if walReport(recs, 0, 3) != "" || walReport(nil, 10, 3) != "" {
		t.Error("a report over no items or no records is not empty")
	}
}
