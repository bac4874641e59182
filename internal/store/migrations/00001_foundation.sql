-- +goose Up
CREATE TABLE projects (
    id               uuid PRIMARY KEY,
    name             text NOT NULL,
    test_mode        boolean NOT NULL DEFAULT true,
    accounting       text NOT NULL DEFAULT 'accrual' CHECK (accounting IN ('accrual', 'cash')),
    rate_limit_rps   integer NOT NULL DEFAULT 1000 CHECK (rate_limit_rps > 0),
    rate_limit_burst integer NOT NULL DEFAULT 2000 CHECK (rate_limit_burst > 0),
    -- Seller data, invoice contact and connection settings (see cmd/o2i project set).
    settings         jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored only as the SHA-256 of the full key.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id),
    name         text NOT NULL DEFAULT '',
    prefix       text NOT NULL,
    key_hash     bytea NOT NULL UNIQUE,
    scopes       text[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id);

-- Request traceability: one row per request, kept 30 days in daily partitions
-- that the service creates ahead and drops when they age out.
CREATE TABLE request_log (
    request_id      uuid NOT NULL,
    at              timestamptz NOT NULL,
    project_id      uuid,
    key_prefix      text,
    method          text NOT NULL,
    path            text NOT NULL,
    route           text NOT NULL,
    status          smallint NOT NULL,
    duration_us     bigint NOT NULL,
    idempotency_key text
) PARTITION BY RANGE (at);

-- +goose Down
DROP TABLE request_log;
DROP TABLE api_keys;
DROP TABLE projects;
