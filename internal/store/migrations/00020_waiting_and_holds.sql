-- +goose Up
-- Why an order has no invoice yet, for its status record: the review tasks
-- that hold it ([{type, taskId}], kept on the order by the invoicer and
-- published with its state), and what it waits for (none, payment,
-- fulfillment: decided by the projector from the order's state with the
-- lifecycle rules).
ALTER TABLE orders ADD COLUMN holds jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE order_view ADD COLUMN waiting_for text NOT NULL DEFAULT 'none',
  ADD COLUMN holds jsonb NOT NULL DEFAULT '[]'::jsonb;

-- +goose Down
ALTER TABLE order_view DROP COLUMN holds, DROP COLUMN waiting_for;
ALTER TABLE orders DROP COLUMN holds;
