-- +goose Up
-- Orders carry no foreign key to projects: every insert would take a KEY SHARE
-- lock on the one hot project row, and under load those locks serialise into
-- multixacts. The project exists because the API key that wrote the order
-- belongs to it. (00002 no longer creates the key; this removes it where an
-- earlier 00002 did.)
ALTER TABLE orders DROP CONSTRAINT IF EXISTS orders_project_id_fkey;

-- The relay marks published outbox rows (sent_at) instead of deleting them,
-- so recent events stay inspectable; rows sent more than the retention ago
-- are deleted by the leading relay.
ALTER TABLE outbox ADD COLUMN sent_at timestamptz;
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX outbox_created ON outbox USING brin (created_at);

-- +goose Down
DROP INDEX outbox_created;
DROP INDEX outbox_unsent;
ALTER TABLE outbox DROP COLUMN sent_at;
