-- +goose Up
-- The outbox is read, purged and dead-lettered in position order, by
-- (tx_id, id); nothing looks a row up by its id alone. So the position is
-- the primary key, and the id's own index goes: one index entry less for
-- every event written. The id stays unique by its identity sequence.
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey;
ALTER TABLE outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (tx_id, id);
DROP INDEX outbox_position;

-- +goose Down
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey;
ALTER TABLE outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);
CREATE INDEX outbox_position ON outbox (tx_id, id);
