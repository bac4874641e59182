package invoicing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/consume"
	"github.com/o2i-service/o2i/internal/store"
)

// The chain of a number range takes its documents in number order: the
// manifest of the document with seq k follows the range's previous chained
// document in seq order. A document's stored objects are anchored in the
// transaction that tries to chain it; that transaction (under the range's
// advisory lock, so every invoicer process sees the others' anchors) chains
// every leading document of the range, in seq order, whose objects are
// anchored: its own and those of successors anchored earlier, by any
// process. A document whose predecessor is not anchored yet stays anchored
// and unchained; its caller waits a while (inside consume.Waiting, without
// its consumer worker) for the predecessor's transaction to chain it, then
// fails, and its retry finds the manifest recorded.

// ErrChainPending is the failure of a document anchored but not chained
// after chainWait: a document before it in its number range is not archived
// yet. Its retry goes on once that one is (whose transaction chains it).
var ErrChainPending = errors.New("archive: a document before it in its number range is not archived yet")

const (
	// chainBatch is the most documents of this process one chain
	// transaction takes.
	chainBatch = 64
	// chainScan is the most unchained documents of a range one read of the
	// chain transaction takes (it reads on while all of them chained).
	chainScan = 128
	// chainTimeout bounds one chain transaction with the writes of its
	// PDFs before it (writePDFs).
	chainTimeout = 30 * time.Second
	// chainWait bounds the wait of a document for its predecessor.
	chainWait = 5 * time.Second
	// chainPoll is how often the waiting documents of this process are
	// looked up (chained by another process).
	chainPoll = 200 * time.Millisecond
)

// chainManifest anchors the invoice's documents and chains m in its number
// range (in number order) and returns the manifest as recorded (its bytes
// and, for a live document chained with others, its place in their manifest
// batch, written already when this process could); when a document
// before it is not archived yet it waits for that one's transaction to chain
// it, at most chainWait (then ErrChainPending). Documents of one range
// archived at the same time are chained together (chainGroup): one
// transaction, one advisory lock, one round trip for the lock, the anchors,
// the chain's end and the documents to chain, one for the inserts.
//
// pdf, when set, is the document's PDF still to be written: the chain's
// goroutine writes it before the transaction (writePDFs), in a document
// batch with the PDFs of the transaction's other live documents.
func (s *Service) chainManifest(ctx context.Context, arc *archive.Archive, m archive.Manifest, issue time.Time, objs map[string]archive.Stored,
	pdf *pendingPDF) (chainedManifest, error) {
	r := &chainRequest{m: m, issue: issue, objs: objs, bucket: arc.Bucket(), done: make(chan struct{}), pdf: pdf,
		putBatch: func(ctx context.Context, key string, data []byte, until time.Time) (st archive.Stored, err error) {
			err = s.objectStore(ctx, m.ProjectID, func(ctx context.Context) (err error) {
				st, err = arc.Put(ctx, key, data, archive.ManifestBatchContentType, until)
				return err
			})
			return st, err
		}}
	if pdf != nil {
		pdf.put = func(ctx context.Context, data []byte) (archive.Stored, error) {
			return s.putPDF(ctx, arc, m.ProjectID, m.InvoiceID, data, pdf.until)
		}
		pdf.putClaimed = func(ctx context.Context, data []byte) (archive.Stored, error) {
			return s.putOwnPDF(ctx, arc, m.ProjectID, m.InvoiceID, data, pdf.until)
		}
		pdf.putBatch = func(ctx context.Context, key string, parts [][]byte, names []string, until time.Time) ([]archive.Stored, error) {
			return s.putDocumentBatch(ctx, arc, m.ProjectID, key, parts, names, until)
		}
	}
	return s.chains.chain(ctx, s.pool, r)
}

// chainArchived is chainManifest for a document archived before the archive
// was anchored (o2i archive backfill): it is no document the range waits
// for, and goes at the chain's end, in a manifest object of its own.
func (s *Service) chainArchived(ctx context.Context, arc *archive.Archive, m archive.Manifest, issue time.Time, objs map[string]archive.Stored) ([]byte, error) {
	r := &chainRequest{m: m, issue: issue, objs: objs, bucket: arc.Bucket(), archived: true, done: make(chan struct{})}
	c, err := s.chains.chain(ctx, s.pool, r)
	return c.body, err
}

