package invoicing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
)

// unlockedArchive is an archive over a fresh bucket without object lock
// (versioned or not), so that a test can do to its objects what retention
// forbids.
func unlockedArchive(t *testing.T, versioned bool) (*archive.Archive, *minio.Client, string) {
	t.Helper()
	c := testenv.S3(t)
	bucket := "test-chain-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	ctx := context.Background()
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if versioned {
		if err := c.EnableVersioning(ctx, bucket); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // no lock: the bucket and every version go
		for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true, WithVersions: true}) {
			_ = c.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{VersionID: o.VersionID})
		}
		_ = c.RemoveBucket(ctx, bucket)
	})
	return archive.NewTest(c, bucket), c, bucket
}

// xrechnung makes simpleOrder's buyer a public one: an XRechnung, whose
// XML is an object of its own.
const xrechnung = `,"leitweg_id":"04011000-1234512345-06"`

// archivedDocs issues and archives n ZUGFeRD invoices of a test-mode project
// into a (test documents: a bucket without lock is where they belong).
func archivedDocs(t *testing.T, a *archive.Archive, n int) (*invoicingEnv, []invoicing.Issued) {
	t.Helper()
	return archivedDocsWith(t, a, n, "")
}

// archivedDocsWith is archivedDocs of orders with extra in their billing
// address (xrechnung).
func archivedDocsWith(t *testing.T, a *archive.Archive, n int, extra string) (*invoicingEnv, []invoicing.Issued) {
	t.Helper()
	v := newInvoicing(t, true, nil)
	var docs []invoicing.Issued
	for i := range n {
		d := v.issue(v.place(simpleOrder("CH-"+string(rune('A'+i)), extra)))[0]
		if err := v.svc.ArchiveInvoice(context.Background(), a, v.project, d.ID); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	return v, docs
}

func verify(t *testing.T, v *invoicingEnv, a *archive.Archive) query.VerifyReport {
	t.Helper()
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	rep, err := q.VerifyArchive(context.Background(), v.project, 2026, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// has reports whether rep names the problem for the invoice's object kind.
func has(rep query.VerifyReport, invoiceID, kind, problem string) bool {
	return slices.ContainsFunc(rep.Problems, func(p query.VerifyProblem) bool {
		return p.InvoiceID == invoiceID && p.Kind == kind && p.Problem.Kind == problem
	})
}

// TestArchivingAnchorsObjectsAndChainsManifests: each archived invoice has
// its XML, PDF and manifest recorded with SHA-256, size and version id
// (of the bytes actually stored), and the manifests of a number range chain
// 1, 2, 3 with each naming the SHA-256 of the one before.
func TestArchivingAnchorsObjectsAndChainsManifests(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v, docs := archivedDocs(t, a, 3)
	ctx := context.Background()
	prev := ""
	for i, d := range docs {
		var chainSeq int64
		var sum, prevSum string
		var body []byte
		if err := v.pool.QueryRow(ctx, `SELECT chain_seq, sha256, COALESCE(prev_sha256, ''), body FROM archive_manifests
			WHERE invoice_id = $1 AND stored_at IS NOT NULL`, d.ID).Scan(&chainSeq, &sum, &prevSum, &body); err != nil {
			t.Fatalf("%s: manifest: %v", d.Number, err)
		}
		if chainSeq != int64(i+1) || prevSum != prev || archive.SHA256(body) != sum {
			t.Errorf("%s: chain position %d, previous %q (want %d, %q)", d.Number, chainSeq, prevSum, i+1, prev)
		}
		prev = sum
		m, err := archive.ParseManifest(body)
		if err != nil || m.Number != d.Number || len(m.Objects) != 2 || m.PreviousManifestSHA256 != prevSum {
			t.Fatalf("%s: manifest %+v %v", d.Number, m, err)
		}
		for _, kind := range []string{"xml", "pdf", "manifest"} {
			var key, version, sha, embeddedIn string
			var size int64
			if err := v.pool.QueryRow(ctx, `SELECT object_key, version_id, sha256, size, COALESCE(embedded_in, '') FROM archive_objects
				WHERE invoice_id = $1 AND kind = $2`, d.ID, kind).Scan(&key, &version, &sha, &size, &embeddedIn); err != nil {
				t.Fatalf("%s %s: %v", d.Number, kind, err)
			}
			data, got, err := a.GetVersion(ctx, key, version)
			if kind == "xml" {
				// A ZUGFeRD XML lies only inside the PDF: the anchor names the
				// PDF's version with the embedded file's hash.
				if embeddedIn != "pdf" || key != archive.InvoicePDFKey(v.project, d.ID) {
					t.Errorf("%s xml: anchored at %s, embedded in %q; want inside the PDF", d.Number, key, embeddedIn)
				}
				if err == nil {
					data, err = archive.EmbeddedXML(data)
					got.SHA256 = archive.SHA256(data)
				}
			}
			if err != nil || version == "" || got.SHA256 != sha || int64(len(data)) != size {
				t.Errorf("%s %s: version %q: %s/%d recorded, %s/%d stored (%v)", d.Number, kind, version, sha, size, got.SHA256, len(data), err)
			}
		}
		if _, err := a.Stat(ctx, archive.InvoiceXMLKey(v.project, d.ID)); !errors.Is(err, archive.ErrNotFound) {
			t.Errorf("%s: an XML object besides the PDF: %v", d.Number, err)
		}
	}
	if rep := verify(t, v, a); rep.Checked != 9 || rep.OK != 9 || len(rep.Problems) != 0 {
		t.Errorf("verify of an intact archive: %+v", rep)
	}
}

// TestVerifyDetectsRemovedReplacedAndChainGaps: in a versioned bucket
// without lock, a removed version, a version put over the recorded one,
// a removed manifest and a manifest missing from the chain are each named.
func TestVerifyDetectsRemovedReplacedAndChainGaps(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, true)
	v, docs := archivedDocsWith(t, a, 4, xrechnung)
	ctx := context.Background()
	version := func(id, kind string) (key, ver string) {
		if err := v.pool.QueryRow(ctx, `SELECT object_key, version_id FROM archive_objects WHERE invoice_id = $1 AND kind = $2`, id, kind).Scan(&key, &ver); err != nil {
			t.Fatal(err)
		}
		return key, ver
	}
	// Removed: the PDF's recorded version of the first invoice.
	key, ver := version(docs[0].ID, "pdf")
	if err := c.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{VersionID: ver}); err != nil {
		t.Fatal(err)
	}
	// Replaced: other bytes put over the second invoice's XML (a new version).
	key, _ = version(docs[1].ID, "xml")
	other := []byte("<replaced/>")
	if _, err := c.PutObject(ctx, bucket, key, bytes.NewReader(other), int64(len(other)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// Removed from the chain: the third invoice's manifest record.
	if _, err := v.pool.Exec(ctx, `DELETE FROM archive_objects WHERE invoice_id = $1 AND kind = 'manifest'`, docs[2].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := v.pool.Exec(ctx, `DELETE FROM archive_manifests WHERE invoice_id = $1`, docs[2].ID); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, v, a)
	for _, want := range []struct{ id, kind, problem string }{
		{docs[0].ID, "pdf", "missing"},
		{docs[1].ID, "xml", "replaced"},
		{docs[2].ID, "manifest", "unanchored"},
		{docs[3].ID, "chain", "chain"}, // position 3 is gone: a gap before the fourth
	} {
		if !has(rep, want.id, want.kind, want.problem) {
			t.Errorf("no %s problem for the %s of %s in %+v", want.problem, want.kind, want.id, rep.Problems)
		}
	}
	// The untouched objects are fine: 3 invoices x 3 objects checked, 2 bad.
	if rep.Checked != 9 || rep.OK != 7 {
		t.Errorf("checked %d ok %d, want 9 and 7", rep.Checked, rep.OK)
	}
}

// TestVerifyDetectsAlteredObjectsAndForgedManifests: in a bucket without
// versioning and lock, bytes changed under a key and a manifest rewritten
// to name another predecessor are both found: the record in PostgreSQL, not
// the object's metadata, is what they are compared with.
func TestVerifyDetectsAlteredObjectsAndForgedManifests(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, false)
	v, docs := archivedDocsWith(t, a, 3, xrechnung)
	ctx := context.Background()
	// Altered: the first invoice's XML rewritten, with metadata claiming the
	// new bytes' SHA-256.
	altered := []byte("<rsm:CrossIndustryInvoice>altered</rsm:CrossIndustryInvoice>")
	key := archive.InvoiceXMLKey(v.project, docs[0].ID)
	if _, err := c.PutObject(ctx, bucket, key, bytes.NewReader(altered), int64(len(altered)),
		minio.PutObjectOptions{UserMetadata: map[string]string{"Sha256": archive.SHA256(altered)}}); err != nil {
		t.Fatal(err)
	}
	// Forged: the third manifest rewritten to name another predecessor.
	mkey := archive.ManifestKey(v.project, docs[2].ID)
	body, _, err := a.GetVersion(ctx, mkey, "")
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m.PreviousManifestSHA256 = strings.Repeat("0", 64)
	forged, _, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, bucket, mkey, bytes.NewReader(forged), int64(len(forged)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, v, a)
	if !has(rep, docs[0].ID, "xml", "altered") || !has(rep, docs[2].ID, "manifest", "altered") || !has(rep, docs[2].ID, "chain", "chain") {
		t.Errorf("problems %+v, want the altered XML of %s and the forged manifest of %s", rep.Problems, docs[0].Number, docs[2].Number)
	}
	if has(rep, docs[1].ID, "xml", "altered") || rep.Checked != 9 || rep.OK != 7 {
		t.Errorf("checked %d ok %d (want 9, 7), problems %+v", rep.Checked, rep.OK, rep.Problems)
	}
	// Reading by the record refuses the altered document instead of serving it.
	var want archive.Stored
	if err := v.pool.QueryRow(ctx, `SELECT object_key, version_id, sha256, size FROM archive_objects WHERE invoice_id = $1 AND kind = 'xml'`,
		docs[0].ID).Scan(&want.Key, &want.VersionID, &want.SHA256, &want.Size); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verified(ctx, want); !errors.Is(err, archive.ErrCorrupt) {
		t.Errorf("reading the altered XML by its record: %v, want ErrCorrupt", err)
	}
}

// TestVerifyFlagsLiveDocumentsWithoutRetention: a live document in a bucket
// without lock is a problem, though its bytes are intact.
func TestVerifyFlagsLiveDocumentsWithoutRetention(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, false, nil)
	d := v.issue(v.place(simpleOrder("LV-1", "")))[0]
	if err := v.svc.ArchiveInvoice(context.Background(), a, v.project, d.ID); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, v, a); !has(rep, d.ID, "xml", "retention") || rep.OK != 0 {
		t.Errorf("live document without retention: %+v", rep)
	}
}

