package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// TestStreamedDATEVExportIsTheWholeFile: the export read in pages of three
// rows and written booking by booking is byte for byte the file of all
// documents and payments loaded at once and booked by accounting.Bookings
// (as the export was made before it streamed), and the debtor accounts are
// given in the order the customers are first booked. The data has what
// decides the order: several documents a day whose numbers sort otherwise
// than their sequence, releases of a document of the year before and of
// one of the year, a cancellation, payments at one instant with different
// documents, a payment of an order without a document, one at midnight of
// its document's issue day, refunds, and customers booked more than once.
func TestStreamedDATEVExportIsTheWholeFile(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	pid := testenv.Project(t, pool, false)
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.Debtors = "per-customer"
	}}); err != nil {
		t.Fatal(err)
	}
	seller := billing.ExampleSeller()
	seq := 0
	orders := map[string]string{} // order number -> id
	add := func(orderNo, email string, issue time.Time, netCents int64, period *billing.Period) billing.Invoice {
		t.Helper()
		seq++
		number := fmt.Sprintf("RE-%d", seq) // RE-10 sorts before RE-9
		price := netCents
		invs, err := billing.Compute(billing.Order{OrderNo: orderNo, Email: email,
			BillingAddress: billing.Address{CountryCode: "DE", Name: "Kunde " + email, Street: "Weg 1", PostalCode: "10115", City: "Berlin"},
			Items:          []billing.Item{{Name: "Kurs", Quantity: money.Int(1), UnitNetCents: &price, TaxRate: ptr(money.Int(19))}},
			ServicePeriod:  period},
			seller, billing.Context{IssueDate: issue, PaymentDate: issue, Numbers: []string{number}})
		if err != nil {
			t.Fatal(err)
		}
		storeDoc(t, pool, pid, orders, invs[0], seq)
		return invs[0]
	}
	add("Y0", "old@example.de", date(2024, 12, 10), 9000, &billing.Period{Start: date(2024, 12, 10), End: date(2025, 3, 31)})
	for i := 0; i < 12; i++ { // twelve documents on one day: RE-2 .. RE-13
		add(fmt.Sprintf("D%d", i), fmt.Sprintf("k%d@example.de", i%5), date(2025, 3, 1), int64(1000+i), nil)
	}
	deferred := add("P1", "k1@example.de", date(2025, 3, 15), 30000, &billing.Period{Start: date(2025, 3, 15), End: date(2025, 6, 14)})
	add("P2", "new@example.de", date(2025, 4, 1), 1200, &billing.Period{Start: date(2025, 4, 1), End: date(2025, 5, 31)})
	seq++
	cancel, err := billing.Cancel(deferred, fmt.Sprintf("RE-%d", seq), date(2025, 5, 2), billing.TypeCode("381"))
	if err != nil {
		t.Fatal(err)
	}
	storeDoc(t, pool, pid, orders, cancel, seq)
	add("LATE", "late@example.de", date(2025, 12, 31), 500, nil)
	add("NEXT", "next@example.de", date(2026, 1, 2), 700, nil) // after the range

	noon := time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)
	pay := func(orderNo string, at time.Time, cents int64) {
		t.Helper()
		if _, ok := orders[orderNo]; !ok {
			orders[orderNo] = uuid.NewString()
			insertOrder(t, pool, pid, orders[orderNo], orderNo)
		}
		if _, err := pool.Exec(ctx, `UPDATE orders SET paid_at = $2, paid_cents = $3 WHERE id = $1`, orders[orderNo], at, cents); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 9; i++ { // one instant, documents RE-2 .. RE-10: RE-10 (D8) sorts first
		pay(fmt.Sprintf("D%d", i), noon, int64(1190+i))
	}
	pay("D9", date(2025, 3, 1), 1199)                   // midnight of its document's day
	pay("NODOC", noon.Add(time.Hour), 4200)             // no document: no reference, the collective debtor
	pay("D10", date(2025, 2, 28).Add(-time.Hour), 1200) // before the range
	refund := func(orderNo string, at time.Time, cents int64) {
		t.Helper()
		id := uuid.NewString()
		if _, err := pool.Exec(ctx, `INSERT INTO payments (id, project_id, provider, provider_event_id, event_type, payment_ref, amount_cents, currency, order_id, received_at)
VALUES ($1, $2, 'stripe', $7, 'charge.refunded', $3, $4, 'eur', $5, $6)`, id, pid, "pi_"+orderNo, cents, orders[orderNo], at, "evt_"+id); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO provider_refunds (payment_id, project_id, order_id, amount_cents, full_refund) VALUES ($1, $2, $3, $4, false)`,
			id, pid, orders[orderNo], cents); err != nil {
			t.Fatal(err)
		}
	}
	refund("D1", noon, 100)
	refund("D0", noon, 90)
	refund("D0", noon.Add(24*time.Hour), 80)

	from, to := date(2025, 1, 1), date(2025, 12, 31)
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	s := New(pool, nil)
	defer func(n int) { exportPage = n }(exportPage)
	exportPage = 3
	var got bytes.Buffer
	if err := s.DATEVExport(ctx, &got, pid, from, to, now, nil); err != nil {
		t.Fatal(err)
	}
	want, keys := wholeFile(t, s, pid, from, to, now)
	if !bytes.Equal(got.Bytes(), want) {
		gl, wl := strings.Split(got.String(), "\r\n"), strings.Split(string(want), "\r\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				t.Fatalf("line %d differs (%d and %d lines):\n got %q\nwant %q", i+1, len(gl), len(wl), at(gl, i), at(wl, i))
			}
		}
	}
	if n := strings.Count(got.String(), "\r\n"); n < 30 {
		t.Errorf("only %d lines: the data does not exercise the export", n)
	}
	// Accounts in the order the customers were first booked.
	rows, _ := pool.Query(ctx, `SELECT customer_key, account FROM accounting_debtors WHERE project_id = $1 ORDER BY account`, pid)
	assigned, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var k string
		var a int
		err := r.Scan(&k, &a)
		return fmt.Sprintf("%s=%d", k, a), err
	})
	if err != nil {
		t.Fatal(err)
	}
	var expected []string
	for i, k := range keys {
		expected = append(expected, fmt.Sprintf("%s=%d", k, 10001+i))
	}
	if strings.Join(assigned, " ") != strings.Join(expected, " ") {
		t.Errorf("debtors\n got %v\nwant %v", assigned, expected)
	}
	// A second export gives the same file and no new accounts.
	var again bytes.Buffer
	exportPage = 500
	if err := s.DATEVExport(ctx, &again, pid, from, to, now, nil); err != nil || !bytes.Equal(again.Bytes(), want) {
		t.Errorf("second export differs: %v", err)
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

func ptr[T any](v T) *T { return &v }

func insertOrder(t *testing.T, pool *pgxpool.Pool, projectID, id, orderNo string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO orders (id, project_id, order_no, status, content, content_hash, invoice_hash, test_mode)
VALUES ($1, $2, $3, 'invoiced', '{}', '\x00', '\x00', false)`, id, projectID, orderNo); err != nil {
		t.Fatal(err)
	}
}

