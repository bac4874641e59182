-- +goose Up
-- The console's search by the buyer's e-mail reads the newest 100 orders of
-- an address in the index's order; with only (project_id, e-mail) the planner
-- could walk the project's orders newest first and filter every one.
CREATE INDEX orders_project_email_created ON orders (project_id, lower(content->>'email'), created_at) WHERE content->>'email' IS NOT NULL;
DROP INDEX orders_project_email;

-- +goose Down
CREATE INDEX orders_project_email ON orders (project_id, lower(content->>'email')) WHERE content->>'email' IS NOT NULL;
DROP INDEX orders_project_email_created;
