package invoicing_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
	"github.com/o2i-service/o2i/render"
)

// issueWithTheChainHeld issues n live documents of one number range (order
// numbers starting with prefix) and holds the range's chain lock in the
// transaction it returns: their chain transactions wait for its rollback.
func issueWithTheChainHeld(t *testing.T, v *invoicingEnv, n int, prefix string) ([]invoicing.Issued, string, pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	var docs []invoicing.Issued
	for i := range n {
		docs = append(docs, v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("%s%d", prefix, i)), "")))[0])
	}
	var rangeKey string
	if err := v.pool.QueryRow(ctx, `SELECT range_key FROM invoices WHERE id = $1`, docs[0].ID).Scan(&rangeKey); err != nil {
		t.Fatal(err)
	}
	lock, err := v.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('archive-chain:' || $1 || ':' || $2, 0))`, v.project, rangeKey); err != nil {
		_ = lock.Rollback(ctx)
		t.Fatal(err)
	}
	return docs, rangeKey, lock
}

// archiveInOneCycle issues n+1 live documents of one number range and
// archives them as the invoicer does (ArchiveIssued, their first attempt)
// so that one chain transaction takes the last n: while the range's
// advisory lock is held elsewhere, the first document's transaction waits
// for it, the other n arrive meanwhile and wait for the next one. The first
// is archived into a, the others into their; the errors of the others are
// returned (in number order) with the documents' ids.
func archiveInOneCycle(t *testing.T, v *invoicingEnv, a, their *archive.Archive, n int) ([]string, []error) {
	t.Helper()
	ctx := context.Background()
	docs, rangeKey, lock := issueWithTheChainHeld(t, v, n+1, "DB")
	defer lock.Rollback(ctx)
	firstDone := make(chan error, 1)
	go func() { firstDone <- v.svc.ArchiveIssued(ctx, a, v.project, docs[0]) }()
	// The first one's PDF written: its transaction has started, alone.
	testenv.Eventually(t, 30*time.Second, "the first document's PDF written", func() bool {
		_, err := a.Stat(ctx, archive.InvoicePDFKey(v.project, docs[0].ID))
		return err == nil
	})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = v.svc.ArchiveIssued(ctx, their, v.project, docs[i+1])
		}()
	}
	testenv.Eventually(t, 30*time.Second, "the others waiting for the next chain transaction", func() bool {
		return v.svc.PendingChain(v.project, rangeKey) == n
	})
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("the first document: %v", err)
	}
	wg.Wait()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, errs
}

// archiveAllInOneCycle is archiveInOneCycle into a, every document
// archived.
func archiveAllInOneCycle(t *testing.T, v *invoicingEnv, a *archive.Archive, n int) []string {
	t.Helper()
	ids, errs := archiveInOneCycle(t, v, a, a, n)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("document %d: %v", i+2, err)
		}
	}
	return ids
}

// exportedFiles is the tax-audit export of the project's year, file by
// file.
func exportedFiles(t *testing.T, q *query.Service, projectID string, year int) map[string][]byte {
	t.Helper()
	var zipped bytes.Buffer
	if err := q.ExportArchive(context.Background(), &zipped, projectID, year, nil); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped.Bytes()), int64(zipped.Len()))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = b
	}
	return files
}

// pdfAnchor is a document's PDF anchor and its document batch record.
type pdfAnchor struct {
	key, version, sha string
	offset, size      int64 // offset -1: the whole object
	batchKey          string
	batchOffset       int64 // -1: none recorded
	xmlKey, xmlIn     string
}

func (v *invoicingEnv) pdfAnchor(invoiceID string) pdfAnchor {
	v.t.Helper()
	var p pdfAnchor
	err := v.pool.QueryRow(context.Background(), `SELECT o.object_key, o.version_id, o.sha256, COALESCE(o.byte_offset, -1), o.size,
			COALESCE(b.batch_key, ''), COALESCE(b.byte_offset, -1), COALESCE(x.object_key, ''), COALESCE(x.embedded_in, '')
		FROM archive_objects o LEFT JOIN archive_document_batches b ON b.invoice_id = o.invoice_id
			LEFT JOIN archive_objects x ON x.invoice_id = o.invoice_id AND x.kind = 'xml'
		WHERE o.invoice_id = $1 AND o.kind = 'pdf'`, invoiceID).
		Scan(&p.key, &p.version, &p.sha, &p.offset, &p.size, &p.batchKey, &p.batchOffset, &p.xmlKey, &p.xmlIn)
	if errors.Is(err, pgx.ErrNoRows) {
		v.t.Fatalf("invoice %s: no PDF anchored", invoiceID)
	}
	if err != nil {
		v.t.Fatal(err)
	}
	return p
}

// batchOrder returns the invoices of a document batch in their recorded
// order, checking that the parts follow one another.
func batchOrder(t *testing.T, v *invoicingEnv, key string) []string {
	t.Helper()
	rows, err := v.pool.Query(context.Background(), `SELECT invoice_id::text, position, byte_offset, size FROM archive_document_batches
		WHERE batch_key = $1 ORDER BY position`, key)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var id string
	var pos, off, size, end int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &pos, &off, &size}, func() error {
		if pos != int64(len(ids)) || off != end {
			t.Errorf("%s: part %d recorded at position %d, offset %d; want %d at %d", key, len(ids), pos, off, len(ids), end)
		}
		ids, end = append(ids, id), off+size
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestPDFsChainedTogetherLieInOneDocumentBatch: the PDFs of the live
// documents one chain transaction takes at their first attempt lie in one
// object, one after another, recorded before it was written; each PDF's
// anchor and manifest entry name its bytes in it (offset, size, its own
// SHA-256), no such document has a PDF object of its own, and the API, the
// mailer, verify and the archive listing see each document's PDF and its
// embedded XML as before. A document its transaction takes alone keeps a
// PDF object of its own.
func TestPDFsChainedTogetherLieInOneDocumentBatch(t *testing.T) {
	t.Parallel()
	a := archive.New(testenv.S3(t), testenv.Env("O2I_S3_BUCKET"))
	v := newInvoicing(t, false, nil)
	const n = 3
	ids := archiveAllInOneCycle(t, v, a, n)
	ctx := context.Background()
	if p := v.pdfAnchor(ids[0]); p.key != archive.InvoicePDFKey(v.project, ids[0]) || p.offset != -1 || p.batchKey != "" {
		t.Errorf("the document chained alone: PDF anchored %+v, want an object of its own", p)
	}
	// The batch holds the PDFs in the order they came to the transaction.
	var first string
	if err := v.pool.QueryRow(ctx, `SELECT invoice_id::text FROM archive_document_batches WHERE invoice_id = ANY($1::uuid[]) AND position = 0`,
		ids[1:]).Scan(&first); err != nil {
		t.Fatalf("no document batch recorded for the %d: %v", n, err)
	}
	wantKey := archive.DocumentBatchKey(v.project, first, n)
	byPosition := batchOrder(t, v, wantKey)
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	// Another process's mailer: nothing of these documents in its memory.
	elsewhere := archive.New(testenv.S3(t), testenv.Env("O2I_S3_BUCKET"))
	var data []byte
	var version string
	for i, id := range byPosition {
		p := v.pdfAnchor(id)
		if version == "" {
			version = p.version
		}
		if p.key != wantKey || p.version != version || p.offset != int64(len(data)) || p.batchKey != wantKey || p.batchOffset != p.offset {
			t.Errorf("document %d: PDF anchored %+v, want its bytes at %d of %s version %q, recorded so", i+2, p, len(data), wantKey, version)
		}
		if p.xmlKey != wantKey || p.xmlIn != "pdf" {
			t.Errorf("document %d: XML anchored in %q (embedded in %q), want inside the PDF in %s", i+2, p.xmlKey, p.xmlIn, wantKey)
		}
		if _, err := a.Stat(ctx, archive.InvoicePDFKey(v.project, id)); !errors.Is(err, archive.ErrNotFound) {
			t.Errorf("document %d has a PDF object of its own too: %v", i+2, err)
		}
		inv := query.Invoice{ID: id, Status: "archived", Format: "zugferd"}
		pdf, err := q.Document(ctx, v.project, inv, "pdf")
		if err != nil || int64(len(pdf)) != p.size || archive.SHA256(pdf) != p.sha {
			t.Fatalf("document %d: GET pdf: %d bytes, %v; want the anchored %d bytes", i+2, len(pdf), err, p.size)
		}
		var recorded []byte
		if err := v.pool.QueryRow(ctx, `SELECT xml FROM invoices WHERE id = $1`, id).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if rendered, err := render.PDF(recorded); err != nil || !bytes.Equal(rendered, pdf) {
			t.Errorf("document %d: the archived PDF is not its XML's rendering (%v)", i+2, err)
		}
		xml, err := q.Document(ctx, v.project, inv, "xml")
		if err != nil || !bytes.Equal(xml, recorded) {
			t.Errorf("document %d: GET xml: %d bytes, %v; want the recorded XML byte for byte", i+2, len(xml), err)
		}
		mailed, err := v.svc.MailedPDF(ctx, elsewhere, v.project, id)
		if err != nil || !bytes.Equal(mailed, pdf) {
			t.Errorf("document %d: the mailer's PDF: %d bytes, %v; want the archived one", i+2, len(mailed), err)
		}
		var body []byte
		if err := v.pool.QueryRow(ctx, `SELECT body FROM archive_manifests WHERE invoice_id = $1`, id).Scan(&body); err != nil {
			t.Fatal(err)
		}
		m, err := archive.ParseManifest(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range m.Objects {
			if o.Kind == "pdf" && (o.Key != wantKey || o.Offset == nil || *o.Offset != p.offset || o.SHA256 != p.sha || m.Format != archive.ManifestFormatBatched) {
				t.Errorf("document %d: manifest (%s) lists the PDF as %+v, want its bytes at %d of %s", i+2, m.Format, o, p.offset, wantKey)
			}
		}
		data = append(data, pdf...)
	}
	got, st, err := a.GetVersion(ctx, wantKey, version)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the document batch: %d bytes, %v; want the %d PDFs one after another (%d bytes)", len(got), err, n, len(data))
	}
	if want := archive.RetainUntil(issueDay, archive.RetentionYears); !st.RetainUntil.Equal(want) {
		t.Errorf("the batch is retained until %s, want %s", st.RetainUntil, want)
	}
	// A retry finding the batch written takes the same anchor, retention included.
	for i, id := range byPosition {
		p := v.pdfAnchor(id)
		var until time.Time
		if err := v.pool.QueryRow(ctx, `SELECT retain_until FROM archive_objects WHERE invoice_id = $1 AND kind = 'pdf'`, id).Scan(&until); err != nil {
			t.Fatal(err)
		}
		got, err := v.svc.RetryDocumentBatch(ctx, a, v.project, id)
		if err != nil || got.Key != p.key || got.VersionID != p.version || !got.InBatch || got.Offset != p.offset || got.Size != p.size ||
			got.SHA256 != p.sha || !got.RetainUntil.Equal(until) {
			t.Errorf("document %d: a retry's anchor %+v, %v; want %+v retained until %s", i+2, got, err, p, until)
		}
	}
	if rep := verify(t, v, a); rep.Checked != 3*(n+1) || rep.OK != 3*(n+1) || len(rep.Problems) != 0 {
		t.Errorf("verify: %+v, want %d objects checked, all ok", rep, 3*(n+1))
	}
	entries, _, _, err := q.ArchiveEntries(ctx, v.project, issueDay.Year(), "", 100)
	if err != nil || len(entries) != n+1 {
		t.Fatalf("archive listing: %d entries, %v", len(entries), err)
	}
	for i, e := range entries[1:] {
		for _, o := range e.Objects {
			if o.Kind == "pdf" && (o.Key != wantKey || o.ByteOffset == nil || *o.ByteOffset != v.pdfAnchor(e.InvoiceID).offset) {
				t.Errorf("listing %d: PDF object %+v, want its bytes in %s", i+2, o, wantKey)
			}
		}
	}
	// The export's files are the documents byte for byte.
	files := exportedFiles(t, q, v.project, issueDay.Year())
	for _, e := range entries[1:] {
		base := "documents/" + strings.Map(func(r rune) rune { // the export's safe file names
			if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, e.Number)
		var pdf, xml []byte
		for name, b := range files {
			switch {
			case strings.HasPrefix(name, base) && strings.HasSuffix(name, ".pdf"):
				pdf = b
			case strings.HasPrefix(name, base) && strings.HasSuffix(name, ".xml"):
				xml = b
			}
		}
		var recorded []byte
		if err := v.pool.QueryRow(ctx, `SELECT xml FROM invoices WHERE id = $1`, e.InvoiceID).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		p := v.pdfAnchor(e.InvoiceID)
		if archive.SHA256(pdf) != p.sha || !bytes.Equal(xml, recorded) {
			t.Errorf("export of %s: PDF of %d bytes (SHA-256 %s, anchored %s), XML equal to the recorded one: %v", e.Number, len(pdf),
				archive.SHA256(pdf), p.sha, bytes.Equal(xml, recorded))
		}
	}
}

// TestDocumentBatchIsWrittenAgainFromTheDatabase: the write of a document
// batch fails after its parts were recorded (as if the process had stopped
// between the record and the write); each document's retry writes that
// batch again, the same bytes (each PDF rendered again from its XML), under
// the recorded key, and every document is archived and verifies.
func TestDocumentBatchIsWrittenAgainFromTheDatabase(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, false)
	v := newInvoicing(t, false, nil)
	const n = 3
	ids, errs := archiveInOneCycle(t, v, a, failingArchive(t), n)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("document %d archived into a missing bucket", i+2)
		}
	}
	ctx := context.Background()
	var key string
	if err := v.pool.QueryRow(ctx, `SELECT batch_key FROM archive_document_batches WHERE invoice_id = $1`, ids[1]).Scan(&key); err != nil {
		t.Fatalf("no document batch recorded: %v", err)
	}
	byPosition := batchOrder(t, v, key)
	if len(byPosition) != n || key != archive.DocumentBatchKey(v.project, byPosition[0], n) {
		t.Fatalf("%d parts recorded for %s, want %d under the first one's key", len(byPosition), key, n)
	}
	if _, err := a.Stat(ctx, key); !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("the batch is in the store before the retries: %v", err)
	}
	for i, id := range ids[1:] {
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, id); err != nil {
			t.Fatalf("retry of document %d: %v", i+2, err)
		}
	}
	var want []byte
	for _, id := range byPosition {
		var xml []byte
		if err := v.pool.QueryRow(ctx, `SELECT xml FROM invoices WHERE id = $1`, id).Scan(&xml); err != nil {
			t.Fatal(err)
		}
		pdf, err := render.PDF(xml)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, pdf...)
		if p := v.pdfAnchor(id); p.key != key || p.offset != p.batchOffset {
			t.Errorf("invoice %s: PDF anchored %+v, want its recorded part of %s", id, p, key)
		}
	}
	got, _, err := a.GetVersion(ctx, key, "")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the batch written again: %d bytes, %v; want the %d PDFs (%d bytes)", len(got), err, n, len(want))
	}
	if got := v.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, v.project); got != n+1 {
		t.Errorf("%d documents archived, want %d", got, n+1)
	}
	rep := verify(t, v, a)
	for _, p := range rep.Problems {
		if p.Problem.Kind != "retention" { // live documents in a bucket without lock: that alone
			t.Errorf("verify: %+v", p)
		}
	}
	if rep.Checked != 3*(n+1) {
		t.Errorf("verify checked %d objects, want %d", rep.Checked, 3*(n+1))
	}
}

// TestVerifyFindsAPDFAlteredInsideItsDocumentBatch: in a bucket without
// versioning and lock, one byte of the second PDF changed inside the
// document batch (same length) is found as that PDF altered, and no other
// document's; the batch cut short inside the second PDF leaves the second
// and third altered, not the first.
func TestVerifyFindsAPDFAlteredInsideItsDocumentBatch(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, false)
	v := newInvoicing(t, false, nil)
	const n = 3
	ids := archiveAllInOneCycle(t, v, a, n)
	ctx := context.Background()
	key := v.pdfAnchor(ids[1]).batchKey
	order := batchOrder(t, v, key)
	if len(order) != n {
		t.Fatalf("%d PDFs in the document batch, want %d", len(order), n)
	}
	data, _, err := a.GetVersion(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	second := v.pdfAnchor(order[1])
	altered := bytes.Clone(data)
	i := bytes.Index(altered[second.offset:second.offset+second.size], []byte("/Producer"))
	if i < 0 {
		t.Fatal("no /Producer in the second PDF")
	}
	altered[second.offset+int64(i)+1] = 'p'
	put(altered)
	rep := verify(t, v, a)
	for _, p := range rep.Problems {
		if p.Problem.Kind != "retention" && (p.InvoiceID != order[1] || p.Kind != "pdf") {
			t.Errorf("verify after one byte of PDF 2 changed: %+v, want PDF 2 altered and nothing else", p)
		}
	}
	if !has(rep, order[1], "pdf", "altered") {
		t.Errorf("verify after one byte of PDF 2 changed: %+v, want PDF 2 altered", rep.Problems)
	}

	put(data[:second.offset+5])
	rep = verify(t, v, a)
	if has(rep, order[0], "pdf", "altered") || !has(rep, order[1], "pdf", "altered") || !has(rep, order[2], "pdf", "altered") {
		t.Errorf("verify after the batch was cut inside PDF 2: %+v, want PDFs 2 and 3 altered, not 1", rep.Problems)
	}
}

// TestARetryBesideTheIssuingCallLeavesNoObjectOfNoDocument: the order's
// event delivered again while its issuing call is still at work archives
// the document as a retry (ArchiveInvoice) beside that call, as in a fault
// run. The retry claims the PDF as an object of its own before it writes
// it, so the issuing call does not write the document batch that would
// hold the PDF a second time: each of that batch's documents is written
// as an object of its own. Every document is archived, and every object
// under the project is named by a document's anchor.
func TestARetryBesideTheIssuingCallLeavesNoObjectOfNoDocument(t *testing.T) {
	t.Parallel()
	c := testenv.S3(t)
	bucket := testenv.Env("O2I_S3_BUCKET")
	a := archive.New(c, bucket)
	v := newInvoicing(t, false, nil)
	ctx := context.Background()
	docs, rangeKey, lock := issueWithTheChainHeld(t, v, 3, "RB")
	defer lock.Rollback(ctx)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = v.svc.ArchiveIssued(ctx, a, v.project, docs[0]) })
	testenv.Eventually(t, 30*time.Second, "the first document's PDF written", func() bool {
		_, err := a.Stat(ctx, archive.InvoicePDFKey(v.project, docs[0].ID))
		return err == nil
	})
	// The second and third wait for the next chain transaction, whose
	// document batch would hold both PDFs.
	for i := 1; i <= 2; i++ {
		wg.Go(func() { errs[i] = v.svc.ArchiveIssued(ctx, a, v.project, docs[i]) })
	}
	testenv.Eventually(t, 30*time.Second, "the issuing calls of the others waiting", func() bool {
		return v.svc.PendingChain(v.project, rangeKey) == 2
	})
	// Meanwhile a retry of the third writes its PDF as an object of its own.
	wg.Go(func() { errs[3] = v.svc.ArchiveInvoice(ctx, a, v.project, docs[2].ID) })
	testenv.Eventually(t, 30*time.Second, "the retry's PDF written and the retry waiting", func() bool {
		_, err := a.Stat(ctx, archive.InvoicePDFKey(v.project, docs[2].ID))
		return err == nil && v.svc.PendingChain(v.project, rangeKey) == 3
	})
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("archiving %d: %v", i, err)
		}
	}
	for _, d := range docs {
		var status string
		if err := v.pool.QueryRow(ctx, `SELECT status FROM invoices WHERE id = $1`, d.ID).Scan(&status); err != nil || status != "archived" {
			t.Errorf("%s: status %q (%v), want archived", d.Number, status, err)
		}
		if p := v.pdfAnchor(d.ID); p.key != archive.InvoicePDFKey(v.project, d.ID) || p.offset != -1 {
			t.Errorf("%s: PDF anchored %+v, want an object of its own", d.Number, p)
		}
	}
	rows, err := v.pool.Query(ctx, `SELECT DISTINCT object_key FROM archive_objects WHERE project_id = $1`, v.project)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	anchored := map[string]bool{}
	for _, k := range keys {
		anchored[k] = true
	}
	objects := 0
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: v.project + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		objects++
		if !anchored[obj.Key] {
			t.Errorf("object %s belongs to no document", obj.Key)
		}
	}
	if objects == 0 {
		t.Fatal("no object of the project listed")
	}
}