// chainedManifest is a document's manifest as its chain transaction
// recorded it.
type chainedManifest struct {
	body []byte // nil: not chained
	// batchKey names the manifest batch the manifest lies in, from byte
	// offset on; "": an object of its own (archive.ManifestKey).
	batchKey string
	offset   int64
	// stored is the batch as this process wrote it after the chain
	// transaction; nil: the document's archiving writes it (again).
	stored *archive.Stored
}

// chainRequest is one document to anchor and chain.
type chainRequest struct {
	m        archive.Manifest // its objects are anchored; the chain builds the manifest from the anchors
	issue    time.Time
	objs     map[string]archive.Stored
	bucket   string
	archived bool // archived before the anchor (backfill): chained at the end
	// putBatch writes a manifest batch with retention until until (nil for
	// backfill, whose documents are never batched).
	putBatch func(ctx context.Context, key string, data []byte, until time.Time) (archive.Stored, error)
	// pdf is the document's PDF when the chain's goroutine writes it
	// (writePDFs; its anchor then completes objs and m.Objects); nil:
	// written already.
	pdf    *pendingPDF
	done   chan struct{}   // closed when loc, waiter or err is set
	loc    chainedManifest // the manifest, when chained
	waiter *chainWaiter    // anchored, not chained: woken when it is
	err    error
}

// chainWaiter is a document of this process anchored and not chained yet.
type chainWaiter struct {
	invoiceID string
	done      chan struct{} // closed when loc is set
	loc       chainedManifest
}

// chainGroup chains the documents of a number range that arrive while the
// range's transaction runs in the next one (group commit): one goroutine
// per range with documents waiting chains them batch by batch and ends when
// none waits; the callers wait for their document. It also wakes the
// documents waiting for a predecessor: at once when a transaction of this
// process chains them, else when its poll finds them chained. The zero
// value is ready.
type chainGroup struct {
	mu      sync.Mutex
	ranges  map[string][]*chainRequest // waiting documents of the ranges being chained
	waiting map[string][]*chainWaiter  // by invoice id: anchored, waiting to be chained
	polling bool
}

func (g *chainGroup) chain(ctx context.Context, pool *pgxpool.Pool, r *chainRequest) (chainedManifest, error) {
	key := r.m.ProjectID + "\x00" + r.m.NumberRange
	g.mu.Lock()
	if g.ranges == nil {
		g.ranges = map[string][]*chainRequest{}
	}
	pending, running := g.ranges[key]
	g.ranges[key] = append(pending, r)
	g.mu.Unlock()
	if !running {
		go g.run(pool, key)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		// It may still be chained: a retry finds its manifest recorded.
		return chainedManifest{}, ctx.Err()
	}
	if r.err != nil || r.loc.body != nil {
		return r.loc, r.err
	}
	return g.await(ctx, r.waiter)
}

