-- +goose Up
-- Corrections and cancellations (GoBD: an issued invoice is never changed).
-- An invoiced order whose invoice-relevant content or date of supply changes
-- goes back to 'created' with correction_pending: the invoicer cancels its
-- documents (a cancellation each, referencing the original) and issues new
-- ones when the order is due again. A cancelled order ('cancelled') gets
-- cancellations for its documents and no new invoice.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('created', 'invoiced', 'cancelled'));
ALTER TABLE orders ADD COLUMN correction_pending boolean NOT NULL DEFAULT false;

-- The computed document (the invoice value the XML was rendered from), so
-- that its cancellation mirrors it exactly; documents issued before this
-- column existed have none.
ALTER TABLE invoices ADD COLUMN document jsonb;
-- A document is cancelled at most once.
CREATE UNIQUE INDEX invoices_cancels ON invoices (cancels) WHERE cancels IS NOT NULL;

-- +goose Down
DROP INDEX invoices_cancels;
ALTER TABLE invoices DROP COLUMN document;
ALTER TABLE orders DROP COLUMN correction_pending;
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('created', 'invoiced'));
