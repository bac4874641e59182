package archive

import (
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

func notFound(err error) bool {
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NoSuchVersion":
		return true
	}
	return false
}

// statVersion describes one version of key ("" the latest), its retention
// as the store reports it, without reading the bytes.
func (a *Archive) statVersion(ctx context.Context, key, versionID string) (minio.ObjectInfo, error) {
	info, err := a.c.StatObject(ctx, a.bucket, key, minio.StatObjectOptions{VersionID: versionID})
	if err != nil {
		if notFound(err) {
			return info, fmt.Errorf("%w: %s version %q", ErrNotFound, key, versionID)
		}
		return info, fmt.Errorf("archive: stat %s: %w", key, err)
	}
	return info, nil
}

// GetVersion reads one version of key ("" the latest) and returns it with
// the SHA-256 and size computed from the bytes read (not taken from the
// object's metadata) and the retain-until the store reports.
func (a *Archive) GetVersion(ctx context.Context, key, versionID string) ([]byte, Stored, error) {
	var buf writerBuffer
	st, _, err := a.copyVersion(ctx, &buf, key, versionID)
	return buf.b, st, err
}

type writerBuffer struct{ b []byte }

func (w *writerBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// copyVersion streams one version of key to w and describes it; meta is
// the SHA-256 its own metadata claims. One request: the object is described
// from the GET's response, not by a HEAD before it.
func (a *Archive) copyVersion(ctx context.Context, w io.Writer, key, versionID string) (st Stored, meta string, err error) {
	return a.copyPart(ctx, w, Stored{Key: key, VersionID: versionID})
}

// copyPart is copyVersion of the document want names: the whole version,
// or for a document in a batch (want.InBatch) its bytes alone, read by a
// ranged GET; st then describes those bytes.
func (a *Archive) copyPart(ctx context.Context, w io.Writer, want Stored) (st Stored, meta string, err error) {
	key := want.Key
	st = Stored{Key: key, VersionID: want.VersionID, InBatch: want.InBatch, Offset: want.Offset}
	opts := minio.GetObjectOptions{VersionID: want.VersionID}
	if want.InBatch {
		if want.Size <= 0 || want.Offset < 0 {
			return st, "", fmt.Errorf("archive: get %s: a part of %d bytes at %d", key, want.Size, want.Offset)
		}
		if err := opts.SetRange(want.Offset, want.Offset+want.Size-1); err != nil {
			return st, "", fmt.Errorf("archive: get %s: %w", key, err)
		}
	}
	obj, err := a.c.GetObject(ctx, a.bucket, key, opts)
	if err != nil {
		return st, "", fmt.Errorf("archive: get %s: %w", key, err)
	}
	defer obj.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), obj)
	if err != nil {
		if notFound(err) {
			return st, "", fmt.Errorf("%w: %s version %q", ErrNotFound, key, want.VersionID)
		}
		if want.InBatch && minio.ToErrorResponse(err).StatusCode == http.StatusRequestedRangeNotSatisfiable {
			// The object is shorter than the recorded part: not the document.
			return st, "", nil
		}
		return st, "", fmt.Errorf("archive: read %s: %w", key, err)
	}
	info, err := obj.Stat() // after the read: the GET's response headers
	if err != nil {
		return st, "", fmt.Errorf("archive: get %s: %w", key, err)
	}
	st.VersionID = info.VersionID
	if t, err := time.Parse(time.RFC3339, info.Metadata.Get("X-Amz-Object-Lock-Retain-Until-Date")); err == nil {
		st.RetainUntil = t
	}
	st.Size, st.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return st, info.UserMetadata[shaKey], nil
}

// Verified reads the version want names and returns its bytes when their
// SHA-256 and size are the ones recorded in want (the database's anchor);
// ErrCorrupt when not, ErrNotFound when the version is gone.
func (a *Archive) Verified(ctx context.Context, want Stored) ([]byte, error) {
	var buf writerBuffer
	got, _, err := a.copyPart(ctx, &buf, want)
	data := buf.b
	if err != nil {
		return nil, err
	}
	if got.SHA256 != want.SHA256 || got.Size != want.Size {
		return nil, fmt.Errorf("%w: %s version %q", ErrCorrupt, want.Key, want.VersionID)
	}
	return data, nil
}