// TestBackfillAnchorsDocumentsArchivedBeforeTheAnchor: an invoice archived
// by an earlier version (XML only, in the locked bucket, no record) gets its
// PDF rendered from the archived XML with the XML's retention, its objects
// recorded and its manifest chained; verify then finds nothing wrong.
func TestBackfillAnchorsDocumentsArchivedBeforeTheAnchor(t *testing.T) {
	t.Parallel()
	c := testenv.S3(t)
	a := archive.New(c, "test-backfill-"+strings.ReplaceAll(uuid.NewString(), "-", "")[:12])
	ctx := context.Background()
	if err := a.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	v := newInvoicing(t, false, nil)
	d := v.issue(v.place(simpleOrder("BF-1", "")))[0]
	var xml []byte
	if err := v.pool.QueryRow(ctx, `SELECT xml FROM invoices WHERE id = $1`, d.ID).Scan(&xml); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	if _, err := a.Put(ctx, archive.InvoiceXMLKey(v.project, d.ID), xml, "application/xml", until); err != nil {
		t.Fatal(err)
	}
	if _, err := v.pool.Exec(ctx, `UPDATE invoices SET status = 'archived', archived_at = now() WHERE id = $1`, d.ID); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, v, a); !has(rep, d.ID, "manifest", "unanchored") {
		t.Errorf("verify before the backfill: %+v", rep)
	}
	res, err := v.svc.BackfillArchive(ctx, a, v.project, nil)
	if err != nil || res.Anchored != 1 || res.PDFRendered != 1 {
		t.Fatalf("backfill: %+v %v", res, err)
	}
	pdf, st, err := a.Get(ctx, archive.InvoicePDFKey(v.project, d.ID))
	if err != nil || !bytes.HasPrefix(pdf, []byte("%PDF-")) || !st.RetainUntil.Equal(until) {
		t.Errorf("rendered PDF: retained until %v (want %v): %v", st.RetainUntil, until, err)
	}
	if rep := verify(t, v, a); rep.Checked != 3 || rep.OK != 3 || len(rep.Problems) != 0 {
		t.Errorf("verify after the backfill: %+v", rep)
	}
	if res, err := v.svc.BackfillArchive(ctx, a, v.project, nil); err != nil || res.Anchored != 0 {
		t.Errorf("second backfill: %+v %v", res, err)
	}
}

