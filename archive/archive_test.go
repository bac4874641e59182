package archive_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/testenv"
)

func newArchive(t *testing.T) (*archive.Archive, *minio.Client, string) {
	t.Helper()
	c := testenv.S3(t)
	bucket := "test-archive-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	a := archive.New(c, bucket)
	if err := a.EnsureBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a, c, bucket
}

// newTestArchive is newArchive for a test bucket (versioned, no lock).
func newTestArchive(t *testing.T) (*archive.Archive, *minio.Client, string) {
	t.Helper()
	c := testenv.S3(t)
	bucket := "test-tb-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	a := archive.NewTest(c, bucket)
	if err := a.EnsureTestBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a, c, bucket
}

func TestRetainUntilEndOfYearPlusEight(t *testing.T) {
	t.Parallel()
	got := archive.RetainUntil(time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC), archive.RetentionYears)
	if want := time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("RetainUntil = %v, want %v", got, want)
	}
}

func TestPutIsWriteOnceWithComplianceRetention(t *testing.T) {
	t.Parallel()
	a, c, bucket := newArchive(t)
	ctx := context.Background()
	doc := []byte(`<rsm:CrossIndustryInvoice>TEST-2026-000001</rsm:CrossIndustryInvoice>`)
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	st, err := a.Put(ctx, "p/2026/TEST-2026-000001.xml", doc, "application/xml", until)
	if err != nil {
		t.Fatal(err)
	}
	got, st2, err := a.Get(ctx, st.Key)
	if err != nil || string(got) != string(doc) || st2.SHA256 != st.SHA256 {
		t.Fatalf("Get: %q %+v %v", got, st2, err)
	}
	mode, retain, err := c.GetObjectRetention(ctx, bucket, st.Key, "")
	if err != nil || mode == nil || *mode != minio.Compliance || retain == nil || !retain.Equal(until) {
		t.Errorf("retention %v until %v (%v), want COMPLIANCE until %v", mode, retain, err, until)
	}
	// The same bytes again: success, nothing changes.
	if again, err := a.Put(ctx, st.Key, doc, "application/xml", until); err != nil || again.SHA256 != st.SHA256 {
		t.Errorf("re-put of the same document: %+v %v", again, err)
	}
	// Other bytes under the same key: refused.
	if _, err := a.Put(ctx, st.Key, []byte("<changed/>"), "application/xml", until); !errors.Is(err, archive.ErrConflict) {
		t.Errorf("put of other bytes: %v, want ErrConflict", err)
	}
	// Nobody can delete the locked version, not even with the governance bypass.
	info, err := c.StatObject(ctx, bucket, st.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = c.RemoveObject(ctx, bucket, st.Key, minio.RemoveObjectOptions{VersionID: info.VersionID, GovernanceBypass: true})
	if err == nil {
		t.Error("a COMPLIANCE-locked document version was deleted")
	}
	if got, _, err := a.Get(ctx, st.Key); err != nil || string(got) != string(doc) {
		t.Errorf("after the delete attempt: %q %v", got, err)
	}
	if _, _, err := a.Get(ctx, "p/none.xml"); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("missing key: %v, want ErrNotFound", err)
	}
}

func TestBucketWithoutObjectLockIsRefused(t *testing.T) {
	t.Parallel()
	c := testenv.S3(t)
	bucket := "test-nolock-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	if err := c.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.RemoveBucket(context.Background(), bucket) })
	if err := archive.New(c, bucket).EnsureBucket(context.Background()); err == nil {
		t.Error("a bucket without object lock was accepted")
	}
}

