// Package archive stores documents write-once (GoBD: Unveränderbarkeit) in
// an S3 bucket with object lock. Every object is put with COMPLIANCE
// retention until the end of its retention period, which no credential can
// shorten or bypass (never the GOVERNANCE bypass). A document is never
// overwritten: putting the same bytes again under its key counts as success,
// different bytes are refused. Every object carries its SHA-256; reading
// verifies it. It imports minio-go and pdfcpu (the XML embedded in a PDF/A-3) only.
package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
)

// RetentionYears is how long invoices are kept: 8 years from the end of the
// calendar year of issue (§147 Abs. 1 Nr. 4 and Abs. 3 AO, §14b UStG, as
// amended by BEG IV).
const RetentionYears = 8

// shaKey is the user metadata key holding the hex SHA-256 of an object.
const shaKey = "Sha256"

// Errors.
var (
	// ErrConflict: the key holds a different document; archived documents never change.
	ErrConflict = errors.New("archive: a different document is archived under this key")
	// ErrCorrupt: the stored bytes do not match their recorded SHA-256.
	ErrCorrupt = errors.New("archive: stored document does not match its SHA-256")
	// ErrNotFound: nothing is archived under the key.
	ErrNotFound = errors.New("archive: no document under this key")
)

// Archive is a write-once store in one bucket.
type Archive struct {
	c      *minio.Client
	bucket string
	locked bool     // objects get COMPLIANCE retention
	test   *Archive // where test documents go; nil: this bucket, without retention
	recent *recentObjects
}

// New returns the archive in bucket: documents with COMPLIANCE retention.
func New(c *minio.Client, bucket string) *Archive {
	return &Archive{c: c, bucket: bucket, locked: true, recent: newRecentObjects()}
}

// NewTest returns an archive of test documents in bucket: versioned, without
// retention, so that a reset can remove them.
func NewTest(c *minio.Client, bucket string) *Archive {
	return &Archive{c: c, bucket: bucket, recent: newRecentObjects()}
}

// WithTest makes t the archive of a's test documents and returns a.
func (a *Archive) WithTest(t *Archive) *Archive {
	a.test = t
	return a
}

// Bucket is the bucket's name.
func (a *Archive) Bucket() string { return a.bucket }

// Locked reports whether the archive puts objects with COMPLIANCE retention.
func (a *Archive) Locked() bool { return a.locked }

// For returns where documents of the mode go: a itself for live documents;
// for test documents the test archive, or a's bucket without retention when
// none is configured.
func (a *Archive) For(testMode bool) *Archive {
	if !testMode || !a.locked {
		return a
	}
	if a.test != nil {
		return a.test
	}
	return &Archive{c: a.c, bucket: a.bucket}
}

// InBucket returns the archive (a or its test archive) that reads bucket.
func (a *Archive) InBucket(bucket string) (*Archive, error) {
	switch {
	case bucket == a.bucket:
		return a, nil
	case a.test != nil && bucket == a.test.bucket:
		return a.test, nil
	}
	return nil, fmt.Errorf("archive: bucket %s is not configured here", bucket)
}

// RetainUntil is the end of the retention period of a document issued on
// issued: the first instant after the end of the calendar year issued+years.
func RetainUntil(issued time.Time, years int) time.Time {
	return time.Date(issued.Year()+years+1, 1, 1, 0, 0, 0, 0, time.UTC)
}

// EnsureBucket creates the bucket with object lock when it does not exist,
// and refuses a bucket without object lock (it could not hold documents
// write-once).
func (a *Archive) EnsureBucket(ctx context.Context) error {
	ok, err := a.c.BucketExists(ctx, a.bucket)
	if err != nil {
		return fmt.Errorf("archive: bucket %s: %w", a.bucket, err)
	}
	if !ok {
		err := a.c.MakeBucket(ctx, a.bucket, minio.MakeBucketOptions{ObjectLocking: true})
		if err != nil && minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
			return fmt.Errorf("archive: create bucket %s: %w", a.bucket, err)
		}
	}
	lock, _, _, _, err := a.c.GetObjectLockConfig(ctx, a.bucket)
	if err != nil || lock != "Enabled" {
		return fmt.Errorf("archive: bucket %s has no object lock (create it with object lock enabled): %v", a.bucket, err)
	}
	return nil
}

