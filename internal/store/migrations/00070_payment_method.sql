-- +goose Up
-- How the buyer paid, as the payment provider reported it (card with funding
-- and last four digits, SEPA direct debit with its mandate, PayPal, ...):
-- the invoice says so instead of asking for the money again.
ALTER TABLE payments ADD COLUMN method jsonb;

-- +goose Down
ALTER TABLE payments DROP COLUMN method;