// await waits for w's document to be chained, at most chainWait, without
// holding a consumer worker.
func (g *chainGroup) await(ctx context.Context, w *chainWaiter) (chainedManifest, error) {
	err := consume.Waiting(ctx, func() error {
		t := time.NewTimer(chainWait)
		defer t.Stop()
		select {
		case <-w.done:
			return nil
		case <-t.C:
			return ErrChainPending
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		g.forget(w)
		select {
		case <-w.done: // chained as it gave up
			return w.loc, nil
		default:
			return chainedManifest{}, err
		}
	}
	return w.loc, nil
}

// forget drops a waiter that gave up.
func (g *chainGroup) forget(w *chainWaiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ws := g.waiting[w.invoiceID]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(g.waiting, w.invoiceID)
	} else {
		g.waiting[w.invoiceID] = ws
	}
}

// wake hands the chained manifests to their waiters; g.mu is held.
func (g *chainGroup) wake(chained map[string]chainedManifest) {
	for id, loc := range chained {
		for _, w := range g.waiting[id] {
			w.loc = loc
			close(w.done)
		}
		delete(g.waiting, id)
	}
}

// run chains the range's waiting documents until none waits: their PDFs
// still to be written first (writePDFs), then the chain transaction, then
// its manifest batches.
func (g *chainGroup) run(pool *pgxpool.Pool, key string) {
	for {
		g.mu.Lock()
		pending := g.ranges[key]
		if len(pending) == 0 {
			delete(g.ranges, key)
			g.mu.Unlock()
			return
		}
		batch := pending[:min(len(pending), chainBatch)]
		g.ranges[key] = pending[len(batch):]
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), chainTimeout)
		writePDFs(ctx, pool, batch)
		ready := make([]*chainRequest, 0, len(batch))
		for _, r := range batch {
			if r.err == nil { // its PDF written
				ready = append(ready, r)
			}
		}
		var chained map[string]chainedManifest
		var batches map[string]manifestBatch
		var err error
		if len(ready) > 0 {
			chained, batches, err = chainTx(ctx, pool, ready)
		}
		cancel()
		if err == nil {
			putBatches(ready, chained, batches)
		}
		g.mu.Lock()
		g.wake(chained)
		for _, r := range batch {
			switch {
			case r.err != nil: // its PDF was not written
			case err != nil:
				r.err = err
			case r.loc.body == nil:
				// Registered before the next transaction of this range runs,
				// so that one wakes it.
				r.waiter = &chainWaiter{invoiceID: r.m.InvoiceID, done: make(chan struct{})}
				if g.waiting == nil {
					g.waiting = map[string][]*chainWaiter{}
				}
				g.waiting[r.m.InvoiceID] = append(g.waiting[r.m.InvoiceID], r.waiter)
				if !g.polling {
					g.polling = true
					go g.poll(pool)
				}
			}
			close(r.done)
		}
		g.mu.Unlock()
	}
}

// poll looks up the waiting documents every chainPoll (one query for all of
// them) and wakes those another process chained, until none waits.
func (g *chainGroup) poll(pool *pgxpool.Pool) {
	for {
		time.Sleep(chainPoll)
		g.mu.Lock()
		if len(g.waiting) == 0 {
			g.polling = false
			g.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(g.waiting))
		for id := range g.waiting {
			ids = append(ids, id)
		}
		g.mu.Unlock()
		chained, err := recordedManifests(context.Background(), pool, ids)
		if err != nil {
			slog.Warn("invoicer: looking up documents waiting to be chained", "err", err)
			continue
		}
		g.mu.Lock()
		g.wake(chained)
		g.mu.Unlock()
	}
}

