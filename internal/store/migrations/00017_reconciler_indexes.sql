-- +goose Up
-- The invoicer's reconciler walks open tasks (held orders to re-evaluate)
-- and invoices issued but not archived yet; GET /v1/tasks lists a
-- project's tasks in the order they were opened.
CREATE INDEX tasks_open_age ON tasks (created_at, id) WHERE status = 'open';
CREATE INDEX tasks_list ON tasks (project_id, created_at, id);
CREATE INDEX invoices_unarchived ON invoices (created_at) WHERE status = 'created';

-- +goose Down
DROP INDEX invoices_unarchived;
DROP INDEX tasks_list;
DROP INDEX tasks_open_age;
