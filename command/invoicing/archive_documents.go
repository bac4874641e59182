package invoicing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/store"
)

// Document batches: the PDFs of the live documents one chain transaction
// takes lie in one object, one after another, as their manifests do (a
// write to the object store costs about the same whatever its size). The
// chain's goroutine records each PDF's part (archive_document_batches)
// before it writes the object, so that a write that failed, or one a crash
// cut short, is done again with the same bytes by any document's retry
// (storeDocumentBatch): a PDF renders to the same bytes from the same XML,
// and no object is left in the archive that no document names. Test
// documents keep a PDF object of their own (a reset removes them one by
// one), as does a document its transaction takes alone.
//
// A retry of a live document can run beside its issuing call (the order's
// event delivered again while the call is still at work). It records its
// own object in archive_document_batches too (claimOwnPDF) before writing
// it, and that table holds one record a document: whichever attempt
// records first decides where the PDF lies. A retry that finds a document
// batch writes that batch; a document batch one of whose members a retry
// claimed is not written, and each of its members is written as an object
// of its own (claimed the same way). So two attempts never leave the PDF in
// two objects.

const (
	// maxDocumentBatch is the most PDFs one document batch holds.
	maxDocumentBatch = 32
	// maxDocumentBatchBytes bounds a document batch's size: a batch is
	// cut before the PDF that would pass it.
	maxDocumentBatchBytes = 8 << 20
)

// pendingPDF is a live document's PDF that the chain's goroutine writes
// (writePDFs), with what its anchors need.
type pendingPDF struct {
	data   []byte
	format string
	xml    []byte // the EN 16931 XML: embedded in a ZUGFeRD PDF, anchored inside it
	until  time.Time
	// put writes the PDF as an object of its own; putClaimed does too,
	// once it has claimed it (putOwnPDF); putBatch writes a document batch
	// (all bounded per project, as every store call).
	put, putClaimed func(ctx context.Context, data []byte) (archive.Stored, error)
	putBatch        func(ctx context.Context, key string, parts [][]byte, names []string, until time.Time) ([]archive.Stored, error)
}

// pdfItem is what documentBatches needs of a pending PDF.
type pdfItem struct {
	year int // the year of issue: the retention period
	size int
}

// documentBatches groups the pending PDFs of one chain transaction (in its
// order) into the objects they are written as: every group of at least two
// is a document batch (one year of issue, at most maxDocumentBatch PDFs and
// maxDocumentBatchBytes), a group of one is a PDF object of its own. Each
// group lists indexes of items, in order. Pure.
func documentBatches(items []pdfItem) [][]int {
	var out [][]int
	open := map[int]int{} // year → index in out of its group being filled
	bytes := map[int]int{}
	for i, it := range items {
		g, ok := open[it.year]
		if ok && (len(out[g]) == maxDocumentBatch || bytes[it.year]+it.size > maxDocumentBatchBytes) {
			ok = false
		}
		if !ok {
			out = append(out, nil)
			g, open[it.year], bytes[it.year] = len(out)-1, len(out)-1, 0
		}
		out[g] = append(out[g], i)
		bytes[it.year] += it.size
	}
	return out
}

// writePDFs writes the pending PDFs of batch (documentBatches) and anchors
// each in its request (anchorPDF); a request whose PDF could not be written
// gets the error and is not chained now (its retry writes it: a document
// batch from its recorded parts).
func writePDFs(ctx context.Context, pool *pgxpool.Pool, batch []*chainRequest) {
	var reqs []*chainRequest
	var items []pdfItem
	for _, r := range batch {
		if r.pdf != nil {
			reqs = append(reqs, r)
			items = append(items, pdfItem{year: r.issue.Year(), size: len(r.pdf.data)})
		}
	}
	for _, g := range documentBatches(items) {
		if len(g) == 1 {
			r := reqs[g[0]]
			r.writeAlone(ctx, r.pdf.put)
			continue
		}
		members := make([]*chainRequest, len(g))
		parts, names := make([][]byte, len(g)), make([]string, len(g))
		for i, k := range g {
			r := reqs[k]
			members[i], parts[i], names[i] = r, r.pdf.data, archive.InvoicePDFKey(r.m.ProjectID, r.m.InvoiceID)
		}
		first := members[0]
		key := archive.DocumentBatchKey(first.m.ProjectID, first.m.InvoiceID, len(members))
		err := recordDocumentBatch(ctx, pool, key, members)
		if store.IsUniqueViolation(err, "") {
			// A member's PDF is recorded elsewhere already (a retry beside
			// this attempt claimed it): no batch, each as a retry would.
			for _, r := range members {
				r.writeAlone(ctx, r.pdf.putClaimed)
			}
			continue
		}
		var sts []archive.Stored
		if err == nil {
			sts, err = first.pdf.putBatch(ctx, key, parts, names, first.pdf.until)
		}
		for i, r := range members {
			if err != nil {
				r.err = err
				continue
			}
			r.anchorPDF(sts[i])
		}
	}
}

