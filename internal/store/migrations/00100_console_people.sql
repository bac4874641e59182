-- +goose Up
-- The seller console: the people of a project, their sign-in and sessions,
-- invitations, and the append-only log of every change made in it.

-- A person who signs in to the console. The password is stored only as an
-- argon2id hash (PHC string); NULL until the invitation is accepted. The
-- TOTP secret is for the optional second factor (NULL: off).
CREATE TABLE console_users (
    id            uuid PRIMARY KEY,
    email         text NOT NULL,
    password_hash text,
    totp_secret   text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX console_users_email ON console_users (lower(email));

-- A user's role in one project. An auditor's membership names the years
-- under audit and ends on its end date.
CREATE TABLE console_memberships (
    user_id      uuid NOT NULL REFERENCES console_users (id),
    project_id   uuid NOT NULL REFERENCES projects (id),
    role         text NOT NULL CHECK (role IN ('owner', 'developer', 'accountant', 'auditor')),
    audit_years  integer[] NOT NULL DEFAULT '{}',
    ends_on      date,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, project_id),
    CHECK (role <> 'auditor' OR (cardinality(audit_years) > 0 AND ends_on IS NOT NULL))
);
CREATE INDEX console_memberships_project ON console_memberships (project_id);

-- An invitation: a one-time link, stored as the SHA-256 of its token.
CREATE TABLE console_invitations (
    token_hash  bytea PRIMARY KEY,
    project_id  uuid NOT NULL REFERENCES projects (id),
    email       text NOT NULL,
    role        text NOT NULL CHECK (role IN ('owner', 'developer', 'accountant', 'auditor')),
    audit_years integer[] NOT NULL DEFAULT '{}',
    ends_on     date,
    invited_by  uuid REFERENCES console_users (id),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX console_invitations_project ON console_invitations (project_id, created_at);

-- Password reset links, one-time, stored as the SHA-256 of their token.
CREATE TABLE console_password_resets (
    token_hash bytea PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES console_users (id),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- Server-side sessions: the cookie carries a random id, stored as its
-- SHA-256. A session ends when revoked, idle too long or too old.
CREATE TABLE console_sessions (
    id_hash      bytea PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES console_users (id),
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX console_sessions_user ON console_sessions (user_id) WHERE revoked_at IS NULL;

-- Failed sign-ins, per account (the e-mail as typed, lower-cased) and per
-- client address; recent ones bound the attempts.
CREATE TABLE console_signin_failures (
    subject text NOT NULL,
    at      timestamptz NOT NULL
);
CREATE INDEX console_signin_failures_subject ON console_signin_failures (subject, at);

-- Forms whose effect happens once (creating a key shows its secret once; a
-- resubmitted form does not create a second key).
CREATE TABLE console_form_uses (
    form_id text PRIMARY KEY,
    used_at timestamptz NOT NULL DEFAULT now()
);

-- Every change made in the console: who, when, what, before and after.
-- Append-only (kept ten years with the records of the books): rows are
-- never updated or deleted.
CREATE TABLE console_audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL,
    project_id  uuid REFERENCES projects (id),
    actor_id    uuid REFERENCES console_users (id),
    actor_email text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL DEFAULT '',
    before      jsonb,
    after       jsonb
);
CREATE INDEX console_audit_log_project ON console_audit_log (project_id, id);

-- +goose StatementBegin
CREATE FUNCTION console_audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'console_audit_log is append-only: % refused', TG_OP;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER console_audit_log_append_only BEFORE UPDATE OR DELETE ON console_audit_log
    FOR EACH ROW EXECUTE FUNCTION console_audit_log_append_only();
CREATE TRIGGER console_audit_log_no_truncate BEFORE TRUNCATE ON console_audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION console_audit_log_append_only();

-- +goose Down
DROP TABLE console_audit_log;
DROP FUNCTION console_audit_log_append_only();
DROP TABLE console_form_uses;
DROP TABLE console_signin_failures;
DROP TABLE console_sessions;
DROP TABLE console_password_resets;
DROP TABLE console_invitations;
DROP TABLE console_memberships;
DROP TABLE console_users;