// storeDoc records inv as the invoicer does, in range RE with sequence seq.
func storeDoc(t *testing.T, pool *pgxpool.Pool, projectID string, orders map[string]string, inv billing.Invoice, seq int) {
	t.Helper()
	if _, ok := orders[inv.OrderNo]; !ok {
		orders[inv.OrderNo] = uuid.NewString()
		insertOrder(t, pool, projectID, orders[inv.OrderNo], inv.OrderNo)
	}
	doc, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	kind := string(inv.Kind)
	if inv.Kind == billing.KindCancellation {
		kind = "cancellation"
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO invoices (id, project_id, order_id, order_no, number, range_key, seq, type, type_code,
    format, status, issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, due_cents, test_mode, xml, document, archived_at,
    oss_report, ec_sales_list)
VALUES ($1, $2, $3, $4, $5, 'RE', $6, $7, $8, 'zugferd', 'archived', $9, 'EUR', 0, 0, 0, 0, false, '', $10, now(), $11, $12)`,
		uuid.NewString(), projectID, orders[inv.OrderNo], inv.OrderNo, inv.Number, seq, kind, string(inv.TypeCode), inv.IssueDate, doc,
		inv.OSSReport, inv.ECSalesList); err != nil {
		t.Fatal(err)
	}
}

// wholeFile is the export as it was made before it streamed: every
// document and payment loaded at once, booked by accounting.Bookings and
// written by accounting.WriteDATEV, the debtors from accounting_debtors.
// keys are the customers in the order they are first booked.
func wholeFile(t *testing.T, s *Service, projectID string, from, to, now time.Time) ([]byte, []string) {
	t.Helper()
	ctx := context.Background()
	p, err := project.Get(ctx, s.pool, projectID)
	if err != nil {
		t.Fatal(err)
	}
	set, err := accountingSettings(p)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT document FROM invoices WHERE `+loadedDocuments+` ORDER BY issue_date, range_key, seq`, projectID, from, to, true)
	if err != nil {
		t.Fatal(err)
	}
	invs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (billing.Invoice, error) {
		var inv billing.Invoice
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return inv, err
		}
		return inv, json.Unmarshal(raw, &inv)
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	seen := map[string]bool{}
	first := func(k string) {
		if k != "" && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	accounts := func() map[string]string {
		rows, err := s.pool.Query(ctx, `SELECT customer_key, account::text FROM accounting_debtors WHERE project_id = $1`, projectID)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for rows.Next() {
			var k, a string
			if err := rows.Scan(&k, &a); err != nil {
				t.Fatal(err)
			}
			m[k] = a
		}
		return m
	}()
	docs := make([]accounting.Document, len(invs))
	for i, inv := range invs {
		first(accounting.DebtorKey(inv))
		docs[i] = accounting.Document{Invoice: inv, Debtor: accounts[accounting.DebtorKey(inv)]}
	}
	var payments []accounting.Payment
	for _, q := range []struct {
		sql  string
		sign money.Cents
	}{
		{`SELECT o.order_no, o.paid_at, o.paid_cents, doc.number, doc.document FROM orders o
LEFT JOIN LATERAL (SELECT i.number, i.document FROM invoices i WHERE i.order_id = o.id AND NOT i.test_mode ORDER BY i.range_key, i.seq LIMIT 1) doc ON true
WHERE o.project_id = $1 AND o.paid_cents IS NOT NULL
  AND o.paid_at >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND o.paid_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
ORDER BY o.paid_at, o.order_no`, 1},
		{`SELECT o.order_no, pay.received_at, r.amount_cents, doc.number, doc.document FROM provider_refunds r
JOIN payments pay ON pay.id = r.payment_id JOIN orders o ON o.id = r.order_id
LEFT JOIN LATERAL (SELECT i.number, i.document FROM invoices i WHERE i.order_id = o.id AND NOT i.test_mode ORDER BY i.range_key, i.seq LIMIT 1) doc ON true
WHERE r.project_id = $1
  AND pay.received_at >= ($2::date)::timestamp AT TIME ZONE 'UTC' AND pay.received_at < ($3::date + 1)::timestamp AT TIME ZONE 'UTC'
ORDER BY pay.received_at, o.order_no, r.payment_id`, -1},
	} {
		rows, err := s.pool.Query(ctx, q.sql, projectID, from, to)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var p accounting.Payment
			var number *string
			var raw []byte
			var c int64
			if err := rows.Scan(&p.OrderNo, &p.Date, &c, &number, &raw); err != nil {
				t.Fatal(err)
			}
			p.Date, p.Cents = p.Date.UTC(), q.sign*money.Cents(c)
			if number != nil {
				p.Reference = *number
			}
			if raw != nil {
				var inv billing.Invoice
				if err := json.Unmarshal(raw, &inv); err != nil {
					t.Fatal(err)
				}
				first(accounting.DebtorKey(inv))
				p.Debtor = accounts[accounting.DebtorKey(inv)]
			}
			payments = append(payments, p)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	bookings, err := accounting.Bookings(set, docs, payments, from, to)
	if err != nil {
		t.Fatal(err)
	}
	h := accounting.Header{Consultant: 1001, Client: 1, FiscalYearStart: date(from.Year(), 1, 1), From: from, To: to, Created: now,
		Chart: set.Chart, Label: fmt.Sprintf("o2i %s bis %s", from.Format(time.DateOnly), to.Format(time.DateOnly))}
	var buf bytes.Buffer
	if err := accounting.WriteDATEV(&buf, h, bookings); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), keys
}

// TestConcurrentExportsGiveEachCustomerOneDebtor: four exports of a
// project with 300 new customers at once give every customer exactly one
// account (10001 to 10300, none twice) and write the same file; an export
// after them gives no new account.
func TestConcurrentExportsGiveEachCustomerOneDebtor(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	pid := testenv.Project(t, pool, false)
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.Debtors = "per-customer"
	}}); err != nil {
		t.Fatal(err)
	}
	const customers = 300
	orders := map[string]string{}
	price := int64(1000)
	for i := 1; i <= customers; i++ {
		issue := date(2025, time.Month(1+i%12), 1+i%28)
		invs, err := billing.Compute(billing.Order{OrderNo: fmt.Sprintf("C%d", i), Email: fmt.Sprintf("c%d@example.de", i),
			BillingAddress: billing.Address{CountryCode: "DE", Name: "Kunde", Street: "Weg 1", PostalCode: "10115", City: "Berlin"},
			Items:          []billing.Item{{Name: "Kurs", Quantity: money.Int(1), UnitNetCents: &price, TaxRate: ptr(money.Int(19))}}},
			billing.ExampleSeller(), billing.Context{IssueDate: issue, PaymentDate: issue, Numbers: []string{fmt.Sprintf("RE-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		storeDoc(t, pool, pid, orders, invs[0], i)
	}
	s := New(pool, nil)
	from, to, now := date(2025, 1, 1), date(2025, 12, 31), time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	defer func(n int) { exportPage = n }(exportPage)
	exportPage = 50
	outs := make([]bytes.Buffer, 4)
	errs := make(chan error, len(outs))
	for i := range outs {
		go func() { errs <- s.DATEVExport(ctx, &outs[i], pid, from, to, now, nil) }()
	}
	for range outs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		var n, distinct, lo, hi int
		if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT account), min(account), max(account) FROM accounting_debtors WHERE project_id = $1`,
			pid).Scan(&n, &distinct, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if n != customers || distinct != customers || lo != 10001 || hi != 10000+customers {
			t.Errorf("%s: %d debtors, %d accounts from %d to %d; want %d from 10001", when, n, distinct, lo, hi, customers)
		}
	}
	check("after four exports at once")
	for i := range outs[1:] {
		if !bytes.Equal(outs[i+1].Bytes(), outs[0].Bytes()) {
			t.Errorf("export %d differs from the first", i+2)
		}
	}
	if n := strings.Count(outs[0].String(), "\r\n"); n != customers+2 {
		t.Errorf("%d lines, want %d", n, customers+2)
	}
	var again bytes.Buffer
	if err := s.DATEVExport(ctx, &again, pid, from, to, now, nil); err != nil || !bytes.Equal(again.Bytes(), outs[0].Bytes()) {
		t.Errorf("a later export differs: %v", err)
	}
	check("after a later export")
}

// TestReportsReadInPagesSumAllDocuments: the OSS return and the EC sales
// list read in pages of two documents are the reports of all documents at
// once (accounting.OSS and accounting.ECSL): OSS sales to France and
// Austria, supplies to French and Austrian businesses, a cancellation, and
// domestic documents that count in neither.
func TestReportsReadInPagesSumAllDocuments(t *testing.T) {
	pool := testenv.Pool(t)
	ctx := context.Background()
	pid := testenv.Project(t, pool, false)
	seller := billing.ExampleSeller()
	orders := map[string]string{}
	var all []billing.Invoice
	seq := 0
	add := func(orderNo string, addr billing.Address, goods bool, net int64, issue time.Time) billing.Invoice {
		t.Helper()
		seq++
		invs, err := billing.Compute(billing.Order{OrderNo: orderNo, BillingAddress: addr, Email: orderNo + "@example.eu", RequiresShipping: goods,
			Items: []billing.Item{{Name: "Ware", Quantity: money.Int(1), UnitNetCents: &net}}},
			seller, billing.Context{IssueDate: issue, SupplyDate: issue, PaymentDate: issue, Numbers: []string{fmt.Sprintf("RE-%d", seq)}})
		if err != nil {
			t.Fatal(err)
		}
		storeDoc(t, pool, pid, orders, invs[0], seq)
		all = append(all, invs[0])
		return invs[0]
	}
	fr := billing.Address{CountryCode: "FR", Name: "Marie Curie", Street: "2 rue Cuvier", PostalCode: "75005", City: "Paris"}
	at := billing.Address{CountryCode: "AT", Name: "Max Bauer", Street: "Gasse 2", PostalCode: "8010", City: "Graz"}
	frB := billing.Address{CountryCode: "FR", CompanyName: "Client SARL", Name: "Jean", VATID: "FR12345678901", Street: "1 rue", PostalCode: "75002", City: "Paris"}
	atB := billing.Address{CountryCode: "AT", CompanyName: "Kunde GmbH", Name: "Eva", VATID: "ATU12345678", Street: "Ring 1", PostalCode: "1010", City: "Wien"}
	de := billing.Address{CountryCode: "DE", Name: "Anna", Street: "Weg 1", PostalCode: "10115", City: "Berlin"}
	for i := 0; i < 3; i++ {
		add(fmt.Sprintf("FR%d", i), fr, true, int64(1000+i), date(2026, 3, 3+i))
		add(fmt.Sprintf("AT%d", i), at, false, int64(2000+i), date(2026, 3, 4))
		add(fmt.Sprintf("FRB%d", i), frB, true, int64(3000+i), date(2026, 3, 10))
		add(fmt.Sprintf("ATB%d", i), atB, false, int64(4000+i), date(2026, 3, 12+i))
		add(fmt.Sprintf("DE%d", i), de, true, int64(500+i), date(2026, 3, 5))
	}
	last := add("FRB9", frB, true, 9000, date(2026, 3, 20))
	seq++
	cancel, err := billing.Cancel(last, fmt.Sprintf("RE-%d", seq), date(2026, 3, 21), billing.TypeCode("381"))
	if err != nil {
		t.Fatal(err)
	}
	storeDoc(t, pool, pid, orders, cancel, seq)
	all = append(all, cancel)
	add("LATER", fr, true, 777, date(2026, 4, 1)) // the next quarter and month

	s := New(pool, nil)
	defer func(n int) { exportPage = n }(exportPage)
	exportPage = 2
	q, _ := accounting.ParseQuarter("2026-Q1")
	var want bytes.Buffer
	if err := accounting.WriteOSS(&want, accounting.OSS(all, q)); err != nil {
		t.Fatal(err)
	}
	got, err := s.OSSReport(ctx, pid, q)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("OSS return: %v\n%s\nwant\n%s", err, got, want.Bytes())
	}
	if strings.Count(string(got), "\r\n") < 5 {
		t.Errorf("OSS return has too few rows:\n%s", got)
	}
	m, _ := accounting.ParsePeriod("2026-03")
	want.Reset()
	if err := accounting.WriteECSL(&want, accounting.ECSL(all, m)); err != nil {
		t.Fatal(err)
	}
	got, err = s.ECSLReport(ctx, pid, m)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("EC sales list: %v\n%s\nwant\n%s", err, got, want.Bytes())
	}
	if strings.Count(string(got), "\r\n") < 5 {
		t.Errorf("EC sales list has too few rows:\n%s", got)
	}
}
