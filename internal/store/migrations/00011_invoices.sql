-- +goose Up
-- Invoice number ranges: one counter row per project and range (for example
-- TEST-2026 or RE-2026). Numbers are taken by incrementing the row inside
-- the transaction that records the invoices, so the row lock serialises
-- concurrent invoicers and a rolled-back transaction gives its numbers back:
-- gapless, never reused.
CREATE TABLE number_ranges (
    project_id uuid NOT NULL,
    range_key  text NOT NULL,
    next_seq   bigint NOT NULL CHECK (next_seq >= 1),
    PRIMARY KEY (project_id, range_key)
);

-- Issued documents (the write model). xml is the EN 16931 CII document as
-- computed; the archive stores it write-once. status: created (validated),
-- failed (validation found errors: never archived, a review task lists the
-- rule ids), archived.
CREATE TABLE invoices (
    id                uuid PRIMARY KEY,
    project_id        uuid NOT NULL,
    order_id          uuid NOT NULL REFERENCES orders (id),
    order_no          text NOT NULL,
    payment_ref       text,
    number            text NOT NULL,
    range_key         text NOT NULL,
    seq               bigint NOT NULL,
    type              text NOT NULL CHECK (type IN ('invoice', 'voucher_sale', 'cancellation')),
    type_code         text NOT NULL,
    format            text NOT NULL CHECK (format IN ('zugferd', 'xrechnung')),
    status            text NOT NULL CHECK (status IN ('created', 'archived', 'failed')),
    version           bigint NOT NULL DEFAULT 1,
    issue_date        date NOT NULL,
    currency          text NOT NULL,
    total_net_cents   bigint NOT NULL,
    total_tax_cents   bigint NOT NULL,
    total_gross_cents bigint NOT NULL,
    due_cents         bigint NOT NULL,
    test_mode         boolean NOT NULL,
    oss_report        boolean NOT NULL DEFAULT false,
    ec_sales_list     boolean NOT NULL DEFAULT false,
    failed_rules      text[] NOT NULL DEFAULT '{}',
    xml               bytea NOT NULL,
    cancels           uuid REFERENCES invoices (id),
    created_at        timestamptz NOT NULL DEFAULT now(),
    archived_at       timestamptz,
    UNIQUE (project_id, number),
    UNIQUE (project_id, range_key, seq)
);
CREATE INDEX invoices_order ON invoices (order_id);

-- +goose Down
DROP TABLE invoices;
DROP TABLE number_ranges;