// recordedManifests returns the manifests recorded for the invoices, with
// the statement's generic plan (store.GenericPlans: one pipeline, one
// implicit transaction).
func recordedManifests(ctx context.Context, pool *pgxpool.Pool, ids []string) (map[string]chainedManifest, error) {
	ctx, cancel := context.WithTimeout(ctx, chainTimeout)
	defer cancel()
	conn, err := store.Acquire(ctx, pool)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	var chained map[string]chainedManifest
	b := &pgx.Batch{}
	b.Queue(`SELECT ` + store.GenericPlans)
	b.Queue(recordedManifestsSQL, ids).Query(func(rows pgx.Rows) (err error) {
		chained, err = collectManifests(rows)
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return chained, nil
}

// recordedManifestsSQL reads the recorded manifests of invoices ($1) for
// collectManifests.
const recordedManifestsSQL = `SELECT invoice_id::text, body, batch_key, batch_offset FROM archive_manifests WHERE invoice_id = ANY($1::uuid[])`

func collectManifests(rows pgx.Rows) (map[string]chainedManifest, error) {
	out := map[string]chainedManifest{}
	var id string
	var body []byte
	var key *string
	var offset *int64
	_, err := pgx.ForEachRow(rows, []any{&id, &body, &key, &offset}, func() error {
		c := chainedManifest{body: body}
		if key != nil && offset != nil {
			c.batchKey, c.offset = *key, *offset
		}
		out[id] = c
		return nil
	})
	return out, err
}

// putBatches writes the manifest batches of a chain transaction, each once
// (any of them holds documents of this process: one of batch's, or one
// waiting for its predecessor), and records the object with their
// manifests in chained. One that fails is left to its documents' archiving,
// which writes it again from the database (storeManifest).
func putBatches(batch []*chainRequest, chained map[string]chainedManifest, batches map[string]manifestBatch) {
	// A live document's writer: batches hold live documents only, which all
	// go to the live archive (a test document's writes to the test archive).
	var put func(ctx context.Context, key string, data []byte, until time.Time) (archive.Stored, error)
	for _, r := range batch {
		if r.putBatch != nil && !r.m.TestMode {
			put = r.putBatch
			break
		}
	}
	if put == nil || len(batches) == 0 {
		return
	}
	stored := make(map[string]*archive.Stored, len(batches))
	for key, mb := range batches {
		st, err := put(context.Background(), key, mb.data, mb.until)
		if err != nil {
			slog.Warn("invoicer: writing a manifest batch (its documents write it again)", "key", key, "err", err)
			continue
		}
		stored[key] = &st
	}
	for id, c := range chained {
		if st := stored[c.batchKey]; c.batchKey != "" && st != nil {
			c.stored = st
			chained[id] = c
		}
	}
	for _, r := range batch {
		if st := stored[r.loc.batchKey]; r.loc.batchKey != "" && st != nil {
			r.loc.stored = st
		}
	}
}

// chainTx anchors the objects of batch (one project and number range) and
// chains what can be chained, in one transaction under the range's advisory
// lock: the documents archived before the anchor first, then the range's
// archivable documents not chained yet in number order, as far as their
// objects are anchored (nextLinks). It sets the body of each request
// chained (now or before) and returns every manifest it chained, of this
// process's documents or another's.
//
// The manifests of the leading live documents it chains lie in manifest
// batches (manifestBatches), one object for each run of one retention
// period; it returns each batch's bytes by key, to be written once.
func chainTx(ctx context.Context, pool *pgxpool.Pool, batch []*chainRequest) (map[string]chainedManifest, map[string]manifestBatch, error) {
	first := batch[0].m
	ids := make([]string, len(batch))
	for i, r := range batch {
		ids[i] = r.m.InvoiceID
	}
	var chained map[string]chainedManifest
	var batches map[string]manifestBatch
	// BEGIN goes out with the first reads, COMMIT with the last inserts:
	// the range's advisory lock is held for no round trip of its own.
	var end chainEnd
	var recorded map[string]chainedManifest
	var cands []chainCandidate
	b := store.TxBatch()
	// The lookups by arrays of invoices keep their generic plans.
	b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('archive-chain:' || $1 || ':' || $2, 0)), `+store.GenericPlans,
		first.ProjectID, first.NumberRange)
	queueAnchors(b, batch)
	b.Queue(`SELECT chain_seq, sha256 FROM archive_manifests WHERE project_id = $1 AND range_key = $2
		ORDER BY chain_seq DESC LIMIT 1`, first.ProjectID, first.NumberRange).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&end.seq, &end.sha256); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err // no row: the range's first manifest
		}
		return nil
	})
	b.Queue(recordedManifestsSQL, ids).Query(func(rows pgx.Rows) (err error) {
		recorded, err = collectManifests(rows)
		return err
	})
	queueCandidates(b, first.ProjectID, first.NumberRange).Query(func(rows pgx.Rows) (err error) {
		cands, err = scanCandidates(first.ProjectID, first.NumberRange, rows, nil)
		return err
	})
	err := store.WithTxBatch(ctx, pool, b, func(tx pgx.Tx) (*pgx.Batch, error) {
		chained, batches = map[string]chainedManifest{}, map[string]manifestBatch{}
		// Documents archived before the anchor go first, at the chain's end.
		var old []chainCandidate
		for _, r := range batch {
			if _, ok := recorded[r.m.InvoiceID]; r.archived && !ok {
				recorded[r.m.InvoiceID] = chainedManifest{} // the same invoice twice in one batch: chained once
				old = append(old, chainCandidate{m: r.m, issue: r.issue, ready: true, archived: true})
			}
		}
		more := len(cands) == chainScan
		cands = append(old, cands...)
		for {
			links, err := nextLinks(end, cands)
			if err != nil {
				return nil, err
			}
			for key, mb := range manifestBatches(links) {
				batches[key] = mb
			}
			ins := &pgx.Batch{}
			for _, l := range links {
				m := l.m
				var key *string
				var offset *int64
				if l.batchKey != "" {
					key, offset = &l.batchKey, &l.offset
				}
				ins.Queue(`INSERT INTO archive_manifests (invoice_id, project_id, range_key, chain_seq, number, issue_date, year, type,
						test_mode, body, sha256, prev_sha256, batch_key, batch_offset)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
					m.InvoiceID, m.ProjectID, m.NumberRange, m.ChainSeq, m.Number, l.issue, l.issue.Year(), m.Type, m.TestMode,
					l.body, l.sha256, orders.Nullable(m.PreviousManifestSHA256), key, offset)
				chained[m.InvoiceID] = chainedManifest{body: l.body, batchKey: l.batchKey, offset: l.offset}
				end = chainEnd{seq: m.ChainSeq, sha256: l.sha256}
			}
			if head := chainHead(links); head > 0 {
				ins.Queue(`INSERT INTO archive_chain_heads (project_id, range_key, seq) VALUES ($1, $2, $3)
					ON CONFLICT (project_id, range_key) DO UPDATE SET seq = greatest(archive_chain_heads.seq, EXCLUDED.seq)`,
					first.ProjectID, first.NumberRange, head)
			}
			if !more || len(links) < len(cands) {
				for _, r := range batch {
					if c := recorded[r.m.InvoiceID]; c.body != nil {
						r.loc = c
					} else {
						r.loc = chained[r.m.InvoiceID]
					}
				}
				return ins, nil // sent with the COMMIT
			}
			// Every document read was chained and there are more: read on.
			if err := tx.SendBatch(ctx, ins).Close(); err != nil {
				return nil, err
			}
			b := &pgx.Batch{}
			queueCandidates(b, first.ProjectID, first.NumberRange)
			br := tx.SendBatch(ctx, b)
			rows, err := br.Query()
			cands, err = scanCandidates(first.ProjectID, first.NumberRange, rows, err)
			if err := errors.Join(err, br.Close()); err != nil {
				return nil, err
			}
			more = len(cands) == chainScan
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return chained, batches, nil
}

