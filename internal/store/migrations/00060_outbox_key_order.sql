-- +goose Up
-- The relay publishes rows in (tx_id, id) order, tx_id being the id of the
-- writing transaction. A transaction takes its id at its first write, so one
-- that wrote something (a payment, an idempotency record) before it waited
-- for another transaction's lock on the same order has the smaller id
-- although it commits later: its event of the order would be published
-- before the earlier one. So an event's tx_id is raised to the largest
-- tx_id of its key's rows still in the outbox: with the order's lock held,
-- the earlier change is committed and visible, and sorts first (by id). Rows
-- already published (or purged) belong to transactions older than any
-- running one, so they never need it. The relay still sees such a row only
-- once its own transaction has ended (it runs while the row's tx_id is not
-- below the snapshot's xmin).
CREATE INDEX outbox_key_tx ON outbox (msg_key, tx_id);

-- +goose StatementBegin
CREATE FUNCTION outbox_key_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    prior xid8;
BEGIN
    SELECT max(tx_id) INTO prior FROM outbox WHERE msg_key = NEW.msg_key;
    IF prior IS NOT NULL AND prior > NEW.tx_id THEN
        NEW.tx_id := prior;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER outbox_key_order BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION outbox_key_order();

-- +goose Down
DROP TRIGGER outbox_key_order ON outbox;
DROP FUNCTION outbox_key_order();
DROP INDEX outbox_key_tx;
