-- +goose Up
-- Refunds reported by the payment provider (charge.refunded). A full refund
-- cancels the order (its documents get cancellations); a partial refund is
-- pending on the order until the invoicer issues its credit note
-- (credit_note, type code 381) against the order's invoice.
ALTER TABLE orders ADD COLUMN refunded_cents bigint NOT NULL DEFAULT 0,
  ADD COLUMN refund_pending_cents bigint NOT NULL DEFAULT 0;
ALTER TABLE invoices DROP CONSTRAINT invoices_type_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_type_check CHECK (type IN ('invoice', 'voucher_sale', 'cancellation', 'credit_note'));

-- +goose Down
ALTER TABLE invoices DROP CONSTRAINT invoices_type_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_type_check CHECK (type IN ('invoice', 'voucher_sale', 'cancellation'));
ALTER TABLE orders DROP COLUMN refund_pending_cents, DROP COLUMN refunded_cents;