// queueAnchors queues the anchors of the objects of batch's documents
// (anchorArrays.queue).
func queueAnchors(b *pgx.Batch, batch []*chainRequest) {
	var a anchorArrays
	for _, r := range batch {
		for _, o := range r.m.Objects {
			a.add(r.m.ProjectID, r.m.InvoiceID, o.Kind, r.bucket, r.objs[o.Kind], o.EmbeddedIn)
		}
	}
	a.queue(b)
}

// queue queues the anchors as one insert from arrays (each kept if its
// invoice has one of that kind already), or nothing when there are none.
func (a *anchorArrays) queue(b *pgx.Batch) {
	if len(a.invoiceIDs) == 0 {
		return
	}
	b.Queue(`INSERT INTO archive_objects (invoice_id, kind, project_id, bucket, object_key, version_id, sha256, size, retain_until, embedded_in,
			byte_offset)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],
			$9::timestamptz[], $10::text[], $11::bigint[])
		ON CONFLICT (invoice_id, kind) DO NOTHING`,
		a.invoiceIDs, a.kinds, a.projectIDs, a.buckets, a.keys, a.versions, a.sha256s, a.sizes, a.retainUntil, a.embeddedIn, a.byteOffsets)
}

// anchorArrays are the columns of the anchors of queueAnchors, one element
// per object.
type anchorArrays struct {
	invoiceIDs, kinds, projectIDs, buckets, keys, versions, sha256s []string
	sizes                                                           []int64
	retainUntil                                                     []*time.Time
	embeddedIn                                                      []*string
	byteOffsets                                                     []*int64 // nil: the whole object
}

// add appends the anchor of one object; embeddedIn "pdf" for an XML that
// lies only inside the PDF.
func (a *anchorArrays) add(projectID, invoiceID, kind, bucket string, st archive.Stored, embeddedIn string) {
	a.invoiceIDs, a.kinds, a.projectIDs = append(a.invoiceIDs, invoiceID), append(a.kinds, kind), append(a.projectIDs, projectID)
	a.buckets, a.keys, a.versions = append(a.buckets, bucket), append(a.keys, st.Key), append(a.versions, st.VersionID)
	a.sha256s, a.sizes, a.retainUntil = append(a.sha256s, st.SHA256), append(a.sizes, st.Size), append(a.retainUntil, retainUntil(st))
	a.byteOffsets = append(a.byteOffsets, byteOffset(st))
	var in *string
	if embeddedIn != "" {
		in = &embeddedIn
	}
	a.embeddedIn = append(a.embeddedIn, in)
}

