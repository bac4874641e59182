package query

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/store"
)

// anchoredObject returns the anchor of an invoice's archived object (kind
// xml, pdf or manifest), its bucket and, for an XML archived only inside the
// PDF, the PDF's anchor (else the zero Stored); pgx.ErrNoRows when none is
// recorded. An anchor with a byte offset names a part of its object (a PDF
// in a document batch, a manifest in a manifest batch).
func anchoredObject(ctx context.Context, pool *pgxpool.Pool, projectID, invoiceID, kind string) (st archive.Stored, bucket string, in archive.Stored, err error) {
	var until, inUntil *time.Time
	var inKey, inVersion, inSHA *string
	var inSize, offset, inOffset *int64
	err = store.QueryRow(ctx, pool, `SELECT o.bucket, o.object_key, o.version_id, o.sha256, o.size, o.retain_until, o.byte_offset,
			p.object_key, p.version_id, p.sha256, p.size, p.retain_until, p.byte_offset
		FROM archive_objects o LEFT JOIN archive_objects p ON o.embedded_in IS NOT NULL AND p.invoice_id = o.invoice_id AND p.kind = o.embedded_in
		WHERE o.project_id = $1 AND o.invoice_id = $2 AND o.kind = $3`, projectID, invoiceID, kind).
		Scan(&bucket, &st.Key, &st.VersionID, &st.SHA256, &st.Size, &until, &offset, &inKey, &inVersion, &inSHA, &inSize, &inUntil, &inOffset)
	st.Anchored(until, offset)
	if inKey != nil {
		in = archive.Stored{Key: *inKey, VersionID: *inVersion, SHA256: *inSHA, Size: *inSize}
		in.Anchored(inUntil, inOffset)
	}
	return st, bucket, in, err
}
