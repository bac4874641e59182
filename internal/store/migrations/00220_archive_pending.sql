-- +goose Up
-- The documents that await their archive, kept beside their invoices rows
-- instead of in partial indexes of invoices on status. Every index of
-- invoices that names status (its key or its predicate) makes each change of
-- status write a new row version and an entry in every index: the archived
-- mark was never a HOT update (0 of 45,944 in a drain), and each one wrote
-- five index entries. With status in no index of invoices, the mark and the
-- failed mark change only columns no index holds, and with room left in the
-- page (fillfactor) the new version stays in its page and no index changes.
--
-- A row is written in the issue's statement and removed in the archived
-- mark's. Its columns are the invoice's, copied (they never change). It is
-- where to look, not the truth: every read joins the invoice and checks its
-- status, so a row left behind would be read and passed over, never archive
-- a document twice. No foreign key: its check would lock the invoice's row
-- in every issue for nothing the join does not already give.
CREATE TABLE archive_pending (
    invoice_id uuid PRIMARY KEY,
    project_id uuid NOT NULL,
    range_key  text NOT NULL,
    seq        bigint NOT NULL,
    created_at timestamptz NOT NULL
);
-- The chain's read of a range's documents to chain, in number order.
CREATE INDEX archive_pending_range ON archive_pending (project_id, range_key, seq);
-- The repair's claim and the console's oldest awaiting document.
CREATE INDEX archive_pending_age ON archive_pending (created_at);

INSERT INTO archive_pending (invoice_id, project_id, range_key, seq, created_at)
SELECT id, project_id, range_key, seq, created_at FROM invoices
WHERE status = 'created' OR status = 'failed' AND failed_rules = '{}';

DROP INDEX invoices_unarchived;
DROP INDEX invoices_failed;
DROP INDEX invoices_to_chain;

-- A row is about 3.5 KB (its XML and its document compressed inline), two
-- to a full page with no room for a third version. At 70 % an insert leaves
-- the room of one more version, so the mark's new version is written beside
-- the old one; the price is about one live row a page instead of two. It
-- applies to pages written from now on.
ALTER TABLE invoices SET (fillfactor = 70);

-- +goose Down
ALTER TABLE invoices RESET (fillfactor);
CREATE INDEX invoices_to_chain ON invoices (project_id, range_key, seq) WHERE status IN ('created', 'failed');
CREATE INDEX invoices_failed ON invoices (created_at) WHERE status = 'failed';
CREATE INDEX invoices_unarchived ON invoices (created_at) WHERE status = 'created';
DROP TABLE archive_pending;
