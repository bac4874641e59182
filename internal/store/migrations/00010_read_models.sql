-- +goose Up
-- Read models, written only by the projectors from the events. rev is a
-- global revision taken from read_model_rev on every change: it orders
-- writes and is the ETag of GET /v1/orders/{orderNo} and /v1/invoices/{ref}.
CREATE SEQUENCE read_model_rev;

-- Order status: exactly what GET /v1/orders/{orderNo} returns. Redis holds a
-- copy; this table is the fallback and the source of a Redis rebuild.
CREATE TABLE order_view (
    project_id         uuid NOT NULL,
    order_no           text NOT NULL,
    order_id           uuid,
    order_version      bigint NOT NULL DEFAULT 0, -- last applied order event's aggregate version
    status             text NOT NULL DEFAULT 'created',
    fulfillment_status text NOT NULL DEFAULT 'unfulfilled',
    invoices           jsonb NOT NULL DEFAULT '[]'::jsonb, -- [{id, number, status, url}], oldest first
    rev                bigint NOT NULL,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, order_no)
);

-- Invoice metadata for lookups and the cursor-paginated listing. seq is an
-- immutable, unique key in arrival order: the listing walks it (keyset).
CREATE TABLE invoice_view (
    seq               bigint GENERATED ALWAYS AS IDENTITY,
    project_id        uuid NOT NULL,
    id                uuid NOT NULL,
    version           bigint NOT NULL,
    number            text NOT NULL,
    status            text NOT NULL CHECK (status IN ('created', 'archived', 'failed')),
    order_no          text NOT NULL,
    payment_ref       text,
    type              text NOT NULL,
    format            text NOT NULL,
    issue_date        date NOT NULL,
    currency          text NOT NULL,
    total_net_cents   bigint NOT NULL,
    total_tax_cents   bigint NOT NULL,
    total_gross_cents bigint NOT NULL,
    test_mode         boolean NOT NULL,
    created_at        timestamptz NOT NULL,
    archived_at       timestamptz,
    rev               bigint NOT NULL,
    PRIMARY KEY (project_id, id),
    UNIQUE (seq)
);
CREATE INDEX invoice_view_list ON invoice_view (project_id, seq);
CREATE INDEX invoice_view_status ON invoice_view (project_id, status, seq);
CREATE INDEX invoice_view_number ON invoice_view (project_id, number, seq);
CREATE INDEX invoice_view_order ON invoice_view (project_id, order_no, seq);
CREATE INDEX invoice_view_payment ON invoice_view (project_id, payment_ref, seq) WHERE payment_ref IS NOT NULL;

-- Events a projector could not decode or apply by their content (poison
-- messages): kept for a person, never silently skipped.
CREATE TABLE projection_dead_letters (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    projector   text NOT NULL,
    topic       text NOT NULL,
    partition   integer NOT NULL,
    "offset"    bigint NOT NULL,
    msg_key     text,
    payload     bytea NOT NULL,
    error       text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);

-- Secrets the replicas share, created on first use (for example the key that
-- signs listing cursors).
CREATE TABLE service_secrets (
    name       text PRIMARY KEY,
    value      bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE service_secrets;
DROP TABLE projection_dead_letters;
DROP TABLE invoice_view;
DROP TABLE order_view;
DROP SEQUENCE read_model_rev;