// CopyVerified streams the version want names to w and then checks its
// SHA-256 and size against want: on ErrCorrupt, w has received bytes that
// are not the archived document and the caller must discard them.
func (a *Archive) CopyVerified(ctx context.Context, w io.Writer, want Stored) error {
	got, _, err := a.copyPart(ctx, w, want)
	if err != nil {
		return err
	}
	if got.SHA256 != want.SHA256 || got.Size != want.Size {
		return fmt.Errorf("%w: %s version %q", ErrCorrupt, want.Key, want.VersionID)
	}
	return nil
}

// Problem is one finding of Check.
type Problem struct {
	Key       string `json:"key"`
	VersionID string `json:"versionId"`
	Kind      string `json:"problem"` // missing, altered, replaced, retention, unreadable
	Detail    string `json:"detail"`
}

// Check re-reads the version want names (a document in a batch: its bytes
// in the version) and compares it with the anchor:
// the version must exist (missing), its bytes must have want's SHA-256 and
// size (altered), it must still be the key's current version (replaced),
// and in a locked archive it must have COMPLIANCE retention until
// want.RetainUntil (retention). It returns the bytes read (nil when
// missing) and the problems found.
func (a *Archive) Check(ctx context.Context, want Stored) ([]byte, []Problem) {
	p := func(kind, format string, args ...any) Problem {
		return Problem{Key: want.Key, VersionID: want.VersionID, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	}
	var buf writerBuffer
	got, _, err := a.copyPart(ctx, &buf, want)
	data := buf.b
	if errors.Is(err, ErrNotFound) {
		return nil, []Problem{p("missing", "the recorded version is gone from bucket %s", a.bucket)}
	}
	if err != nil {
		return nil, []Problem{p("unreadable", "%v", err)}
	}
	var out []Problem
	if got.SHA256 != want.SHA256 || got.Size != want.Size {
		out = append(out, p("altered", "stored bytes have SHA-256 %s and %d bytes, recorded %s and %d bytes", got.SHA256, got.Size, want.SHA256, want.Size))
	}
	if latest, err := a.statVersion(ctx, want.Key, ""); err != nil {
		out = append(out, p("replaced", "the key has no current version: %v", err))
	} else if latest.VersionID != want.VersionID {
		out = append(out, p("replaced", "the key's current version is %q, recorded %q", latest.VersionID, want.VersionID))
	}
	if a.locked {
		mode, until, err := a.c.GetObjectRetention(ctx, a.bucket, want.Key, want.VersionID)
		switch {
		case err != nil:
			out = append(out, p("retention", "retention unreadable: %v", err))
		case mode == nil || *mode != minio.Compliance:
			out = append(out, p("retention", "retention mode is not COMPLIANCE"))
		case until == nil || !until.Equal(want.RetainUntil):
			out = append(out, p("retention", "retained until %v, recorded %s", until, want.RetainUntil.UTC().Format(time.RFC3339)))
		}
	}
	return data, out
}

// RemoveKey removes every version of exactly key. Only an archive without
// retention (test documents) may: a locked archive refuses.
func (a *Archive) RemoveKey(ctx context.Context, key string) (int, error) {
	if a.locked {
		return 0, fmt.Errorf("archive: bucket %s keeps documents under retention; nothing is removed", a.bucket)
	}
	n := 0
	for obj := range a.c.ListObjects(ctx, a.bucket, minio.ListObjectsOptions{Prefix: key, Recursive: true, WithVersions: true}) {
		if obj.Err != nil {
			return n, fmt.Errorf("archive: list %s: %w", key, obj.Err)
		}
		if obj.Key != key {
			continue
		}
		if err := a.c.RemoveObject(ctx, a.bucket, obj.Key, minio.RemoveObjectOptions{VersionID: obj.VersionID}); err != nil {
			return n, fmt.Errorf("archive: remove %s: %w", obj.Key, err)
		}
		n++
	}
	a.recent.forget(key)
	return n, nil
}

// TestArchive returns the separate archive of test documents, or nil when
// test documents share this bucket.
func (a *Archive) TestArchive() *Archive { return a.test }
