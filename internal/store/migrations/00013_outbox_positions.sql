-- +goose Up
-- The relay no longer marks each published row (an UPDATE rewrote every
-- ~2 KB event once more). Each relay keeps a position instead: the
-- (tx_id, id) of the last row it published. Rows are read in (tx_id, id)
-- order and only from transactions older than every running one
-- (tx_id < pg_snapshot_xmin), so a transaction that commits late is never
-- skipped: its rows become readable only once nothing older is running, and
-- they sort after every row read before.
DELETE FROM outbox WHERE sent_at IS NOT NULL; -- published already
ALTER TABLE outbox ADD COLUMN tx_id xid8 NOT NULL DEFAULT pg_current_xact_id();
DROP INDEX outbox_unsent;
ALTER TABLE outbox DROP COLUMN sent_at;
CREATE INDEX outbox_position ON outbox (tx_id, id);

CREATE TABLE outbox_relay_positions (
  relay      bigint PRIMARY KEY, -- the relay's leader lock key
  tx_id      xid8 NOT NULL,
  id         bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbox_relay_positions;
DROP INDEX outbox_position;
ALTER TABLE outbox ADD COLUMN sent_at timestamptz;
UPDATE outbox SET sent_at = now();
ALTER TABLE outbox DROP COLUMN tx_id;
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
