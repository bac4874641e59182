package invoicing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/testenv"
)

// chainInNumberOrder checks every chain of the project: positions 1..n per
// number range, each naming the manifest before, in number (seq) order; it
// returns how many manifests there are.
func chainInNumberOrder(t *testing.T, v *invoicingEnv) int {
	t.Helper()
	rows, err := v.pool.Query(context.Background(), `SELECT m.range_key, m.chain_seq, i.seq, i.number, m.sha256, COALESCE(m.prev_sha256, '')
		FROM archive_manifests m JOIN invoices i ON i.id = m.invoice_id
		WHERE m.project_id = $1 ORDER BY m.range_key, m.chain_seq`, v.project)
	if err != nil {
		t.Fatal(err)
	}
	var rangeKey, lastRange, number, sum, prev, lastSum string
	var chainSeq, seq, lastSeq, pos int64
	n := 0
	if _, err := pgx.ForEachRow(rows, []any{&rangeKey, &chainSeq, &seq, &number, &sum, &prev}, func() error {
		if rangeKey != lastRange {
			lastRange, pos, lastSeq, lastSum = rangeKey, 0, 0, ""
		}
		pos++
		n++
		if chainSeq != pos || prev != lastSum {
			t.Errorf("range %s: %s at chain position %d naming %q, want position %d naming %q", rangeKey, number, chainSeq, prev, pos, lastSum)
		}
		if seq <= lastSeq {
			t.Errorf("range %s: number %s (seq %d) at chain position %d follows seq %d: not in number order", rangeKey, number, seq, chainSeq, lastSeq)
		}
		lastSeq, lastSum = seq, sum
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// anchored reports whether the invoice's PDF is recorded.
func (v *invoicingEnv) anchored(invoiceID string) bool {
	return v.count(`SELECT count(*) FROM archive_objects WHERE invoice_id = $1 AND kind = 'pdf'`, invoiceID) == 1
}

// TestChainFollowsNumberOrderWhateverFinishesFirst: the documents of a
// number range are stored in reverse number order, alternately by two
// services sharing the database (two invoicer processes), each one started
// only once the one after it has stored its objects; the chain still holds
// them in number order, positions 1..n, and verifies.
func TestChainFollowsNumberOrderWhateverFinishesFirst(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	other := invoicing.New(v.pool)
	const n = 4
	var ids []string
	for i := range n {
		ids = append(ids, v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("NO%d", i)), "")))[0].ID)
	}
	ctx := context.Background()
	svcs := []*invoicing.Service{v.svc, other}
	var wg sync.WaitGroup
	for i := n - 1; i >= 1; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Waiting for the documents before it, it may give up (then it
			// is retried below, as the retry table would).
			if err := svcs[i%2].ArchiveInvoice(ctx, a, v.project, ids[i]); err != nil {
				t.Logf("document %d: %v", i+1, err)
			}
		}()
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("document %d stored and anchored", i+1), func() bool { return v.anchored(ids[i]) })
	}
	if err := svcs[0].ArchiveInvoice(ctx, a, v.project, ids[0]); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, id := range ids { // the retries of those that gave up
		if err := svcs[i%2].ArchiveInvoice(ctx, a, v.project, id); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
	}
	if got := v.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, v.project); got != n {
		t.Errorf("%d documents archived, want %d", got, n)
	}
	if got := chainInNumberOrder(t, v); got != n {
		t.Errorf("%d manifests, want %d", got, n)
	}
	if rep := verify(t, v, a); rep.Checked != 3*n || rep.OK != 3*n {
		t.Errorf("verify: %+v", rep)
	}
}

