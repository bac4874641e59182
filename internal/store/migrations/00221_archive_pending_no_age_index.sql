-- +goose Up
-- No read of archive_pending uses its age index: the console's oldest
-- awaiting document of a project takes archive_pending_range (its project
-- prefix), and the repair's claim reads every row, since its condition
-- (failed, or issued more than a minute ago) is on the invoice's status.
-- The index only cost each issue an entry and each mark its removal.
DROP INDEX archive_pending_age;

-- +goose Down
CREATE INDEX archive_pending_age ON archive_pending (created_at);