// EnsureTestBucket creates the test bucket, versioned and without object
// lock, when it does not exist; it refuses a bucket with object lock (a reset
// could not remove test documents from it).
func (a *Archive) EnsureTestBucket(ctx context.Context) error {
	ok, err := a.c.BucketExists(ctx, a.bucket)
	if err != nil {
		return fmt.Errorf("archive: bucket %s: %w", a.bucket, err)
	}
	if !ok {
		err := a.c.MakeBucket(ctx, a.bucket, minio.MakeBucketOptions{})
		if err != nil && minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
			return fmt.Errorf("archive: create bucket %s: %w", a.bucket, err)
		}
		if err := a.c.EnableVersioning(ctx, a.bucket); err != nil {
			return fmt.Errorf("archive: versioning of bucket %s: %w", a.bucket, err)
		}
	}
	if lock, _, _, _, err := a.c.GetObjectLockConfig(ctx, a.bucket); err == nil && lock == "Enabled" {
		return fmt.Errorf("archive: test bucket %s has object lock; test documents must stay removable", a.bucket)
	}
	return nil
}

// CheckBucket verifies, reading only, that the bucket exists with object
// lock: what a process that only reads the archive checks at start.
func (a *Archive) CheckBucket(ctx context.Context) error {
	ok, err := a.c.BucketExists(ctx, a.bucket)
	if err != nil {
		return fmt.Errorf("archive: bucket %s: %w", a.bucket, err)
	}
	if !ok {
		return fmt.Errorf("archive: bucket %s does not exist (the invoicer role creates it)", a.bucket)
	}
	if a.locked {
		if lock, _, _, _, err := a.c.GetObjectLockConfig(ctx, a.bucket); err != nil || lock != "Enabled" {
			return fmt.Errorf("archive: bucket %s has no object lock: %v", a.bucket, err)
		}
	}
	return nil
}

// InvoiceXMLKey is where an invoice's EN 16931 XML lies.
func InvoiceXMLKey(projectID, invoiceID string) string {
	return projectID + "/invoices/" + invoiceID + ".xml"
}

// InvoicePDFKey is where an invoice's PDF lies (ZUGFeRD PDF/A-3, or the
// XRechnung reading copy).
func InvoicePDFKey(projectID, invoiceID string) string {
	return projectID + "/invoices/" + invoiceID + ".pdf"
}

// ManifestKey is where an invoice's manifest lies in an object of its own.
func ManifestKey(projectID, invoiceID string) string {
	return projectID + "/manifests/" + invoiceID + ".json"
}

// ManifestBatchKey is where the n manifests of a manifest batch lie, one
// after another, the first of them the manifest of invoice firstInvoiceID.
// A batch holds the manifests of consecutive positions of one number
// range's chain (live documents of one retention period, chained in one
// transaction); each document's anchor names its bytes in it (Stored.InBatch).
func ManifestBatchKey(projectID, firstInvoiceID string, n int) string {
	return ManifestBatchPrefix(projectID) + firstInvoiceID + "-" + strconv.Itoa(n)
}

// ManifestBatchPrefix is where a project's manifest batches lie.
func ManifestBatchPrefix(projectID string) string { return projectID + "/manifests/batches/" }

// DocumentBatchKey is where the PDFs of n live documents chained together
// lie, one after another, the first of them the PDF of invoice
// firstInvoiceID; each document's anchor names its PDF's bytes in it
// (Stored.InBatch), as its manifest names them (ManifestObject.Offset).
func DocumentBatchKey(projectID, firstInvoiceID string, n int) string {
	return DocumentBatchPrefix(projectID) + firstInvoiceID + "-" + strconv.Itoa(n)
}

