-- +goose Up
-- The money paid back by the payment provider, one row per refund report
-- that refunded something new (charge.refunded: the increment over what
-- was refunded before), so the accounting export books each refund on the
-- day it was reported, a whole-charge refund (which cancels the order)
-- included.
CREATE TABLE provider_refunds (
    payment_id   uuid PRIMARY KEY REFERENCES payments (id),
    project_id   uuid NOT NULL,
    order_id     uuid NOT NULL REFERENCES orders (id),
    amount_cents bigint NOT NULL CHECK (amount_cents > 0),
    full_refund  boolean NOT NULL
);
CREATE INDEX provider_refunds_project ON provider_refunds (project_id);

-- +goose Down
DROP TABLE provider_refunds;
