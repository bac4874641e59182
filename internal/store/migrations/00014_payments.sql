-- +goose Up
-- Payments reported by the payment provider (Stripe webhooks), matched to
-- orders by paymentRef. A provider event is recorded once per project
-- (Stripe delivers at least once and in any order). A payment that arrives
-- before its order waits unmatched ("no order", in clarification) until the
-- order is delivered.
CREATE TABLE payments (
  id                uuid PRIMARY KEY,
  project_id        uuid NOT NULL,
  provider          text NOT NULL,
  provider_event_id text NOT NULL,
  event_type        text NOT NULL,
  payment_ref       text NOT NULL,
  amount_cents      bigint NOT NULL,
  currency          text NOT NULL,
  order_id          uuid REFERENCES orders (id),
  received_at       timestamptz NOT NULL DEFAULT now(),
  matched_at        timestamptz,
  UNIQUE (project_id, provider, provider_event_id)
);
CREATE INDEX payments_waiting ON payments (project_id, payment_ref) WHERE order_id IS NULL;

-- When the order's payment arrived, and how much: an order is paid once.
ALTER TABLE orders ADD COLUMN paid_at timestamptz, ADD COLUMN paid_cents bigint;

-- +goose Down
ALTER TABLE orders DROP COLUMN paid_at, DROP COLUMN paid_cents;
DROP TABLE payments;