// TestChainWaitsForAStuckPredecessor: the object store fails for the first
// document of a range only. The two after it are stored and anchored, and
// wait (ErrChainPending: their retry goes on later) without a manifest;
// another project archives meanwhile. Once the first is archived, its
// transaction chains all three in number order, and the retries of the two
// finish them.
func TestChainWaitsForAStuckPredecessor(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	w := newInvoicing(t, true, nil)
	var ids, others []string
	for i := range 3 {
		ids = append(ids, v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("SP%d", i)), "")))[0].ID)
		others = append(others, w.issue(w.place(simpleOrder(uniqueNo(fmt.Sprintf("SO%d", i)), "")))[0].ID)
	}
	ctx := context.Background()
	if err := v.svc.ArchiveInvoice(ctx, failingArchive(t), v.project, ids[0]); err == nil {
		t.Fatal("the first document archived into a missing bucket")
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = v.svc.ArchiveInvoice(ctx, a, v.project, ids[i+1])
		}()
	}
	for _, id := range others { // another project does not wait
		if err := w.svc.ArchiveInvoice(ctx, a, w.project, id); err != nil {
			t.Fatalf("the other project's document: %v", err)
		}
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, invoicing.ErrChainPending) {
			t.Errorf("document %d while the first is stuck: %v, want ErrChainPending", i+2, err)
		}
	}
	for _, id := range ids[1:] {
		if !v.anchored(id) || v.count(`SELECT count(*) FROM archive_manifests WHERE invoice_id = $1`, id) != 0 {
			t.Errorf("document %s: want anchored and not chained while the first is stuck", id)
		}
	}
	if got := chainInNumberOrder(t, w); got != len(others) {
		t.Errorf("the other project: %d manifests, want %d", got, len(others))
	}

	// The store answers for the first again: its transaction chains the
	// two waiting ones behind it.
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[0]); err != nil {
		t.Fatal(err)
	}
	if got := chainInNumberOrder(t, v); got != 3 {
		t.Errorf("%d manifests once the first is archived, want 3", got)
	}
	for _, id := range ids[1:] {
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, id); err != nil {
			t.Fatalf("retry of %s: %v", id, err)
		}
	}
	if got := v.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, v.project); got != 3 {
		t.Errorf("%d documents archived, want 3", got)
	}
	if rep := verify(t, v, a); rep.Checked != 9 || rep.OK != 9 {
		t.Errorf("verify: %+v", rep)
	}
}

// TestVerifyReportsAChainOutOfNumberOrder: a chain whose hashes link up but
// whose positions do not follow the numbers (made so here: the first
// document is kept out of the archive while the second is chained) is a
// problem of kind order on the document out of place.
func TestVerifyReportsAChainOutOfNumberOrder(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	first := v.issue(v.place(simpleOrder(uniqueNo("VO1"), "")))[0]
	second := v.issue(v.place(simpleOrder(uniqueNo("VO2"), "")))[0]
	ctx := context.Background()
	setRules := func(rules string) {
		if _, err := v.pool.Exec(ctx, `UPDATE invoices SET status = CASE WHEN $2 = '{}' THEN 'created' ELSE 'failed' END,
			failed_rules = $2::text[] WHERE id = $1`, first.ID, rules); err != nil {
			t.Fatal(err)
		}
	}
	setRules("{BR-TEST}") // never to be archived: the chain skips it
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, second.ID); err != nil {
		t.Fatal(err)
	}
	setRules("{}")
	// A broken document never awaits its archive again, so the chain's
	// read starts after the second (the range's head): forged away too.
	if _, err := v.pool.Exec(ctx, `DELETE FROM archive_chain_heads WHERE project_id = $1`, v.project); err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, first.ID); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, v, a)
	if !has(rep, first.ID, "chain", "order") || len(rep.Problems) != 1 {
		t.Fatalf("verify: %+v, want the one order problem of %s", rep, first.Number)
	}
	if p := rep.Problems[0]; !strings.Contains(p.Detail, first.Number) || !strings.Contains(p.Detail, second.Number) {
		t.Errorf("detail %q names neither number", p.Detail)
	}
}

// TestTwoInvoicersChainOneRangeInNumberOrder: two invoicers (each its own
// service, as two processes) share the order events of one project, whose
// documents take consecutive numbers of one range and are archived by
// either: every document is archived and the range's chain holds them in
// number order.
func TestTwoInvoicersChainOneRangeInNumberOrder(t *testing.T) {
	t.Parallel()
	const n = 40
	v := newInvoicing(t, true, nil)
	topic := orderTopic(t)
	suffix := uuid.NewString()[:8]
	var msgs []kafka.Message
	for i := range n {
		no := fmt.Sprintf("TI-%s-%d", suffix, i)
		_, raw := v.dueOrder(no)
		msgs = append(msgs, kafka.Message{Key: []byte(v.project + "/" + no), Value: raw})
	}
	publish(t, topic, msgs)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	group := "o2i-invoicer-test-" + suffix
	for range 2 {
		iv := invoicing.NewInvoicer(invoicing.New(v.pool), workingArchive(t), testenv.KafkaBrokers())
		iv.UseGroup(topic, group)
		wg.Add(1)
		go func() { defer wg.Done(); _ = iv.Run(ctx) }()
	}
	testenv.Eventually(t, 120*time.Second, fmt.Sprintf("all %d documents archived", n), func() bool {
		return v.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, v.project) == n
	})
	if got := chainInNumberOrder(t, v); got != n {
		t.Errorf("%d manifests, want %d", got, n)
	}
	if rep := verify(t, v, workingArchive(t)); rep.Checked != 3*n || rep.OK != 3*n {
		t.Errorf("verify: %+v", rep)
	}
}

