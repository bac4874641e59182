-- +goose Up
-- A number range's chain takes its documents in number order: the chain
-- transaction reads the range's documents not archived yet by seq (the
-- archivable ones not chained yet, whose objects may be anchored already).
CREATE INDEX invoices_to_chain ON invoices (project_id, range_key, seq) WHERE status IN ('created', 'failed');

-- +goose Down
DROP INDEX invoices_to_chain;