// TestExportStopsAtAnObjectThatDoesNotMatchItsRecord: the export reads each
// object by its recorded version and refuses one whose bytes differ from
// the record, instead of handing it over.
func TestExportStopsAtAnObjectThatDoesNotMatchItsRecord(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, false)
	v := newInvoicing(t, false, nil)
	ctx := context.Background()
	var docs []invoicing.Issued
	for _, no := range []string{"EX-1", "EX-2"} {
		d := v.issue(v.place(simpleOrder(no, "")))[0]
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, d.ID); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	var zip bytes.Buffer
	if err := q.ExportArchive(ctx, &zip, v.project, 2026, nil); err != nil || zip.Len() == 0 {
		t.Fatalf("export of an intact archive: %v", err)
	}
	changed := []byte("%PDF-1.7 changed")
	if _, err := c.PutObject(ctx, bucket, archive.InvoicePDFKey(v.project, docs[1].ID), bytes.NewReader(changed), int64(len(changed)),
		minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := q.ExportArchive(ctx, io.Discard, v.project, 2026, nil); !errors.Is(err, archive.ErrCorrupt) {
		t.Errorf("export with a changed PDF: %v, want ErrCorrupt", err)
	}
}

// TestConcurrentArchivingKeepsOneChain: invoices of one number range
// archived at once by several workers still form one chain, positions 1..n
// each taken once, every link naming its predecessor.
func TestConcurrentArchivingKeepsOneChain(t *testing.T) {
	t.Parallel()
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	const n = 8
	var ids []string
	for i := range n {
		ids = append(ids, v.issue(v.place(simpleOrder(fmt.Sprintf("CC-%d", i), "")))[0].ID)
	}
	ctx := context.Background()
	var g errgroup.Group
	for _, id := range ids {
		g.Go(func() error { return v.svc.ArchiveInvoice(ctx, a, v.project, id) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	rows, err := v.pool.Query(ctx, `SELECT chain_seq, sha256, COALESCE(prev_sha256, '') FROM archive_manifests
		WHERE project_id = $1 ORDER BY chain_seq`, v.project)
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	var sum, prev, last string
	i := int64(0)
	if _, err := pgx.ForEachRow(rows, []any{&seq, &sum, &prev}, func() error {
		i++
		if seq != i || prev != last {
			t.Errorf("position %d: chain_seq %d, previous %q, want %q", i, seq, prev, last)
		}
		last = sum
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Errorf("%d manifests, want %d", i, n)
	}
	if rep := verify(t, v, a); rep.Checked != 3*n || rep.OK != 3*n {
		t.Errorf("verify: %+v", rep)
	}
}

// TestArchiveIssuedMatchesTheRecord: a document archived from what the
// issuing call wrote (ArchiveIssued, no read back) gets the same archived
// event and manifest as one read back from the database (ArchiveInvoice),
// also when the issue time has a time of day, and the chain verifies.
func TestArchiveIssuedMatchesTheRecord(t *testing.T) {
	a, _, _ := unlockedArchive(t, true)
	v := newInvoicing(t, true, nil)
	ctx := context.Background()
	at := time.Date(2026, 11, 22, 15, 4, 5, 123456789, time.UTC)
	issue := func(no string) invoicing.Issued {
		out, err := v.svc.IssueInvoices(ctx, v.project, v.place(simpleOrder(no, "")), invoicing.IssueDates{IssueDate: at})
		if err != nil || len(out) != 1 {
			t.Fatalf("IssueInvoices: %v %v", out, err)
		}
		return out[0]
	}
	fresh, read := issue("AI-FRESH"), issue("AI-READ")
	if err := v.svc.ArchiveIssued(ctx, a, v.project, fresh); err != nil {
		t.Fatal(err)
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, read.ID); err != nil {
		t.Fatal(err)
	}
	// Archiving again is harmless on both paths.
	if err := v.svc.ArchiveIssued(ctx, a, v.project, fresh); err != nil {
		t.Fatal(err)
	}

	type archived struct {
		Data map[string]any `json:"data"`
	}
	eventOf := func(id string) map[string]any {
		var payload []byte
		if err := v.pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE project_id = $1 AND event_type = 'invoice.archived' AND msg_key <> ''
			AND convert_from(payload, 'UTF8') LIKE '%' || $2 || '%'`, v.project, id).Scan(&payload); err != nil {
			t.Fatalf("invoice.archived of %s: %v", id, err)
		}
		var e archived
		if err := json.Unmarshal(payload, &e); err != nil {
			t.Fatal(err)
		}
		return e.Data
	}
	ef, er := eventOf(fresh.ID), eventOf(read.ID)
	if keysF, keysR := slices.Sorted(maps.Keys(ef)), slices.Sorted(maps.Keys(er)); !slices.Equal(keysF, keysR) {
		t.Errorf("event fields differ: fresh %v, read back %v", keysF, keysR)
	}
	for _, e := range []map[string]any{ef, er} {
		var createdAt time.Time
		var issueDate time.Time
		if err := v.pool.QueryRow(ctx, `SELECT created_at, issue_date FROM invoices WHERE id = $1`, e["id"]).Scan(&createdAt, &issueDate); err != nil {
			t.Fatal(err)
		}
		if e["issueDate"] != "2026-11-22" || e["status"] != "archived" || e["version"] != float64(2) || e["currency"] != "EUR" {
			t.Errorf("archived event %v", e)
		}
		if got, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["createdAt"])); err != nil || !got.Equal(createdAt) {
			t.Errorf("createdAt %v in the event, %v recorded", e["createdAt"], createdAt)
		}
		for _, k := range []string{"orderId", "orderNo", "number", "type", "format", "totalNetCents", "totalTaxCents", "totalGrossCents", "testMode"} {
			if ef[k] == nil || (k != "orderId" && k != "orderNo" && k != "number" && ef[k] != er[k]) {
				t.Errorf("%s: fresh %v, read back %v", k, ef[k], er[k])
			}
		}
	}
	var dates []string
	rows, err := v.pool.Query(ctx, `SELECT convert_from(body, 'UTF8')::jsonb->>'issueDate' FROM archive_manifests WHERE project_id = $1 ORDER BY chain_seq`, v.project)
	if err != nil {
		t.Fatal(err)
	}
	if dates, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || !slices.Equal(dates, []string{"2026-11-22", "2026-11-22"}) {
		t.Errorf("manifest issue dates %v, %v", dates, err)
	}
	if rep := verify(t, v, a); rep.Checked != 6 || len(rep.Problems) > 0 { // three objects each
		t.Errorf("verify: %+v", rep)
	}
}