// TestChainReadsAfterItsHead: the chain's read of the documents to chain
// starts after the range's head, the seq of the last document it took as the
// range's next one. A document archived before the anchor (backfill), chained
// at the end with a larger number than one still waiting, does not move the
// head, so the waiting one is still chained after it. A document at or before
// the head is not read at all: with the head set past it by hand it is not
// chained, and once the head is back it is.
func TestChainReadsAfterItsHead(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		ids = append(ids, v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("HD%d", i)), "")))[0].ID)
	}
	seqOf := func(id string) (seq int64, rangeKey string) {
		if err := v.pool.QueryRow(ctx, `SELECT seq, range_key FROM invoices WHERE id = $1`, id).Scan(&seq, &rangeKey); err != nil {
			t.Fatal(err)
		}
		return seq, rangeKey
	}
	head := func(rangeKey string) int64 {
		var seq int64
		err := v.pool.QueryRow(ctx, `SELECT seq FROM archive_chain_heads WHERE project_id = $1 AND range_key = $2`, v.project, rangeKey).Scan(&seq)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return seq
	}
	for _, id := range ids[:2] {
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, id); err != nil {
			t.Fatal(err)
		}
	}
	second, rangeKey := seqOf(ids[1])
	if got := head(rangeKey); got != second {
		t.Fatalf("head %d after two documents, want the second's seq %d", got, second)
	}

	// The fourth archived before the anchor, while the third waits: the
	// backfill chains it at the end, and the head stays.
	var xml []byte
	if err := v.pool.QueryRow(ctx, `SELECT xml FROM invoices WHERE id = $1`, ids[3]).Scan(&xml); err != nil {
		t.Fatal(err)
	}
	if _, err := a.For(true).Put(ctx, archive.InvoiceXMLKey(v.project, ids[3]), xml, "application/xml", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.pool.Exec(ctx, `UPDATE invoices SET status = 'archived', archived_at = now() WHERE id = $1`, ids[3]); err != nil {
		t.Fatal(err)
	}
	if res, err := v.svc.BackfillArchive(ctx, a, v.project, nil); err != nil || res.Anchored != 1 {
		t.Fatalf("backfill: %+v %v", res, err)
	}
	if got := head(rangeKey); got != second {
		t.Errorf("head %d after the backfill, want it unmoved at %d", got, second)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[2]); err != nil {
		t.Fatalf("the third, after a backfilled fourth: %v", err)
	}
	third, _ := seqOf(ids[2])
	if got := head(rangeKey); got != third {
		t.Errorf("head %d after the third, want %d", got, third)
	}

	// The head set past the fifth by hand: the fifth is not read.
	fifth, _ := seqOf(ids[4])
	if _, err := v.pool.Exec(ctx, `UPDATE archive_chain_heads SET seq = $3 WHERE project_id = $1 AND range_key = $2`, v.project, rangeKey, fifth); err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[4]); !errors.Is(err, invoicing.ErrChainPending) {
		t.Errorf("the fifth at the head: %v, want ErrChainPending (not read)", err)
	}
	if _, err := v.pool.Exec(ctx, `UPDATE archive_chain_heads SET seq = $3 WHERE project_id = $1 AND range_key = $2`, v.project, rangeKey, third); err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[4]); err != nil {
		t.Fatalf("the fifth after the head: %v", err)
	}
	if got := v.count(`SELECT count(*) FROM archive_manifests WHERE project_id = $1`, v.project); got != 5 {
		t.Errorf("%d manifests, want 5", got)
	}
	if got := head(rangeKey); got != fifth {
		t.Errorf("head %d at the end, want %d", got, fifth)
	}
}
