-- +goose Up
-- Where each number range's chain stands in number order: the number (seq)
-- of the last document the chain took as the range's next one. Every
-- document of the range that awaits its archive and has a smaller seq is
-- chained already, so the chain's read of the documents to chain starts
-- after it instead of walking the range's archived documents from its first
-- number. A document archived before the anchor (backfill), chained at the
-- chain's end whatever its number, does not move it. A range without a row
-- is read from its start.
CREATE TABLE archive_chain_heads (
    project_id uuid NOT NULL REFERENCES projects (id),
    range_key  text NOT NULL,
    seq        bigint NOT NULL CHECK (seq > 0),
    PRIMARY KEY (project_id, range_key)
);

-- +goose Down
DROP TABLE archive_chain_heads;
