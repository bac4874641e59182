-- +goose Up
-- Everything an order waits for, in process order (payment, then
-- fulfillment), beside waiting_for (its first entry): decided by the
-- projector with the lifecycle rules. A row written before knew one reason:
-- it is carried over. An unpaid order of goods not shipped yet said
-- fulfillment then and says payment, fulfillment from its next event on, or
-- at once after `o2i projection rebuild --from-beginning`. Every row takes a
-- new revision, so that `o2i projection rebuild` replaces the Redis copies
-- written without the field.
ALTER TABLE order_view ADD COLUMN waiting_for_all text[] NOT NULL DEFAULT '{}';
UPDATE order_view SET rev = nextval('read_model_rev'),
    waiting_for_all = CASE WHEN waiting_for <> 'none' THEN ARRAY[waiting_for] ELSE '{}' END;

-- +goose Down
ALTER TABLE order_view DROP COLUMN waiting_for_all;
