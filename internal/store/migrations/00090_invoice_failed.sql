-- +goose Up
-- An issued document whose rendering or archiving still failed after the
-- invoicer's attempts is failed: it keeps its number and its XML, and the
-- reconciler's retry archives that same document (status archived, both
-- columns cleared). failure_reason is the last failure; failure_task_id the
-- order's invoicing_failed review task. Documents that earlier versions
-- recorded as failed because they broke rules (failed_rules not empty) are
-- never archived. The read model shows both columns.
ALTER TABLE invoices ADD COLUMN failure_reason text, ADD COLUMN failure_task_id uuid;
ALTER TABLE invoice_view ADD COLUMN failure_reason text, ADD COLUMN failure_task_id uuid;
-- The reconciler finds failed documents whose order has no open dead letter.
CREATE INDEX invoices_failed ON invoices (created_at) WHERE status = 'failed';

-- +goose Down
DROP INDEX invoices_failed;
ALTER TABLE invoice_view DROP COLUMN failure_task_id, DROP COLUMN failure_reason;
ALTER TABLE invoices DROP COLUMN failure_task_id, DROP COLUMN failure_reason;
