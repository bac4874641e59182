-- +goose Up
-- seq is an identity and unique by construction. A separate unique index on
-- seq alone tempted the planner into walking every project's invoices in seq
-- order for filtered listings; (project_id, seq) and the per-filter indexes
-- are what the listing needs.
ALTER TABLE invoice_view DROP CONSTRAINT invoice_view_seq_key;

-- +goose Down
ALTER TABLE invoice_view ADD CONSTRAINT invoice_view_seq_key UNIQUE (seq);