// DocumentBatchPrefix is where a project's document batches lie.
func DocumentBatchPrefix(projectID string) string { return projectID + "/invoices/batches/" }

// ManifestBatchContentType is the content type of a manifest batch: its
// manifests' bytes one after another, each a JSON document ending in a
// newline.
const ManifestBatchContentType = "application/octet-stream"

// DocumentBatchContentType is the content type of a document batch: its
// PDFs' bytes one after another (each a whole PDF, read by its anchor's
// offset and size).
const DocumentBatchContentType = "application/octet-stream"

// Stored describes an archived document.
type Stored struct {
	Key         string
	VersionID   string // "" in a bucket without versioning
	SHA256      string // hex
	Size        int64
	RetainUntil time.Time // zero: no retention
	// InBatch: the document is bytes Offset to Offset+Size-1 of the object
	// (a manifest in a manifest batch, a PDF in a document batch); SHA256
	// and Size are the document's, Key, VersionID and RetainUntil the
	// object's.
	InBatch bool
	Offset  int64
}

// Part is the anchor of a document of size bytes with SHA-256 sum that lies
// in the object st from offset on (InBatch): the object's key, version and
// retention with the document's own hash and size.
func (st Stored) Part(sum string, size, offset int64) Stored {
	return Stored{Key: st.Key, VersionID: st.VersionID, RetainUntil: st.RetainUntil, SHA256: sum, Size: size, InBatch: true, Offset: offset}
}

// Anchored completes st with an anchor's nullable columns: its retain-until
// (nil: no retention) and byte offset (nil: the whole object).
func (st *Stored) Anchored(retainUntil *time.Time, byteOffset *int64) {
	if retainUntil != nil {
		st.RetainUntil = *retainUntil
	}
	if byteOffset != nil {
		st.InBatch, st.Offset = true, *byteOffset
	}
}

// Put archives data under key with COMPLIANCE retention until retainUntil.
// When the key already holds the same bytes it returns that object
// (idempotent); different bytes give ErrConflict, with the stored object.
// The write is conditional (If-None-Match: *), so of two concurrent puts
// of one key only one creates the object.
func (a *Archive) Put(ctx context.Context, key string, data []byte, contentType string, retainUntil time.Time) (Stored, error) {
	st, err := a.put(ctx, key, data, contentType, retainUntil)
	if err == nil {
		a.recent.add(data, st)
	}
	return st, err
}

// PutBatch archives parts one after another as one object under key, as
// Put does (the same bytes again count as success), and returns each
// part's anchor: its SHA-256 and size, its offset in the object
// (Stored.InBatch), the object's key, version and retention. Get of
// names[i] soon after returns parts[i] from this process's memory, as it
// would an object of its own under that name.
func (a *Archive) PutBatch(ctx context.Context, key string, parts [][]byte, names []string, contentType string, retainUntil time.Time) ([]Stored, error) {
	if len(parts) != len(names) {
		return nil, fmt.Errorf("archive: put %s: %d parts, %d names", key, len(parts), len(names))
	}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	data := make([]byte, 0, size)
	for _, p := range parts {
		data = append(data, p...)
	}
	st, err := a.put(ctx, key, data, contentType, retainUntil)
	if err != nil {
		return nil, err
	}
	out := make([]Stored, len(parts))
	off := 0
	for i, p := range parts {
		out[i] = st.Part(SHA256(p), int64(len(p)), int64(off))
		// The part's bytes in data, which is this call's own and only
		// read from now on: kept without another copy.
		a.recent.keep(names[i], data[off:off+len(p):off+len(p)], out[i])
		off += len(p)
	}
	return out, nil
}