// writeAlone writes r's PDF as an object of its own with put and anchors
// it; a failure is r's error.
func (r *chainRequest) writeAlone(ctx context.Context, put func(context.Context, []byte) (archive.Stored, error)) {
	st, err := put(ctx, r.pdf.data)
	if err != nil {
		r.err = err
		return
	}
	r.anchorPDF(st)
}

// anchorPDF completes r's anchors and manifest objects with its PDF as
// written.
func (r *chainRequest) anchorPDF(st archive.Stored) {
	r.objs, r.m.Objects = documentObjects(r.pdf.format, r.pdf.xml, st, r.objs["xml"])
	r.pdf = nil
}

// documentObjects are a document's anchors by kind and its manifest's
// objects (xml before pdf) once its PDF is stored as pdfSt: a small-amount
// invoice is its PDF alone; a ZUGFeRD XML lies inside the PDF/A-3 (the
// anchor names the PDF's object with the XML's hash); any other XML is the
// object xmlSt.
func documentObjects(format string, xml []byte, pdfSt, xmlSt archive.Stored) (map[string]archive.Stored, []archive.ManifestObject) {
	objs := map[string]archive.Stored{"pdf": pdfSt}
	var out []archive.ManifestObject
	switch {
	case format == string(billing.FormatSmallAmount):
	case xmlEmbeddedOnly(format):
		xmlSt = archive.Embedded(pdfSt, xml)
		objs["xml"] = xmlSt
		out = append(out, archive.EmbeddedObject(xmlSt))
	default:
		objs["xml"] = xmlSt
		out = append(out, archive.Object("xml", xmlSt))
	}
	return objs, append(out, archive.Object("pdf", pdfSt))
}

// recordDocumentBatch records the parts of a document batch before it is
// written: each member's PDF, in order. A member recorded already (in
// another batch, or claimed by a retry) fails the whole insert with a
// unique violation, and nothing of the batch is recorded.
func recordDocumentBatch(ctx context.Context, pool *pgxpool.Pool, key string, members []*chainRequest) error {
	ids, positions := make([]string, len(members)), make([]int32, len(members))
	offsets, sizes, sums := make([]int64, len(members)), make([]int64, len(members)), make([]string, len(members))
	var off int64
	for i, r := range members {
		ids[i], positions[i], offsets[i], sizes[i], sums[i] = r.m.InvoiceID, int32(i), off, int64(len(r.pdf.data)), archive.SHA256(r.pdf.data)
		off += sizes[i]
	}
	_, err := pool.Exec(ctx, `INSERT INTO archive_document_batches (invoice_id, batch_key, position, byte_offset, size, sha256)
		SELECT id, $2, pos, off, size, sha FROM unnest($1::uuid[], $3::int[], $4::bigint[], $5::bigint[], $6::text[]) AS p (id, pos, off, size, sha)`,
		ids, key, positions, offsets, sizes, sums)
	return err
}

// documentPart is a document's PDF as recorded in a document batch.
type documentPart struct {
	batchKey string
	offset   int64
	size     int64
	sha256   string
}

// anchor is the part's anchor in the batch object st.
func (p documentPart) anchor(st archive.Stored) archive.Stored {
	return st.Part(p.sha256, p.size, p.offset)
}

// storeDocumentBatch returns the anchor of a document's PDF recorded as
// part of a document batch: in the batch object as it was written, or else
// in the object written now from the batch's recorded documents, each PDF
// rendered again from its XML and checked against its recorded hash.
func (s *Service) storeDocumentBatch(ctx context.Context, arc *archive.Archive, projectID string, part documentPart, until time.Time) (archive.Stored, error) {
	var st archive.Stored
	found := false
	err := s.objectStore(ctx, projectID, func(ctx context.Context) error {
		got, err := arc.Stat(ctx, part.batchKey)
		if errors.Is(err, archive.ErrNotFound) {
			return nil
		}
		st, found = got, err == nil
		return err
	})
	if err != nil || found {
		return part.anchor(st), err
	}
	members, err := s.documentBatchMembers(ctx, part.batchKey)
	if err != nil {
		return archive.Stored{}, err
	}
	parts, names := make([][]byte, len(members)), make([]string, len(members))
	var off int64
	for i, m := range members {
		if m.position != i || m.part.offset != off {
			return archive.Stored{}, fmt.Errorf("document batch %s: part %d is recorded at position %d, offset %d", part.batchKey, i, m.position, m.part.offset)
		}
		pdf, err := documentPDF(m.format, m.xml, nil)
		if err != nil {
			return archive.Stored{}, fmt.Errorf("document batch %s: render invoice %s: %w", part.batchKey, m.invoiceID, err)
		}
		if archive.SHA256(pdf) != m.part.sha256 || int64(len(pdf)) != m.part.size {
			return archive.Stored{}, fmt.Errorf("document batch %s: invoice %s renders to other bytes than recorded", part.batchKey, m.invoiceID)
		}
		parts[i], names[i] = pdf, archive.InvoicePDFKey(projectID, m.invoiceID)
		off += m.part.size
	}
	sts, err := s.putDocumentBatch(ctx, arc, projectID, part.batchKey, parts, names, until)
	if err != nil {
		return archive.Stored{}, err
	}
	for i, m := range members {
		if m.part.offset == part.offset {
			return sts[i], nil
		}
	}
	return archive.Stored{}, fmt.Errorf("document batch %s: no part at offset %d", part.batchKey, part.offset)
}

