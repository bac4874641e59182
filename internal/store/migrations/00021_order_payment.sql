-- +goose Up
-- The payment state of an order's status record: pending, open (an open
-- item of an invoice-first gateway), paid, credit.
ALTER TABLE order_view ADD COLUMN payment text NOT NULL DEFAULT 'pending';

-- +goose Down
ALTER TABLE order_view DROP COLUMN payment;
