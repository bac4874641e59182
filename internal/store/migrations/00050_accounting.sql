-- +goose Up
-- Accounting exports. A project with a debtor per customer keeps each
-- customer's DATEV debtor account here: given on the first export that
-- books the customer (10001, 10002, ... after the project's collective
-- debtor), never changed after, so every later export books the customer on
-- the same account.
CREATE TABLE accounting_debtors (
    project_id   uuid NOT NULL,
    customer_key text NOT NULL,
    account      integer NOT NULL CHECK (account BETWEEN 10000 AND 69999),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, customer_key),
    UNIQUE (project_id, account)
);

-- The exports read a project's live documents by issue date and its paid
-- orders by payment time.
CREATE INDEX invoices_live_issue ON invoices (project_id, issue_date) WHERE NOT test_mode;
CREATE INDEX orders_paid_at ON orders (project_id, paid_at) WHERE paid_at IS NOT NULL;

-- +goose Down
DROP INDEX orders_paid_at;
DROP INDEX invoices_live_issue;
DROP TABLE accounting_debtors;
