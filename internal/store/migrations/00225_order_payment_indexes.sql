-- +goose NO TRANSACTION
-- +goose Up
-- The issue of a paid order reads its payment (payments by order_id), a
-- refund's credit note the order's last refund (provider_refunds by
-- order_id), and the removal of an order's test data checks both foreign
-- keys for every order it deletes. Neither column had an index: each of
-- these read the whole table, which only grows (a year of a marketplace's
-- payments). Built concurrently, so that the payment provider's webhooks
-- are not held while a large table is indexed; should a build fail, the
-- invalid index it leaves is dropped by hand before the migration runs
-- again.
CREATE INDEX CONCURRENTLY payments_order ON payments (order_id) WHERE order_id IS NOT NULL;
CREATE INDEX CONCURRENTLY provider_refunds_order ON provider_refunds (order_id);

-- +goose Down
DROP INDEX CONCURRENTLY provider_refunds_order;
DROP INDEX CONCURRENTLY payments_order;