// TestConcurrentPutsOfOneKeyWriteOnce: many puts of one key with different
// bytes at the same moment leave exactly one version; every put either wrote
// or got ErrConflict; PutFirst answers with the document that stands.
func TestConcurrentPutsOfOneKeyWriteOnce(t *testing.T) {
	t.Parallel()
	a, c, bucket := newArchive(t)
	ctx := context.Background()
	until := time.Now().Add(48 * time.Hour)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = a.Put(ctx, "p/race.pdf", []byte(fmt.Sprintf("rendering %d", i)), "application/pdf", until)
		}()
	}
	close(start)
	wg.Wait()
	wrote := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wrote++
		case !errors.Is(err, archive.ErrConflict):
			t.Errorf("put: %v", err)
		}
	}
	versions := 0
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "p/race.pdf", WithVersions: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		versions++
	}
	if wrote != 1 || versions != 1 {
		t.Errorf("%d puts wrote, %d versions stored; want 1 and 1", wrote, versions)
	}
	stored, _, err := a.Get(ctx, "p/race.pdf")
	if err != nil {
		t.Fatal(err)
	}
	st, written, err := a.PutFirst(ctx, "p/race.pdf", []byte("rendering again"), "application/pdf", until)
	if err != nil || written || st.Size != int64(len(stored)) {
		t.Errorf("PutFirst over an archived rendering: %+v written=%v %v", st, written, err)
	}
}

// TestGetOfAnObjectJustCreatedNeedsNoRead: Get of an object this archive
// created lately is answered without the store (the object was removed
// behind its back and Get still has it); after RemoveKey it is gone.
func TestGetOfAnObjectJustCreatedNeedsNoRead(t *testing.T) {
	t.Parallel()
	a, c, bucket := newTestArchive(t)
	ctx := context.Background()
	st, err := a.Put(ctx, "doc.pdf", []byte("%PDF-1.7 recent"), "application/pdf", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveObject(ctx, bucket, "doc.pdf", minio.RemoveObjectOptions{VersionID: st.VersionID}); err != nil {
		t.Fatal(err)
	}
	data, got, err := a.Get(ctx, "doc.pdf")
	if err != nil || string(data) != "%PDF-1.7 recent" || got.VersionID != st.VersionID || got.SHA256 != st.SHA256 {
		t.Fatalf("Get after create: %q %+v %v", data, got, err)
	}
	// Reads that check the store go to it.
	if _, _, err := a.GetVersion(ctx, "doc.pdf", st.VersionID); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("GetVersion of the removed object: %v, want ErrNotFound", err)
	}
	if _, err := a.RemoveKey(ctx, "doc.pdf"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx, "doc.pdf"); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("Get after RemoveKey: %v, want ErrNotFound", err)
	}
}

// TestPutBatchKeepsEachPartAsWritten: a batch is one object of its parts in
// order, each part's anchor verifies against the store, and the parts kept
// for Kept are the bytes written, whatever the caller does with its slices
// afterwards.
func TestPutBatchKeepsEachPartAsWritten(t *testing.T) {
	t.Parallel()
	a, _, _ := newTestArchive(t)
	ctx := context.Background()
	want := []string{"%PDF-1.7 first", "%PDF-1.7 the second, longer", "%PDF-1.7 3"}
	parts := make([][]byte, len(want))
	for i, s := range want {
		parts[i] = []byte(s)
	}
	names := []string{"a.pdf", "b.pdf", "c.pdf"}
	sts, err := a.PutBatch(ctx, "batch-1", parts, names, archive.DocumentBatchContentType, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		for j := range p {
			p[j] = 'x' // the caller reuses its buffers
		}
	}
	whole, _, err := a.Get(ctx, "batch-1")
	if err != nil || string(whole) != strings.Join(want, "") {
		t.Fatalf("the batch object: %q %v", whole, err)
	}
	for i, name := range names {
		kept, ok := a.Kept(name)
		if !ok || string(kept) != want[i] {
			t.Errorf("Kept(%s) = %q %v, want %q", name, kept, ok, want[i])
		}
		if len(kept) > 0 {
			kept[0] = 'y' // a reader's copy is its own
		}
		if again, _ := a.Kept(name); string(again) != want[i] {
			t.Errorf("Kept(%s) after a reader wrote to its copy: %q", name, again)
		}
		got, err := a.Verified(ctx, sts[i])
		if err != nil || string(got) != want[i] {
			t.Errorf("part %d from the store: %q %v", i, got, err)
		}
	}
}
