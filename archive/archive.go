// Package archive stores documents write-once (GoBD: Unveränderbarkeit) in
// an S3 bucket with object lock. Every object is put with COMPLIANCE
// retention until the end of its retention period, which no credential can
// shorten or bypass (never the GOVERNANCE bypass). A document is never
// overwritten: putting the same bytes again under its key counts as success,
// different bytes are refused. Every object carries its SHA-256; reading
// verifies it. It imports minio-go only.
package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
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
}

// New returns the archive in bucket.
func New(c *minio.Client, bucket string) *Archive { return &Archive{c: c, bucket: bucket} }

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

// InvoiceXMLKey is where an invoice's EN 16931 XML lies.
func InvoiceXMLKey(projectID, invoiceID string) string {
	return projectID + "/invoices/" + invoiceID + ".xml"
}

// InvoicePDFKey is where an invoice's PDF lies (ZUGFeRD PDF/A-3, or the
// XRechnung reading copy).
func InvoicePDFKey(projectID, invoiceID string) string {
	return projectID + "/invoices/" + invoiceID + ".pdf"
}

// Stored describes an archived document.
type Stored struct {
	Key         string
	SHA256      string // hex
	Size        int64
	RetainUntil time.Time
}

// Put archives data under key with COMPLIANCE retention until retainUntil.
// When the key already holds the same bytes it returns that object
// (idempotent); different bytes give ErrConflict, with the stored object.
// The write is conditional (If-None-Match: *), so of two concurrent puts
// of one key only one creates the object.
func (a *Archive) Put(ctx context.Context, key string, data []byte, contentType string, retainUntil time.Time) (Stored, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	existing := func() (Stored, error) {
		st, err := a.Stat(ctx, key)
		if err == nil && st.SHA256 != hexSum {
			return st, fmt.Errorf("%w: %s", ErrConflict, key)
		}
		return st, err
	}
	// No look before the write: the condition refuses an existing key (412),
	// and only then is the stored object read. One request per new object.
	opts := minio.PutObjectOptions{
		ContentType:     contentType,
		UserMetadata:    map[string]string{shaKey: hexSum},
		Mode:            minio.Compliance,
		RetainUntilDate: retainUntil.UTC(),
		SendContentMd5:  true, // the store verifies the bytes it receives
	}
	opts.SetMatchETagExcept("*")
	_, err := a.c.PutObject(ctx, a.bucket, key, bytes.NewReader(data), int64(len(data)), opts)
	if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
		return existing() // the key holds a document already (an earlier or concurrent put)
	}
	if err != nil {
		return Stored{}, fmt.Errorf("archive: put %s: %w", key, err)
	}
	return Stored{Key: key, SHA256: hexSum, Size: int64(len(data)), RetainUntil: retainUntil.UTC()}, nil
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
	st := Stored{Key: key, SHA256: info.UserMetadata[shaKey], Size: info.Size}
	if info.Metadata != nil {
		if t, err := time.Parse(time.RFC3339, info.Metadata.Get("X-Amz-Object-Lock-Retain-Until-Date")); err == nil {
			st.RetainUntil = t
		}
	}
	return st, nil
}

// Get returns the document under key after checking it against its SHA-256.
func (a *Archive) Get(ctx context.Context, key string) ([]byte, Stored, error) {
	st, err := a.Stat(ctx, key)
	if err != nil {
		return nil, st, err
	}
	obj, err := a.c.GetObject(ctx, a.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, st, fmt.Errorf("archive: get %s: %w", key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return nil, st, fmt.Errorf("archive: read %s: %w", key, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != st.SHA256 {
		return nil, st, fmt.Errorf("%w: %s", ErrCorrupt, key)
	}
	return data, st, nil
}
