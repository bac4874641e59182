-- +goose Up
-- The invoicer's retry table. A failed order event is no longer tried again
-- inline: it goes here at once and is retried with per-item backoff (1 s,
-- doubling, at most 30 s) by the invoicer role of the consumer group that
-- recorded it (consumer_group). Its invoicing_failed review task is opened
-- only when it keeps failing (task_opened_at): at once for a failure that can
-- never go away, else after 5 retries or 10 minutes. Rows from before were
-- recorded with their task.
ALTER TABLE invoicing_dead_letters
  ADD COLUMN consumer_group text NOT NULL DEFAULT 'o2i-invoicer',
  ADD COLUMN task_opened_at timestamptz;
UPDATE invoicing_dead_letters SET task_opened_at = created_at;
DROP INDEX invoicing_dead_letters_due;
CREATE INDEX invoicing_dead_letters_due ON invoicing_dead_letters (consumer_group, next_retry_at) WHERE resolved_at IS NULL;

-- The archive repair's per-document backoff: a document issued but not
-- archived (or failed without a retry of its order) that the repair tried
-- and could not archive waits next_attempt_at (15 s, doubling, at most
-- 15 minutes), so one that can never be archived never hides the documents
-- behind it. A row is also the repair's claim while it works on the document
-- (next_attempt_at in the future), so two invoicers never repair one at once.
-- Removed when the document is archived.
CREATE TABLE archive_repairs (
  invoice_id      uuid PRIMARY KEY,
  project_id      uuid NOT NULL,
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_error      text,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX archive_repairs_due ON archive_repairs (next_attempt_at);

-- +goose Down
DROP TABLE archive_repairs;
DROP INDEX invoicing_dead_letters_due;
CREATE INDEX invoicing_dead_letters_due ON invoicing_dead_letters (next_retry_at) WHERE resolved_at IS NULL;
ALTER TABLE invoicing_dead_letters DROP COLUMN task_opened_at, DROP COLUMN consumer_group;
