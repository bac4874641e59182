-- +goose Up
-- Which orders a hold task holds. A cause of the project (its seller data,
-- the invoice contact's phone, the provider key's rights) or of a product
-- (no revenue recognition) is one task that holds many orders; a cause of
-- the order itself is one task holding that order. An order is released
-- from a task when it is invoiced, cancelled or held by another cause; the
-- row stays (released_at) so that the task keeps naming the orders it held.
-- checked_at is when the order was last evaluated under the task, and
-- claimed_until the lease of the invoicer worker evaluating it now (rows
-- are claimed FOR UPDATE SKIP LOCKED, so replicas share the work).
CREATE TABLE held_orders (
    task_id       uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    order_id      uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    project_id    uuid NOT NULL,
    order_no      text NOT NULL,
    held_at       timestamptz NOT NULL DEFAULT now(),
    checked_at    timestamptz NOT NULL DEFAULT now(),
    claimed_until timestamptz,
    released_at   timestamptz,
    PRIMARY KEY (task_id, order_id)
);
CREATE INDEX held_orders_of_task ON held_orders (task_id, held_at, order_id) WHERE released_at IS NULL;
CREATE INDEX held_orders_of_order ON held_orders (order_id) WHERE released_at IS NULL;
CREATE INDEX held_orders_checked ON held_orders (checked_at) WHERE released_at IS NULL;
CREATE INDEX held_orders_order_no ON held_orders (project_id, order_no);

-- A cause reported fixed (the project's settings changed, a product's
-- revenue recognition was set, a recheck was asked for), written in the
-- transaction of that change: the invoicer's workers then evaluate every
-- order the task holds that was last checked before fixed_at.
CREATE TABLE cause_fixes (
    task_id    uuid PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    project_id uuid NOT NULL,
    fixed_at   timestamptz NOT NULL DEFAULT now(),
    reason     text NOT NULL
);

-- The orders held today by their open hold tasks (one task per order).
INSERT INTO held_orders (task_id, order_id, project_id, order_no, held_at, checked_at)
SELECT t.id, o.id, o.project_id, o.order_no, t.created_at, t.created_at
  FROM tasks t JOIN orders o ON o.project_id = t.project_id AND o.order_no = t.subject
 WHERE t.status = 'open' AND o.status = 'created'
   AND t.kind IN ('xrechnung_contact_phone_missing', 'product_without_revenue_recognition', 'order_not_invoiceable',
                  'invoice_validation_failed', 'provider_rights_missing')
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TABLE cause_fixes;
DROP TABLE held_orders;
