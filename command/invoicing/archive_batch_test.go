package invoicing_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/query"
)

// batchedManifest is a manifest as recorded, with its anchor.
type batchedManifest struct {
	invoiceID, batchKey, anchorKey, anchorVersion, anchorSHA string
	body                                                     []byte
	batchOffset, anchorOffset, anchorSize                    int64
}

// archiveChainedTogether issues n live documents of one number range and
// archives them so that one chain transaction chains them all: the last n-1
// first, each stored and anchored and then waiting for its predecessor,
// then the first, whose transaction chains every one. It returns the
// documents' ids in number order and their manifests.
func archiveChainedTogether(t *testing.T, a *archive.Archive, n int) (*invoicingEnv, []string, []batchedManifest) {
	t.Helper()
	v := newInvoicing(t, false, nil)
	var ids []string
	for i := range n {
		ids = append(ids, v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("MB%d", i)), "")))[0].ID)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := n - 1; i >= 1; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[i]); err != nil {
				t.Logf("document %d: %v (retried below)", i+1, err)
			}
		}()
		testenv.Eventually(t, 60*time.Second, fmt.Sprintf("document %d stored and anchored", i+1), func() bool { return v.anchored(ids[i]) })
	}
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[0]); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, id := range ids { // the retries of those that gave up waiting
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, id); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
	}
	rows, err := v.pool.Query(ctx, `SELECT m.invoice_id::text, COALESCE(m.batch_key, ''), COALESCE(m.batch_offset, -1), m.body,
			o.object_key, o.version_id, o.sha256, COALESCE(o.byte_offset, -1), o.size
		FROM archive_manifests m JOIN archive_objects o ON o.invoice_id = m.invoice_id AND o.kind = 'manifest'
		WHERE m.project_id = $1 ORDER BY m.chain_seq`, v.project)
	if err != nil {
		t.Fatal(err)
	}
	var ms []batchedManifest
	var m batchedManifest
	if _, err := pgx.ForEachRow(rows, []any{&m.invoiceID, &m.batchKey, &m.batchOffset, &m.body, &m.anchorKey, &m.anchorVersion, &m.anchorSHA,
		&m.anchorOffset, &m.anchorSize}, func() error {
		ms = append(ms, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ms) != n {
		t.Fatalf("%d manifests stored, want %d", len(ms), n)
	}
	return v, ids, ms
}

// TestManifestsChainedTogetherLieInOneBatch: the live documents one chain
// transaction chains have their manifests in one object, one after
// another; each manifest's anchor names its bytes in it (offset, size, its
// own SHA-256), no document has a manifest object of its own, and verify,
// the archive listing and the export see each document's manifest as
// before: the export's manifest files are the recorded manifests byte for
// byte.
func TestManifestsChainedTogetherLieInOneBatch(t *testing.T) {
	t.Parallel()
	c := testenv.S3(t)
	a := archive.New(c, testenv.Env("O2I_S3_BUCKET"))
	const n = 4
	v, ids, ms := archiveChainedTogether(t, a, n)
	ctx := context.Background()
	wantKey := archive.ManifestBatchKey(v.project, ids[0], n)
	var data []byte
	for i, m := range ms {
		if m.invoiceID != ids[i] || m.batchKey != wantKey || m.batchOffset != int64(len(data)) {
			t.Errorf("manifest %d: invoice %s in batch %q at %d, want %s in %q at %d", i+1, m.invoiceID, m.batchKey, m.batchOffset, ids[i], wantKey, len(data))
		}
		if m.anchorKey != wantKey || m.anchorOffset != m.batchOffset || m.anchorSize != int64(len(m.body)) || m.anchorSHA != archive.SHA256(m.body) ||
			m.anchorVersion != ms[0].anchorVersion {
			t.Errorf("manifest %d: anchored to %s version %q at %d (%d bytes, SHA-256 %s), want its bytes in %s version %q", i+1,
				m.anchorKey, m.anchorVersion, m.anchorOffset, m.anchorSize, m.anchorSHA, wantKey, ms[0].anchorVersion)
		}
		data = append(data, m.body...)
		if _, err := a.Stat(ctx, archive.ManifestKey(v.project, m.invoiceID)); !errors.Is(err, archive.ErrNotFound) {
			t.Errorf("manifest %d has an object of its own too: %v", i+1, err)
		}
	}
	got, st, err := a.GetVersion(ctx, wantKey, ms[0].anchorVersion)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the batch object: %q, %v; want the manifests one after another %q", got, err, data)
	}
	if want := archive.RetainUntil(time.Now().UTC(), archive.RetentionYears); !st.RetainUntil.Equal(want) {
		t.Errorf("the batch is retained until %s, want %s", st.RetainUntil, want)
	}

	if rep := verify(t, v, a); rep.Checked != 3*n || rep.OK != 3*n || len(rep.Problems) != 0 {
		t.Errorf("verify: %+v, want %d objects checked, all ok", rep, 3*n)
	}
	q := query.New(v.pool, nil)
	q.ServeDocumentsFrom(a)
	entries, _, _, err := q.ArchiveEntries(ctx, v.project, time.Now().UTC().Year(), "", 100)
	if err != nil || len(entries) != n {
		t.Fatalf("archive listing: %d entries, %v", len(entries), err)
	}
	for i, e := range entries {
		for _, o := range e.Objects {
			if o.Kind != "manifest" {
				continue
			}
			if o.Key != wantKey || o.ByteOffset == nil || *o.ByteOffset != ms[i].batchOffset || o.SHA256 != e.ManifestSHA256 || o.Size != int64(len(ms[i].body)) {
				t.Errorf("listing %d: manifest object %+v, want its bytes at %d of %s", i+1, o, ms[i].batchOffset, wantKey)
			}
		}
	}
	var zipped bytes.Buffer
	if err := q.ExportArchive(ctx, &zipped, v.project, time.Now().UTC().Year(), nil); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped.Bytes()), int64(zipped.Len()))
	if err != nil {
		t.Fatal(err)
	}
	manifests := map[string][]byte{}
	for _, f := range zr.File {
		if len(f.Name) < len("manifests/") || f.Name[:len("manifests/")] != "manifests/" {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := archive.ParseManifest(b)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		manifests[parsed.InvoiceID] = b
	}
	for i, m := range ms {
		if !bytes.Equal(manifests[m.invoiceID], m.body) {
			t.Errorf("export: manifest %d is %q, want the recorded %q", i+1, manifests[m.invoiceID], m.body)
		}
	}
}