// put is Put without keeping the bytes for Get.
func (a *Archive) put(ctx context.Context, key string, data []byte, contentType string, retainUntil time.Time) (Stored, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	existing := func() (Stored, error) {
		// The stored bytes are hashed here, not taken from the object's
		// own metadata: that is what the caller anchors.
		st, err := a.Stat(ctx, key)
		if err != nil {
			return st, err
		}
		_, st, err = a.GetVersion(ctx, key, st.VersionID)
		if err == nil && st.SHA256 != hexSum {
			return st, fmt.Errorf("%w: %s", ErrConflict, key)
		}
		return st, err
	}
	// No look before the write: the condition refuses an existing key (412),
	// and only then is the stored object read. One request per new object.
	opts := minio.PutObjectOptions{
		ContentType:    contentType,
		UserMetadata:   map[string]string{shaKey: hexSum},
		SendContentMd5: true, // the store verifies the bytes it receives
		// No SHA-256 of the payload in the signature: over plain HTTP
		// minio-go would sign every 64 KiB chunk (a SHA-256 on both ends);
		// Content-MD5 already has the store check the bytes.
		DisableContentSha256: true,
	}
	if a.locked {
		opts.Mode, opts.RetainUntilDate = minio.Compliance, retainUntil.UTC()
	} else {
		retainUntil = time.Time{}
	}
	opts.SetMatchETagExcept("*")
	info, err := a.c.PutObject(ctx, a.bucket, key, bytes.NewReader(data), int64(len(data)), opts)
	if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
		return existing() // the key holds a document already (an earlier or concurrent put)
	}
	if err != nil {
		return Stored{}, fmt.Errorf("archive: put %s: %w", key, err)
	}
	return Stored{Key: key, VersionID: info.VersionID, SHA256: hexSum, Size: int64(len(data)), RetainUntil: retainUntil.UTC()}, nil
}

// PutFirst is Put for renderings of one source (a PDF rendered again from
// the same XML has other bytes, not other content): when the key holds a
// document already, that one stands. written reports whether data itself is
// what is archived now.
func (a *Archive) PutFirst(ctx context.Context, key string, data []byte, contentType string, retainUntil time.Time) (st Stored, written bool, err error) {
	st, err = a.Put(ctx, key, data, contentType, retainUntil)
	if errors.Is(err, ErrConflict) {
		return st, false, nil
	}
	return st, err == nil, err
}

// Stat returns what is archived under key, or ErrNotFound.
func (a *Archive) Stat(ctx context.Context, key string) (Stored, error) {
	info, err := a.c.StatObject(ctx, a.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return Stored{}, fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		return Stored{}, fmt.Errorf("archive: stat %s: %w", key, err)
	}
	st := Stored{Key: key, VersionID: info.VersionID, SHA256: info.UserMetadata[shaKey], Size: info.Size}
	if info.Metadata != nil {
		if t, err := time.Parse(time.RFC3339, info.Metadata.Get("X-Amz-Object-Lock-Retain-Until-Date")); err == nil {
			st.RetainUntil = t
		}
	}
	return st, nil
}

// Kept returns the bytes this process archived lately under key (a part
// of a batch under its document's own key), without a request to the
// store; false when it keeps none (see recentObjects).
func (a *Archive) Kept(key string) ([]byte, bool) {
	data, _, ok := a.recent.get(key)
	return data, ok
}

// Get returns the latest document under key after checking it against the
// SHA-256 in its own metadata, in one request; none when this process
// created the object lately (it is never replaced, see recentObjects).
// Documents with an anchor in the database are read with GetVersion and
// compared with that record instead.
func (a *Archive) Get(ctx context.Context, key string) ([]byte, Stored, error) {
	if data, st, ok := a.recent.get(key); ok {
		return data, st, nil
	}
	var buf writerBuffer
	st, meta, err := a.copyVersion(ctx, &buf, key, "")
	if err != nil {
		return nil, st, err
	}
	if meta != st.SHA256 {
		return nil, st, fmt.Errorf("%w: %s", ErrCorrupt, key)
	}
	return buf.b, st, nil
}
