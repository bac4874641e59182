package archive_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"

	"github.com/o2i-service/o2i/archive"
)

func kinds(ps []archive.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Kind)
	}
	return out
}

// TestCheckComparesWithTheRecord: Put reports the version id and the
// SHA-256 of the bytes; Check of that record finds nothing wrong in a locked
// bucket, and names a record whose hash, version or retention date is not
// what the store holds.
func TestCheckComparesWithTheRecord(t *testing.T) {
	t.Parallel()
	a, _, _ := newArchive(t)
	ctx := context.Background()
	doc := []byte("<doc>checked</doc>")
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	st, err := a.Put(ctx, "p/invoices/c.xml", doc, "application/xml", until)
	if err != nil || st.VersionID == "" || st.SHA256 != archive.SHA256(doc) || st.Size != int64(len(doc)) {
		t.Fatalf("Put: %+v %v", st, err)
	}
	if data, ps := a.Check(ctx, st); len(ps) != 0 || !bytes.Equal(data, doc) {
		t.Errorf("Check of the record: %+v", ps)
	}
	for name, tc := range map[string]struct {
		change func(*archive.Stored)
		want   string
	}{
		"other hash":      {func(s *archive.Stored) { s.SHA256 = archive.SHA256([]byte("x")) }, "altered"},
		"other size":      {func(s *archive.Stored) { s.Size++ }, "altered"},
		"other date":      {func(s *archive.Stored) { s.RetainUntil = s.RetainUntil.Add(time.Hour) }, "retention"},
		"unknown version": {func(s *archive.Stored) { s.VersionID = uuid.NewString() }, "missing"},
	} {
		rec := st
		tc.change(&rec)
		if _, ps := a.Check(ctx, rec); !slices.Contains(kinds(ps), tc.want) {
			t.Errorf("%s: problems %v, want %s", name, kinds(ps), tc.want)
		}
	}
	if _, err := a.Verified(ctx, archive.Stored{Key: st.Key, VersionID: st.VersionID, SHA256: st.SHA256, Size: st.Size + 1}); !errors.Is(err, archive.ErrCorrupt) {
		t.Errorf("Verified with another size: %v", err)
	}
	var buf bytes.Buffer
	if err := a.CopyVerified(ctx, &buf, st); err != nil || !bytes.Equal(buf.Bytes(), doc) {
		t.Errorf("CopyVerified: %v", err)
	}
	if _, err := a.RemoveKey(ctx, st.Key); err == nil {
		t.Error("RemoveKey removed from a locked archive")
	}
}

// TestTestArchiveHasNoRetentionAndCanBeEmptied: the test bucket is versioned
// without lock; documents there get no retention, are read by version, and
// RemoveKey removes every version of exactly that key. A bucket with object
// lock is refused as test bucket.
func TestTestArchiveHasNoRetentionAndCanBeEmptied(t *testing.T) {
	t.Parallel()
	tb, c, bucket := newTestArchive(t)
	ctx := context.Background()
	if v, err := c.GetBucketVersioning(ctx, bucket); err != nil || !v.Enabled() {
		t.Errorf("test bucket versioning: %+v %v", v, err)
	}
	live, _, _ := newArchive(t)
	if err := archive.NewTest(c, live.Bucket()).EnsureTestBucket(ctx); err == nil {
		t.Error("a bucket with object lock was accepted as test bucket")
	}
	a := live.WithTest(tb)
	if a.For(true) != tb || a.For(false) != a {
		t.Error("For does not route test documents to the test archive")
	}
	if got, err := a.InBucket(bucket); err != nil || got != tb {
		t.Errorf("InBucket(test bucket): %v", err)
	}
	if _, err := a.InBucket("elsewhere"); err == nil {
		t.Error("InBucket accepted a bucket it does not know")
	}
	st, err := tb.Put(ctx, "p/invoices/t.xml", []byte("<test/>"), "application/xml", time.Now().Add(time.Hour))
	if err != nil || !st.RetainUntil.IsZero() || st.VersionID == "" {
		t.Fatalf("test Put: %+v %v", st, err)
	}
	if mode, _, err := c.GetObjectRetention(ctx, bucket, st.Key, st.VersionID); err == nil && mode != nil {
		t.Errorf("a test document got retention %v", *mode)
	}
	if _, ps := tb.Check(ctx, st); len(ps) != 0 {
		t.Errorf("Check of a test document: %+v", ps)
	}
	other := []byte("<other/>")
	if _, err := c.PutObject(ctx, bucket, st.Key, bytes.NewReader(other), int64(len(other)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ps := tb.Check(ctx, st); !slices.Equal(kinds(ps), []string{"replaced"}) {
		t.Errorf("Check after a new version: %v, want replaced", kinds(ps))
	}
	if _, err := tb.Put(ctx, "p/invoices/t.xml.bak", []byte("x"), "application/xml", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := tb.RemoveKey(ctx, st.Key); err != nil || n != 2 {
		t.Errorf("RemoveKey: %d versions, %v; want 2", n, err)
	}
	if _, _, err := tb.GetVersion(ctx, st.Key, st.VersionID); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("after RemoveKey: %v", err)
	}
	if _, err := tb.Stat(ctx, "p/invoices/t.xml.bak"); err != nil {
		t.Errorf("RemoveKey removed a neighbouring key: %v", err)
	}
}

// TestManifestEncodingIsStable: the same manifest always gives the same
// bytes and hash, and only manifests of this format are read.
func TestManifestEncodingIsStable(t *testing.T) {
	t.Parallel()
	until := time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC)
	m := archive.Manifest{ProjectID: "p", NumberRange: "RE-2026-{SEQ}", ChainSeq: 2, InvoiceID: "i", Number: "RE-2026-000002",
		IssueDate: "2026-11-24", Type: "invoice", PreviousManifestSHA256: strings.Repeat("a", 64),
		Objects: []archive.ManifestObject{archive.Object("xml", archive.Stored{Key: "k", VersionID: "v", SHA256: "s", Size: 3, RetainUntil: until})}}
	b1, h1, err := m.Encode()
	b2, h2, _ := m.Encode()
	if err != nil || !bytes.Equal(b1, b2) || h1 != h2 || h1 != archive.SHA256(b1) {
		t.Fatalf("Encode is not stable: %v", err)
	}
	got, err := archive.ParseManifest(b1)
	if err != nil || got.Format != archive.ManifestFormat || *got.Objects[0].RetainUntil != "2035-01-01T00:00:00Z" || got.ChainSeq != 2 {
		t.Errorf("ParseManifest: %+v %v", got, err)
	}
	if _, err := archive.ParseManifest(bytes.Replace(b1, []byte(archive.ManifestFormat), []byte("other/1"), 1)); err == nil {
		t.Error("a manifest of another format was read")
	}
	if archive.Object("pdf", archive.Stored{}).RetainUntil != nil {
		t.Error("a document without retention got a retain-until")
	}
}
