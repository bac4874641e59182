-- +goose Up
-- E-mail deliveries: written in the transaction that archives a document
-- (kind invoice: the document to the order's e-mail) or opens an urgent task
-- (kind task: a notice to the project's invoice contact); the mailer sends
-- the due ones, records every attempt and retries with growing delay.
-- status: pending (to be sent), sent, blocked (test mode: sending blocked).
CREATE TABLE mail_deliveries (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL REFERENCES projects (id),
    kind            text NOT NULL CHECK (kind IN ('invoice', 'task')),
    invoice_id      uuid UNIQUE REFERENCES invoices (id) ON DELETE CASCADE,
    task_id         uuid UNIQUE REFERENCES tasks (id) ON DELETE CASCADE,
    order_no        text NOT NULL,
    recipient       text NOT NULL,
    reply_to        text,
    status          text NOT NULL CHECK (status IN ('pending', 'sent', 'blocked')),
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    version         bigint NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'invoice') = (invoice_id IS NOT NULL)),
    CHECK ((kind = 'task') = (task_id IS NOT NULL))
);
CREATE INDEX mail_deliveries_due ON mail_deliveries (next_attempt_at) WHERE status = 'pending';

-- +goose Down
DROP TABLE mail_deliveries;
