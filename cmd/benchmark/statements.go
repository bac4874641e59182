package main

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// statement is one normalized statement's counters from
// pg_stat_statements (the extension cmd/devstack sets up).
type statement struct {
	query    string
	toplevel bool    // sent by a client, not run inside a function or trigger
	calls    float64 // executions
	totalMS  float64 // execution time
	rows     float64 // rows returned or affected
}

// resetStatements empties pg_stat_statements. It reports false, after
// saying why, when the extension cannot be used (not preloaded, not
// created, or its reset not granted): the bench goes on without it.
func resetStatements(ctx context.Context, pool *pgxpool.Pool) bool {
	if _, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		log.Printf("invoices: no statement statistics (pg_stat_statements: %v); make down && make migrate sets it up", err)
		return false
	}
	return true
}

// readStatements reads pg_stat_statements of the current database.
func readStatements(ctx context.Context, pool *pgxpool.Pool) ([]statement, error) {
	rows, err := pool.Query(ctx, `SELECT query, toplevel, calls::float8, total_exec_time, rows::float8
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []statement
	for rows.Next() {
		var s statement
		if err := rows.Scan(&s.query, &s.toplevel, &s.calls, &s.totalMS, &s.rows); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// shortQuery is a statement's text on one line, whitespace collapsed,
// cut to n runes.
func shortQuery(q string, n int) string {
	q = strings.Join(strings.Fields(q), " ")
	if r := []rune(q); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return q
}

// statementReport renders the top statements by calls and by total time,
// per item (n items), and the totals of client round trips: statements
// sent by clients, BEGINs and COMMITs among them.
func statementReport(stmts []statement, n, top int) string {
	if n <= 0 {
		return ""
	}
	per := func(v float64) float64 { return v / float64(n) }
	var total, begins, commits, nested float64
	for _, s := range stmts {
		if !s.toplevel {
			nested += s.calls
			continue
		}
		total += s.calls
		switch strings.ToUpper(strings.TrimSpace(s.query)) {
		case "BEGIN", "BEGIN READ ONLY", "BEGIN ISOLATION LEVEL READ COMMITTED":
			begins += s.calls
		case "COMMIT":
			commits += s.calls
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "statements per invoice: %.2f sent by clients (%.2f BEGIN, %.2f COMMIT), %.2f run inside functions and triggers\n",
		per(total), per(begins), per(commits), per(nested))
	line := func(s statement) {
		mean := 0.0
		if s.calls > 0 {
			mean = 1000 * s.totalMS / s.calls
		}
		nestedMark := ""
		if !s.toplevel {
			nestedMark = " (nested)"
		}
		fmt.Fprintf(&b, "  %7.2f/inv %8.0f µs mean %8.2f rows/call  %s%s\n", per(s.calls), mean, s.rows/max(s.calls, 1), shortQuery(s.query, 110), nestedMark)
	}
	byCalls := slices.Clone(stmts)
	slices.SortFunc(byCalls, func(a, b statement) int { return cmpDesc(a.calls, b.calls) })
	fmt.Fprintf(&b, " by calls:\n")
	for _, s := range byCalls[:min(top, len(byCalls))] {
		line(s)
	}
	byTime := slices.Clone(stmts)
	slices.SortFunc(byTime, func(a, b statement) int { return cmpDesc(a.totalMS, b.totalMS) })
	fmt.Fprintf(&b, " by total time:\n")
	for _, s := range byTime[:min(top, len(byTime))] {
		line(s)
	}
	return strings.TrimRight(b.String(), "\n")
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
