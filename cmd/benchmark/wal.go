package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// walRecords is one relation's WAL records of one type between two
// positions, read back with pg_walinspect (the extension cmd/devstack sets
// up). A record is counted for the relation of its first block; records
// that change no relation (COMMIT, among others) are counted as "(no
// relation)".
type walRecords struct {
	relation   string // a table, an index, or "<table> (TOAST)"
	recordType string // INSERT, HOT_UPDATE, LOCK, ...
	count      float64
	bytes      float64 // the records' length, full-page images included
}

// walPosition is the cluster's current WAL insert position.
func walPosition(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var lsn string
	err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn)
	return lsn, err
}

// readWAL reads the WAL from one position to another, summed by relation
// and record type. Relations of another database and those gone since are
// named by their file node.
func readWAL(ctx context.Context, pool *pgxpool.Pool, from, to string) ([]walRecords, error) {
	// Summed first, named after: a drain writes about a hundred records
	// an invoice, and a name looked up per record takes minutes.
	rows, err := pool.Query(ctx, `WITH r AS (
			SELECT m[1]::oid AS db, m[2]::oid AS node, record_type, count(*)::float8 AS n, sum(record_length)::float8 AS bytes
			FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) w
			LEFT JOIN LATERAL regexp_match(w.block_ref, 'rel \d+/(\d+)/(\d+)') m ON true
			GROUP BY 1, 2, 3)
		SELECT CASE WHEN r.node IS NULL THEN '(no relation)' ELSE coalesce(n.name, 'file node ' || r.node) END,
			r.record_type, r.n, r.bytes
		FROM r LEFT JOIN LATERAL (
			SELECT coalesce((SELECT t.relname || ' (TOAST)' FROM pg_class t
					WHERE t.reltoastrelid IN (c.oid, (SELECT x.indrelid FROM pg_index x WHERE x.indexrelid = c.oid)) LIMIT 1),
				c.relname) AS name
			FROM pg_class c
			WHERE c.relfilenode = r.node AND r.db = (SELECT oid FROM pg_database WHERE datname = current_database())
			LIMIT 1) n ON true`, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (walRecords, error) {
		var w walRecords
		err := row.Scan(&w.relation, &w.recordType, &w.count, &w.bytes)
		return w, err
	})
}

// logWAL prints the WAL between two positions per item (n items), by
// relation; without pg_walinspect, or with the WAL recycled already, it
// says why and goes on.
func logWAL(ctx context.Context, pool *pgxpool.Pool, stage, from, to string, n int) {
	recs, err := readWAL(ctx, pool, from, to)
	if err != nil {
		log.Printf("%s: no WAL by relation (pg_walinspect: %v); make down && make migrate sets it up", stage, err)
		return
	}
	log.Printf("%s: %s", stage, walReport(recs, n, 15))
}

// walReport renders the WAL per item (n items) by relation, the top
// relations by bytes, each with its records per item and its three
// largest record types by bytes.
func walReport(recs []walRecords, n, top int) string {
	if n <= 0 || len(recs) == 0 {
		return ""
	}
	type relation struct {
		name         string
		count, bytes float64
		types        []walRecords
	}
	byName := map[string]*relation{}
	var total, count float64
	for _, w := range recs {
		r := byName[w.relation]
		if r == nil {
			r = &relation{name: w.relation}
			byName[w.relation] = r
		}
		r.count += w.count
		r.bytes += w.bytes
		r.types = append(r.types, w)
		total += w.bytes
		count += w.count
	}
	rels := make([]*relation, 0, len(byName))
	for _, r := range byName {
		rels = append(rels, r)
	}
	// Largest first; ties by name, so that the report is stable.
	slices.SortFunc(rels, func(a, b *relation) int { return cmp.Or(cmpDesc(a.bytes, b.bytes), strings.Compare(a.name, b.name)) })
	per := func(v float64) float64 { return v / float64(n) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "WAL per invoice by relation (the first block of each record): %.1f KB in %.1f records", per(total)/1000, per(count))
	for _, r := range rels[:min(top, len(rels))] {
		slices.SortFunc(r.types, func(a, b walRecords) int {
			return cmp.Or(cmpDesc(a.bytes, b.bytes), strings.Compare(a.recordType, b.recordType))
		})
		var types []string
		for _, t := range r.types[:min(3, len(r.types))] {
			types = append(types, fmt.Sprintf("%s %.2f", t.recordType, per(t.count)))
		}
		fmt.Fprintf(&sb, "\n  %7.0f B %6.2f records  %-50s %s", per(r.bytes), per(r.count), r.name, strings.Join(types, ", "))
	}
	return sb.String()
}
