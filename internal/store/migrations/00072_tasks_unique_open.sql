-- +goose Up
-- One open task per (project, kind, subject): concurrent writers that both
-- found none open used to insert two (and mail two urgent notices). Open
-- duplicates left by that are resolved first, the oldest kept; a cause can
-- open again once its task is resolved.
UPDATE tasks t SET status = 'resolved', resolved_at = now(), resolution = 'duplicate of an older open task'
  FROM tasks o
 WHERE t.status = 'open' AND o.status = 'open'
   AND o.project_id = t.project_id AND o.kind = t.kind AND o.subject = t.subject
   AND (o.created_at, o.id) < (t.created_at, t.id);
DROP INDEX tasks_open;
CREATE UNIQUE INDEX tasks_open ON tasks (project_id, kind, subject) WHERE status = 'open';

-- +goose Down
DROP INDEX tasks_open;
CREATE INDEX tasks_open ON tasks (project_id, kind, subject) WHERE status = 'open';
