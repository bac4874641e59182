package invoicing_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/query"
	"github.com/o2i-service/o2i/render"
)

// issuedXML is the XML the invoice was issued with.
func issuedXML(t *testing.T, v *invoicingEnv, id string) []byte {
	t.Helper()
	var xml []byte
	if err := v.pool.QueryRow(context.Background(), `SELECT xml FROM invoices WHERE id = $1`, id).Scan(&xml); err != nil {
		t.Fatal(err)
	}
	return xml
}

// onlyRetention reports whether every problem of rep is the missing
// retention of live documents in a bucket without lock (what the export
// tests, of live documents, archive into).
func onlyRetention(rep query.VerifyReport) bool {
	for _, p := range rep.Problems {
		if p.Problem.Kind != "retention" {
			return false
		}
	}
	return true
}

// liveDocs issues and archives ZUGFeRD invoices of a live project (the
// export's documents) into a, one per order number.
func liveDocs(t *testing.T, a *archive.Archive, numbers ...string) (*invoicingEnv, []invoicing.Issued) {
	t.Helper()
	v := newInvoicing(t, false, nil)
	var docs []invoicing.Issued
	for _, no := range numbers {
		d := v.issue(v.place(simpleOrder(no, "")))[0]
		if err := v.svc.ArchiveInvoice(context.Background(), a, v.project, d.ID); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	return v, docs
}

// documentOf reads an archived invoice's document as GET .../pdf and .../xml serve it.
func documentOf(v *invoicingEnv, a *archive.Archive, id, number, format, kind string) ([]byte, error) {
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	return q.Document(context.Background(), v.project, query.Invoice{ID: id, Number: number, Status: "archived", Format: format}, kind)
}

// TestZUGFeRDXMLLivesOnlyInsideItsPDF: a ZUGFeRD invoice is archived as its
// PDF/A-3 and its manifest, no XML object; the manifest and the anchor
// record the embedded XML's hash inside the PDF's version. GET .../xml and
// the export serve the embedded file, byte-identical to the issued XML, and
// verify finds nothing wrong. An XRechnung keeps its XML object beside.
func TestZUGFeRDXMLLivesOnlyInsideItsPDF(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, false, nil)
	ctx := context.Background()
	zugferd := v.issue(v.place(simpleOrder("EM-Z", "")))[0]
	xr := v.issue(v.place(simpleOrder("EM-X", xrechnung)))[0]
	for _, d := range []struct {
		id, number, format string
		embedded           bool
	}{{zugferd.ID, zugferd.Number, "zugferd", true}, {xr.ID, xr.Number, "xrechnung", false}} {
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, d.id); err != nil {
			t.Fatal(err)
		}
		want := issuedXML(t, v, d.id)
		got, err := documentOf(v, a, d.id, d.number, d.format, "xml")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: GET xml: %d bytes (want the issued %d): %v", d.format, len(got), len(want), err)
		}
		_, err = a.Stat(ctx, archive.InvoiceXMLKey(v.project, d.id))
		if d.embedded != errors.Is(err, archive.ErrNotFound) {
			t.Errorf("%s: XML object: %v (embedded %v)", d.format, err, d.embedded)
		}
		var body []byte
		if err := v.pool.QueryRow(ctx, `SELECT body FROM archive_manifests WHERE invoice_id = $1`, d.id).Scan(&body); err != nil {
			t.Fatal(err)
		}
		m, err := archive.ParseManifest(body)
		if err != nil || len(m.Objects) != 2 {
			t.Fatalf("%s: manifest %s: %v", d.format, body, err)
		}
		x, pdf := m.Objects[0], m.Objects[1]
		if x.Kind != "xml" || x.SHA256 != archive.SHA256(want) || x.Size != int64(len(want)) {
			t.Errorf("%s: manifest's XML entry %+v, want the issued XML's hash", d.format, x)
		}
		if d.embedded && (x.EmbeddedIn != "pdf" || x.Key != pdf.Key || x.VersionID != pdf.VersionID || m.Format != archive.ManifestFormatEmbedded) {
			t.Errorf("zugferd: manifest %s, want the XML inside the PDF's version", body)
		}
		if !d.embedded && (x.EmbeddedIn != "" || x.Key != archive.InvoiceXMLKey(v.project, d.id) || m.Format != archive.ManifestFormat) {
			t.Errorf("xrechnung: manifest %s, want an XML object of its own", body)
		}
	}
	// Live documents in a bucket without lock: retention is all verify misses.
	if rep := verify(t, v, a); rep.Checked != 6 || !onlyRetention(rep) {
		t.Errorf("verify: %+v", rep)
	}

	// The export: the same layout, the XML files byte-identical to the issued ones.
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	files := exportedFiles(t, q, v.project, 2026)
	for _, d := range []struct{ id, number string }{{zugferd.ID, zugferd.Number}, {xr.ID, xr.Number}} {
		base := d.number
		if !bytes.Equal(files["documents/"+base+".xml"], issuedXML(t, v, d.id)) {
			t.Errorf("export: documents/%s.xml differs from the issued XML", base)
		}
		if !bytes.HasPrefix(files["documents/"+base+".pdf"], []byte("%PDF-")) || files["manifests/"+base+".json"] == nil {
			t.Errorf("export: no PDF or manifest of %s", base)
		}
		if !strings.Contains(string(files[query.ExportIndexCSV]), "documents/"+base+".xml;"+archive.SHA256(issuedXML(t, v, d.id))) {
			t.Errorf("export: index.csv lacks the XML of %s with its hash", base)
		}
	}
}

