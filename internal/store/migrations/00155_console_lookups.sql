-- +goose Up
-- The console's lookups, each on an index instead of a scan of the project:
-- orders newest first and counted by day, found by the buyer's e-mail;
-- orders waiting or held, counted by reason; documents counted by issue day
-- and listed by issue date (a period's page walks that index in order); the
-- request log searched per project and time (every daily partition).
CREATE INDEX orders_project_created ON orders (project_id, created_at, id);
CREATE INDEX orders_project_email ON orders (project_id, lower(content->>'email')) WHERE content->>'email' IS NOT NULL;
CREATE INDEX order_view_waiting ON order_view (project_id, waiting_for) WHERE waiting_for <> 'none';
CREATE INDEX order_view_held ON order_view (project_id) WHERE holds <> '[]'::jsonb;
CREATE INDEX invoice_view_issue ON invoice_view (project_id, issue_date, seq);
CREATE INDEX request_log_project_at ON request_log (project_id, at);

-- +goose Down
DROP INDEX request_log_project_at;
DROP INDEX invoice_view_issue;
DROP INDEX order_view_held;
DROP INDEX order_view_waiting;
DROP INDEX orders_project_email;
DROP INDEX orders_project_created;
