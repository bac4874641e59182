-- +goose Up
-- Order events the invoicer could not handle (issue or archive) after its
-- attempts: kept with the error and a review task, so that the partition
-- moves on. The reconciler retries each with a growing delay until it
-- succeeds (resolved_at) — a cause the seller or an operator fixes needs no
-- new event.
CREATE TABLE invoicing_dead_letters (
  id            uuid PRIMARY KEY,
  project_id    uuid NOT NULL REFERENCES projects (id),
  order_id      uuid NOT NULL,
  order_no      text NOT NULL,
  event_id      text NOT NULL,
  payload       bytea NOT NULL,
  error         text NOT NULL,
  attempts      integer NOT NULL,
  retries       integer NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL DEFAULT now(),
  next_retry_at timestamptz NOT NULL,
  resolved_at   timestamptz
);
-- One open dead letter per order: a later event of the same order updates it.
CREATE UNIQUE INDEX invoicing_dead_letters_open ON invoicing_dead_letters (order_id) WHERE resolved_at IS NULL;
CREATE INDEX invoicing_dead_letters_due ON invoicing_dead_letters (next_retry_at) WHERE resolved_at IS NULL;

-- How a task was resolved (for example "retried: invoiced"), shown with it.
ALTER TABLE tasks ADD COLUMN resolution text;

-- +goose Down
ALTER TABLE tasks DROP COLUMN resolution;
DROP TABLE invoicing_dead_letters;
