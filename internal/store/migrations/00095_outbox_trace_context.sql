-- +goose Up
-- The W3C trace context (traceparent, tracestate) of the request or
-- consumer span that wrote an outbox row; the relay sends it on as the
-- Kafka message's headers, so that one order's trace runs from the API
-- through the relay to every consumer. NULL when the writer had no span.
-- Nullable columns without a default: adding them rewrites nothing.
ALTER TABLE outbox ADD COLUMN traceparent text, ADD COLUMN tracestate text;

-- +goose Down
ALTER TABLE outbox DROP COLUMN tracestate, DROP COLUMN traceparent;