// queueCandidates queues the read of a range's archivable documents not
// chained yet, in number order, with the anchors of their objects (a row
// per anchor, xml before pdf; one row without an anchor when none is).
//
// It reads only the documents after the range's head (archive_chain_heads,
// migration 00217): every archivable document before it in number order is
// chained. Numbers are taken in number order (the range's row lock, held to
// the commit), a document awaits its archive from its issue until it is
// archived and never again, and the chain takes the leading documents in
// number order, so the seq of the last document it took that way bounds
// the ones still to take. Without the bound, the read walked the range's
// archived documents from its first number in every chain transaction (the
// planner takes the range's unique index and filters its entries by status):
// 1,000 buffers and 115 ms a read late in a drain of 6,000 here, and a year's
// range of a busy project holds millions. It walks archive_pending (migration
// 00220), where only the documents awaiting their archive are.
func queueCandidates(b *pgx.Batch, projectID, rangeKey string) *pgx.QueuedQuery {
	return b.Queue(`SELECT c.id::text, c.seq, c.number, c.issue_date, c.type, c.test_mode, c.format,
			o.kind, o.object_key, o.version_id, o.sha256, o.size, o.retain_until, o.embedded_in, o.byte_offset
		FROM (SELECT i.id, i.seq, i.number, i.issue_date, i.type, i.test_mode, i.format
			FROM archive_pending p JOIN invoices i ON i.id = p.invoice_id
			WHERE p.project_id = $1 AND p.range_key = $2 AND `+awaitsArchiveSQL("i")+`
			AND p.seq > coalesce((SELECT h.seq FROM archive_chain_heads h WHERE h.project_id = $1 AND h.range_key = $2), 0)
			AND NOT EXISTS (SELECT 1 FROM archive_manifests m WHERE m.invoice_id = i.id)
			ORDER BY p.seq LIMIT $3) c
		LEFT JOIN archive_objects o ON o.invoice_id = c.id AND o.kind IN ('xml', 'pdf')
		ORDER BY c.seq, o.kind DESC`, projectID, rangeKey, chainScan)
}

// scanCandidates reads queueCandidates' rows (the read's error err).
func scanCandidates(projectID, rangeKey string, rows pgx.Rows, err error) ([]chainCandidate, error) {
	if err != nil {
		return nil, err
	}
	var out []chainCandidate
	var objects []anchorRow
	var format string
	flush := func() {
		if len(out) > 0 {
			c := &out[len(out)-1]
			c.m.Objects, c.ready = manifestObjects(format, objects)
		}
	}
	var (
		id, number, typ, f string
		seq                int64
		issue              time.Time
		testMode           bool
		kind, key, version *string
		sha, embeddedIn    *string
		size, offset       *int64
		until              *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &seq, &number, &issue, &typ, &testMode, &f, &kind, &key, &version, &sha, &size, &until, &embeddedIn, &offset},
		func() error {
			if len(out) == 0 || out[len(out)-1].m.InvoiceID != id {
				flush()
				format, objects = f, nil
				out = append(out, chainCandidate{seq: seq, issue: issue, m: archive.Manifest{ProjectID: projectID, NumberRange: rangeKey, InvoiceID: id, Number: number,
					IssueDate: issue.Format(time.DateOnly), Type: typ, TestMode: testMode}})
			}
			if kind != nil {
				a := anchorRow{kind: *kind, st: archive.Stored{Key: *key, VersionID: *version, SHA256: *sha, Size: *size}}
				a.st.Anchored(until, offset)
				if embeddedIn != nil {
					a.embeddedIn = *embeddedIn
				}
				objects = append(objects, a)
			}
			return nil
		})
	flush()
	return out, err
}

// anchorRow is the anchor of one object of a document to chain.
type anchorRow struct {
	kind       string // xml or pdf
	st         archive.Stored
	embeddedIn string
}

