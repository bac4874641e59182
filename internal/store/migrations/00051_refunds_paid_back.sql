-- +goose Up
-- The money paid back by the payment provider, one row per refund report
-- that refunded something new (charge.refunded: the increment over what
-- was refunded before), so the accounting export books each refund on the
-- day it was reported, a whole-charge refund (which cancels the order)
-- included. Rows go with their order or payment (a reset of test data
-- deletes test orders).
CREATE TABLE provider_refunds (
    payment_id   uuid PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
    project_id   uuid NOT NULL,
    order_id     uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    amount_cents bigint NOT NULL CHECK (amount_cents > 0),
    full_refund  boolean NOT NULL
);
CREATE INDEX provider_refunds_project ON provider_refunds (project_id);

-- +goose Down
DROP TABLE provider_refunds;
