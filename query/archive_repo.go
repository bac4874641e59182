package query

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/store"
)

// anchoredObject returns the anchor of an invoice's archived object (kind
// xml, pdf or manifest) and its bucket; pgx.ErrNoRows when none is recorded.
func anchoredObject(ctx context.Context, pool *pgxpool.Pool, projectID, invoiceID, kind string) (archive.Stored, string, error) {
	var st archive.Stored
	var bucket string
	var until *time.Time
	err := store.QueryRow(ctx, pool, `SELECT bucket, object_key, version_id, sha256, size, retain_until FROM archive_objects
		WHERE project_id = $1 AND invoice_id = $2 AND kind = $3`, projectID, invoiceID, kind).
		Scan(&bucket, &st.Key, &st.VersionID, &st.SHA256, &st.Size, &until)
	if until != nil {
		st.RetainUntil = *until
	}
	return st, bucket, err
}
