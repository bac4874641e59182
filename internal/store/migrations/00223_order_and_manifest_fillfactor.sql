-- +goose Up
-- Room in the page for the row's next version, so that the updates of the
-- pipeline are HOT: the order's save when it is invoiced (status, version,
-- updated_at, invoiced_at, holds, correction_pending: no index names one)
-- and the manifest's stored mark (stored_at: no index names it). Pages were
-- filled to the last byte, so nine of ten of these updates wrote their row
-- anew in another page with an entry in every index: seven of orders, four
-- of archive_manifests, about 2 KB of WAL an invoice between them. A row of
-- either is about 1.5 KB. Pages written from now on keep the room; the rows
-- of pages written before move as they did.
ALTER TABLE orders SET (fillfactor = 80);
ALTER TABLE archive_manifests SET (fillfactor = 70);

-- +goose Down
ALTER TABLE orders RESET (fillfactor);
ALTER TABLE archive_manifests RESET (fillfactor);