// manifestObjects returns a document's manifest objects from its anchors
// (xml before pdf), and whether every object its format archives is
// anchored: the PDF, and the XML unless it is a small-amount invoice.
func manifestObjects(format string, anchors []anchorRow) ([]archive.ManifestObject, bool) {
	var objs []archive.ManifestObject
	var xml, pdf bool
	for _, kind := range []string{"xml", "pdf"} {
		for _, a := range anchors {
			if a.kind != kind {
				continue
			}
			o := archive.Object(kind, a.st)
			o.EmbeddedIn = a.embeddedIn
			objs = append(objs, o)
			xml, pdf = xml || kind == "xml", pdf || kind == "pdf"
		}
	}
	return objs, pdf && (xml || format == string(billing.FormatSmallAmount))
}

// chainEnd is the last link of a number range's chain; the zero value: the
// range has none yet.
type chainEnd struct {
	seq    int64
	sha256 string
}

// chainCandidate is a document that may be chained: its manifest without
// the chain's fields, ready when its objects are anchored.
type chainCandidate struct {
	m        archive.Manifest
	seq      int64 // its number's place in the range
	issue    time.Time
	ready    bool
	archived bool // archived before the anchor (backfill)
}

// newLink is a manifest to record.
type newLink struct {
	m        archive.Manifest
	seq      int64
	issue    time.Time
	archived bool
	body     []byte
	sha256   string
	batchKey string // set by manifestBatches
	offset   int64
}

// nextLinks chains cands, in the order given (the range's documents not
// chained yet, by number), after end: each of the leading ready ones takes
// the next position and names the manifest before it; the first one not
// ready stops the chain (its successors wait for it).
func nextLinks(end chainEnd, cands []chainCandidate) ([]newLink, error) {
	var links []newLink
	for _, c := range cands {
		if !c.ready {
			break
		}
		m := c.m
		m.ChainSeq, m.PreviousManifestSHA256 = end.seq+1, end.sha256
		body, sum, err := m.Encode()
		if err != nil {
			return nil, err
		}
		links = append(links, newLink{m: m, seq: c.seq, issue: c.issue, archived: c.archived, body: body, sha256: sum})
		end = chainEnd{seq: m.ChainSeq, sha256: sum}
	}
	return links, nil
}

// chainHead is the seq of the last of links the chain took as the range's
// next document (0: none; a document archived before the anchor goes at the
// chain's end whatever its number and is no head).
func chainHead(links []newLink) int64 {
	var head int64
	for _, l := range links {
		if !l.archived {
			head = max(head, l.seq)
		}
	}
	return head
}

// maxManifestBatch is the most manifests one manifest batch holds.
const maxManifestBatch = 64

// manifestBatch is the content of a manifest batch and its retention.
type manifestBatch struct {
	data  []byte
	until time.Time
}

// manifestBatches puts the manifests of links (consecutive positions of one
// chain) into manifest batches and returns each batch's bytes by key: every
// run of at least two live documents of one retention period (the year of
// issue), at most maxManifestBatch each, in chain order. A test document
// keeps a manifest object of its own (a reset removes it with its
// documents), as does a document archived before the anchor (backfill
// writes its manifest itself) and one whose run is a single document.
func manifestBatches(links []newLink) map[string]manifestBatch {
	batchable := func(l newLink) bool { return !l.m.TestMode && !l.archived }
	out := map[string]manifestBatch{}
	for i := 0; i < len(links); {
		j := i + 1
		if batchable(links[i]) {
			for j < len(links) && j-i < maxManifestBatch && batchable(links[j]) && links[j].issue.Year() == links[i].issue.Year() {
				j++
			}
		}
		if j-i >= 2 {
			key := archive.ManifestBatchKey(links[i].m.ProjectID, links[i].m.InvoiceID, j-i)
			var data []byte
			for k := i; k < j; k++ {
				links[k].batchKey, links[k].offset = key, int64(len(data))
				data = append(data, links[k].body...)
			}
			out[key] = manifestBatch{data: data, until: archive.RetainUntil(links[i].issue, archive.RetentionYears)}
		}
		i = j
	}
	return out
}
