-- +goose Up
-- The console lists a project's live or its test orders: its test orders,
-- few beside the live ones, have an index of their own.
CREATE INDEX orders_project_test_created ON orders (project_id, created_at, id) WHERE test_mode;

-- +goose Down
DROP INDEX orders_project_test_created;