// TestVerifyFindsAManifestAlteredInsideItsBatch: in a bucket without
// versioning and lock, one byte of the second manifest changed inside the
// batch object (same length) is found as that manifest altered, and only
// that one; a batch cut short leaves the manifests past the cut altered.
func TestVerifyFindsAManifestAlteredInsideItsBatch(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, false)
	const n = 3
	v, _, ms := archiveChainedTogether(t, a, n)
	ctx := context.Background()
	key := ms[0].anchorKey
	if ms[0].batchKey == "" || key != ms[0].batchKey {
		t.Fatalf("the manifests lie in no batch: %+v", ms[0])
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
	altered := bytes.Clone(data)
	i := bytes.Index(altered[ms[1].batchOffset:], []byte(`"number"`))
	if i < 0 {
		t.Fatalf("no number in %q", ms[1].body)
	}
	altered[ms[1].batchOffset+int64(i)+1] = 'N'
	put(altered)
	rep := verify(t, v, a)
	manifestProblems := 0
	for _, p := range rep.Problems {
		if p.Kind == "manifest" && p.Problem.Kind == "altered" {
			manifestProblems++
		}
	}
	if !has(rep, ms[1].invoiceID, "manifest", "altered") || manifestProblems != 1 {
		t.Errorf("verify after one byte of manifest 2 changed: %+v, want manifest 2 altered, the others not", rep.Problems)
	}

	put(data[:ms[1].batchOffset+5])
	rep = verify(t, v, a)
	if has(rep, ms[0].invoiceID, "manifest", "altered") || !has(rep, ms[1].invoiceID, "manifest", "altered") || !has(rep, ms[2].invoiceID, "manifest", "altered") {
		t.Errorf("verify after the batch was cut inside manifest 2: %+v, want manifests 2 and 3 altered, not 1", rep.Problems)
	}
}

// TestManifestBatchIsWrittenAgainFromTheDatabase: the documents after the
// first of a range wait for it and give up (the store fails for the first);
// once it is archived, its transaction chains them all in one batch. With
// the batch object gone before their retries (as if the process had
// stopped between the chain transaction and the write), each retry writes
// the batch again from the manifests recorded for it, byte for byte, and
// every document verifies.
func TestManifestBatchIsWrittenAgainFromTheDatabase(t *testing.T) {
	t.Parallel()
	a, c, bucket := unlockedArchive(t, false)
	v := newInvoicing(t, false, nil)
	const n = 3
	var ids []string
	for i := range n {
		ids = append(ids, v.issue(v.place(simpleOrder(uniqueNo(fmt.Sprintf("MR%d", i)), "")))[0].ID)
	}
	ctx := context.Background()
	if err := v.svc.ArchiveInvoice(ctx, failingArchive(t), v.project, ids[0]); err == nil {
		t.Fatal("the first document archived into a missing bucket")
	}
	var wg sync.WaitGroup
	for _, id := range ids[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.svc.ArchiveInvoice(ctx, a, v.project, id); !errors.Is(err, invoicing.ErrChainPending) {
				t.Errorf("%s while the first is stuck: %v, want ErrChainPending", id, err)
			}
		}()
	}
	wg.Wait()
	if err := v.svc.ArchiveInvoice(ctx, a, v.project, ids[0]); err != nil {
		t.Fatal(err)
	}
	key := archive.ManifestBatchKey(v.project, ids[0], n)
	data, _, err := a.GetVersion(ctx, key, "")
	if err != nil {
		t.Fatalf("the batch of the three: %v", err)
	}
	if err := c.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[1:] {
		if err := v.svc.ArchiveInvoice(ctx, a, v.project, id); err != nil {
			t.Fatalf("retry of %s: %v", id, err)
		}
	}
	again, _, err := a.GetVersion(ctx, key, "")
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("the batch written again: %q, %v; want %q", again, err, data)
	}
	if got := v.count(`SELECT count(*) FROM invoices WHERE project_id = $1 AND status = 'archived'`, v.project); got != n {
		t.Errorf("%d documents archived, want %d", got, n)
	}
	rep := verify(t, v, a)
	for _, p := range rep.Problems {
		if p.Problem.Kind != "retention" { // live documents in a bucket without lock: that alone
			t.Errorf("verify: %+v", p)
		}
	}
	if rep.Checked != 3*n {
		t.Errorf("verify checked %d objects, want %d", rep.Checked, 3*n)
	}
}