// TestEmbeddedXMLThatDiffersIsNeverServed: a PDF put over the archived one
// (a bucket without versioning and lock) that embeds another XML: verify
// names the PDF and the XML altered, GET .../xml and the export refuse it.
func TestEmbeddedXMLThatDiffersIsNeverServed(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, false)
	v, docs := liveDocs(t, a, "DI-1", "DI-2")
	ctx := context.Background()
	other, err := render.PDF(issuedXML(t, v, docs[1].ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, bucket, archive.InvoicePDFKey(v.project, docs[0].ID), bytes.NewReader(other), int64(len(other)),
		minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, v, a)
	if !has(rep, docs[0].ID, "pdf", "altered") || !has(rep, docs[0].ID, "xml", "altered") || rep.Checked != 6 ||
		has(rep, docs[1].ID, "pdf", "altered") || has(rep, docs[1].ID, "xml", "altered") {
		t.Errorf("verify: %+v, want the PDF and the XML of %s altered", rep, docs[0].Number)
	}
	if _, err := documentOf(v, a, docs[0].ID, docs[0].Number, "zugferd", "xml"); !errors.Is(err, archive.ErrCorrupt) {
		t.Errorf("GET xml of the altered PDF: %v, want ErrCorrupt", err)
	}
	if got, err := documentOf(v, a, docs[1].ID, docs[1].Number, "zugferd", "xml"); err != nil || !bytes.Equal(got, issuedXML(t, v, docs[1].ID)) {
		t.Errorf("GET xml of the intact invoice: %v", err)
	}
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	if err := q.ExportArchive(ctx, io.Discard, v.project, 2026, nil); !errors.Is(err, archive.ErrCorrupt) {
		t.Errorf("export: %v, want ErrCorrupt", err)
	}
}

// TestCrashBetweenThePDFPutAndTheChain: an attempt stopped after it wrote
// the PDF (another rendering of the same XML): the retry archives with
// that PDF standing, anchors the XML inside that version, and the document
// verifies with its XML served from the first rendering.
func TestCrashBetweenThePDFPutAndTheChain(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	ctx := context.Background()
	d := v.issue(v.place(simpleOrder("CR-1", "")))[0]
	xml := issuedXML(t, v, d.ID)
	first, err := render.PDF(xml)
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Put(ctx, archive.InvoicePDFKey(v.project, d.ID), first, "application/pdf", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveIssued(ctx, a, v.project, d); err != nil {
		t.Fatal(err)
	}
	var version, status string
	if err := v.pool.QueryRow(ctx, `SELECT o.version_id, i.status FROM archive_objects o JOIN invoices i ON i.id = o.invoice_id
		WHERE o.invoice_id = $1 AND o.kind = 'xml' AND o.embedded_in = 'pdf'`, d.ID).Scan(&version, &status); err != nil {
		t.Fatal(err)
	}
	if version != st.VersionID || status != "archived" {
		t.Errorf("XML anchored inside version %q (want the first PDF's %q), status %s", version, st.VersionID, status)
	}
	pdf, err := documentOf(v, a, d.ID, d.Number, string(billing.FormatZUGFeRD), "pdf")
	if err != nil || !bytes.Equal(pdf, first) {
		t.Errorf("GET pdf: not the first rendering: %v", err)
	}
	if got, err := documentOf(v, a, d.ID, d.Number, "zugferd", "xml"); err != nil || !bytes.Equal(got, xml) {
		t.Errorf("GET xml: %v", err)
	}
	if rep := verify(t, v, a); rep.Checked != 3 || rep.OK != 3 {
		t.Errorf("verify: %+v", rep)
	}
}
