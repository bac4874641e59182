-- +goose Up
-- The write side: orders, the product catalogue, fulfillments, store credit,
-- idempotency records, the transactional outbox and review tasks.

-- Product catalogue. Each order line is bound to one product: by the caller's
-- productId when sent, else by SKU, else by exact name (match_kind says which;
-- match_value is the productId, SKU or name). Rows are never deleted, so an
-- order line's catalog_product_id stays valid.
CREATE TABLE products (
    id                    uuid PRIMARY KEY,
    project_id            uuid NOT NULL REFERENCES projects (id),
    match_kind            text NOT NULL CHECK (match_kind IN ('product_id', 'sku', 'name')),
    match_value           text NOT NULL,
    name                  text NOT NULL,
    sku                   text,
    external_id           text, -- the caller's productId
    -- Revenue recognition default: NULL (not set: accrual projects hold
    -- orders without service_period as a review task), 'immediate' or 'saas'
    -- (deferred over default_period_months from the invoice date).
    revenue_recognition   text CHECK (revenue_recognition IN ('immediate', 'saas')),
    default_period_months integer CHECK (default_period_months > 0),
    -- VAT rate in percent used when a line sends no taxRate.
    default_tax_rate      numeric(7, 4) CHECK (default_tax_rate >= 0),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, match_kind, match_value)
);

-- Orders. content is the validated, normalised order input (the shape of
-- event.OrderContent) with every line's catalog_product_id; content_hash is
-- SHA-256 over it, invoice_hash SHA-256 over its invoice-relevant part.
-- version counts changes (1 on insert); events carry it so that read models
-- can ignore stale deliveries. status 'invoiced' freezes the invoice-relevant
-- content (a change is answered 409 order_already_invoiced).
CREATE TABLE orders (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL, -- no foreign key: KEY SHARE locks on one hot project row would serialise inserts
    order_no           text NOT NULL,
    status             text NOT NULL DEFAULT 'created' CHECK (status IN ('created', 'invoiced')),
    version            bigint NOT NULL DEFAULT 1,
    payment_ref        text,
    requires_shipping  boolean NOT NULL DEFAULT false,
    fulfillment_status text NOT NULL DEFAULT 'unfulfilled' CHECK (fulfillment_status IN ('unfulfilled', 'partial', 'fulfilled')),
    shipped_at         timestamptz,
    supplied_at        timestamptz, -- date of supply: shippedAt (or receipt time) of the fulfilled report
    tracking_number    text,
    content            jsonb NOT NULL,
    content_hash       bytea NOT NULL,
    invoice_hash       bytea NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    invoiced_at        timestamptz,
    CONSTRAINT orders_order_no_key UNIQUE (project_id, order_no)
);
CREATE UNIQUE INDEX orders_payment_ref_key ON orders (project_id, payment_ref) WHERE payment_ref IS NOT NULL;

-- Fulfillment reports as received, oldest first.
CREATE TABLE fulfillments (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL,
    order_id        uuid NOT NULL REFERENCES orders (id),
    status          text NOT NULL CHECK (status IN ('unfulfilled', 'partial', 'fulfilled')),
    shipped_at      timestamptz,
    tracking_number text,
    received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX fulfillments_order ON fulfillments (order_id);

-- Idempotency records: one per project, endpoint and Idempotency-Key, holding
-- the fingerprint of the request and the exact response. Kept at least 24
-- hours; the service deletes older ones.
CREATE TABLE idempotency_keys (
    project_id      uuid NOT NULL,
    endpoint        text NOT NULL,
    key             text NOT NULL,
    request_hash    bytea NOT NULL,
    response_status smallint NOT NULL,
    response_body   bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, endpoint, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys USING brin (created_at);

-- Transactional outbox: a row is written in the transaction of the state
-- change; the relay publishes it to Kafka (00003 adds sent_at).
CREATE TABLE outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id uuid,
    topic      text NOT NULL,
    msg_key    text NOT NULL,
    event_id   uuid NOT NULL,
    event_type text NOT NULL,
    payload    bytea NOT NULL, -- the encoded event envelope (JSON)
    created_at timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 5000);

-- Store credit: each transaction applied exactly once per caller id.
CREATE TABLE credit_transactions (
    project_id   uuid NOT NULL,
    id           text NOT NULL,
    type         text NOT NULL CHECK (type IN ('earn', 'redeem', 'reverse', 'payout', 'expire')),
    email        text NOT NULL,
    amount_cents bigint NOT NULL,
    occurred_at  timestamptz NOT NULL,
    order_ref    text,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, id)
);
CREATE INDEX credit_transactions_email ON credit_transactions (project_id, lower(email));

-- Review tasks: things a person has to look at (a credit balance that differs
-- from the transaction history, an order held back, ...). kind names the
-- situation; subject the order number, e-mail or other reference.
CREATE TABLE tasks (
    id          uuid PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id),
    kind        text NOT NULL,
    subject     text NOT NULL,
    details     jsonb NOT NULL DEFAULT '{}'::jsonb,
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
CREATE INDEX tasks_open ON tasks (project_id, kind, subject) WHERE status = 'open';

-- +goose Down
DROP TABLE tasks;
DROP TABLE credit_transactions;
DROP TABLE outbox;
DROP TABLE idempotency_keys;
DROP TABLE fulfillments;
DROP TABLE orders;
DROP TABLE products;
