-- +goose Up
-- Bank-transfer payment orders at the payment provider (paymentGateway
-- provider_transfer): one per order, created before its invoice, whose
-- virtual IBAN and reference the invoice shows. cancelled_at: the provider
-- cancelled the payment intent before payment (payment_intent.canceled).
-- generation counts the payment orders of the order: a correction that
-- changes the amount replaces the payment intent (the old one is cancelled
-- at the provider), and the generation is part of the Idempotency-Key.
CREATE TABLE provider_transfers (
    order_id          uuid PRIMARY KEY REFERENCES orders (id) ON DELETE CASCADE,
    project_id        uuid NOT NULL REFERENCES projects (id),
    order_no          text NOT NULL,
    customer_id       text NOT NULL,
    payment_intent_id text NOT NULL,
    amount_cents      bigint NOT NULL,
    currency          text NOT NULL,
    iban              text NOT NULL,
    bic               text,
    account_holder    text,
    reference         text NOT NULL,
    generation        integer NOT NULL DEFAULT 1,
    created_at        timestamptz NOT NULL DEFAULT now(),
    cancelled_at      timestamptz,
    UNIQUE (project_id, payment_intent_id)
);

-- +goose Down
DROP TABLE provider_transfers;
