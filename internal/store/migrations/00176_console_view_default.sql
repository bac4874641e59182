-- +goose Up
-- A session looks at the data of its project's mode (test for a project in
-- test mode) until it chooses with the header's switch: NULL is "not chosen".
ALTER TABLE console_sessions ALTER COLUMN view_test DROP NOT NULL, ALTER COLUMN view_test DROP DEFAULT;
UPDATE console_sessions SET view_test = NULL WHERE NOT view_test;

-- +goose Down
UPDATE console_sessions SET view_test = false WHERE view_test IS NULL;
ALTER TABLE console_sessions ALTER COLUMN view_test SET DEFAULT false, ALTER COLUMN view_test SET NOT NULL;