// putPDF writes a document's PDF as an object of its own (bounded per
// project, as every store call). A PDF rendered again from the same XML
// finds the one archived first, which stands.
func (s *Service) putPDF(ctx context.Context, arc *archive.Archive, projectID, invoiceID string, pdf []byte, until time.Time) (st archive.Stored, err error) {
	err = s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
		st, _, err = arc.PutFirst(ctx, archive.InvoicePDFKey(projectID, invoiceID), pdf, "application/pdf", until)
		return err
	})
	return st, err
}

// claimOwnPDF records that a live document's PDF lies in an object of its
// own, unless a record of the document stands already (one record a
// document, archive_document_batches' key), and returns the record that
// stands: this one, or a document batch recorded before. One round trip:
// the read after the insert sees a record that a concurrent insert made
// (the insert waits for it).
func claimOwnPDF(ctx context.Context, pool *pgxpool.Pool, projectID, invoiceID string, pdf []byte) (documentPart, error) {
	var b pgx.Batch
	b.Queue(`INSERT INTO archive_document_batches (invoice_id, batch_key, position, byte_offset, size, sha256)
		VALUES ($1, $2, 0, 0, $3, $4) ON CONFLICT DO NOTHING`, invoiceID, archive.InvoicePDFKey(projectID, invoiceID), int64(len(pdf)), archive.SHA256(pdf))
	var p documentPart
	b.Queue(`SELECT batch_key, byte_offset, size, sha256 FROM archive_document_batches WHERE invoice_id = $1`, invoiceID).
		QueryRow(func(r pgx.Row) error { return r.Scan(&p.batchKey, &p.offset, &p.size, &p.sha256) })
	conn, err := store.Acquire(ctx, pool)
	if err != nil {
		return documentPart{}, err
	}
	defer conn.Release()
	return p, conn.SendBatch(ctx, &b).Close()
}

// ownsObject reports whether p records a PDF in an object of its own (not
// a document batch).
func (p documentPart) ownsObject(projectID, invoiceID string) bool {
	return p.batchKey == archive.InvoicePDFKey(projectID, invoiceID)
}

// putOwnPDF writes a live document's PDF as an object of its own once it
// has claimed it (claimOwnPDF); when a document batch was recorded for it
// first, it writes that batch (storeDocumentBatch) and returns the PDF's
// anchor in it.
func (s *Service) putOwnPDF(ctx context.Context, arc *archive.Archive, projectID, invoiceID string, pdf []byte, until time.Time) (archive.Stored, error) {
	part, err := claimOwnPDF(ctx, s.pool, projectID, invoiceID, pdf)
	if err != nil {
		return archive.Stored{}, err
	}
	if !part.ownsObject(projectID, invoiceID) {
		return s.storeDocumentBatch(ctx, arc, projectID, part, until)
	}
	return s.putPDF(ctx, arc, projectID, invoiceID, pdf, until)
}

// putDocumentBatch writes the document batch key of parts (bounded per
// project) and returns each part's anchor.
func (s *Service) putDocumentBatch(ctx context.Context, arc *archive.Archive, projectID, key string, parts [][]byte, names []string,
	until time.Time) (sts []archive.Stored, err error) {
	err = s.objectStore(ctx, projectID, func(ctx context.Context) (err error) {
		sts, err = arc.PutBatch(ctx, key, parts, names, archive.DocumentBatchContentType, until)
		return err
	})
	return sts, err
}

// batchMember is a document of a document batch as recorded.
type batchMember struct {
	invoiceID string
	position  int
	part      documentPart
	format    string
	xml       []byte
}

// documentBatchMembers reads a document batch's recorded documents with
// their XML, in order.
func (s *Service) documentBatchMembers(ctx context.Context, key string) ([]batchMember, error) {
	rows, err := store.Query(ctx, s.pool, `SELECT b.invoice_id::text, b.position, b.byte_offset, b.size, b.sha256, i.format, i.xml
		FROM archive_document_batches b JOIN invoices i ON i.id = b.invoice_id WHERE b.batch_key = $1 ORDER BY b.position`, key)
	if err != nil {
		return nil, err
	}
	var out []batchMember
	var m batchMember
	_, err = pgx.ForEachRow(rows, []any{&m.invoiceID, &m.position, &m.part.offset, &m.part.size, &m.part.sha256, &m.format, &m.xml}, func() error {
		m.part.batchKey = key
		out = append(out, m)
		m.xml = nil // a new buffer for the next row
		return nil
	})
	return out, err
}
