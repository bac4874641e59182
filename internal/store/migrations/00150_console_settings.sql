-- +goose Up
-- The console's test-mode view, and the second factor (TOTP) of its users.

-- Which data a session looks at: test (true) or live. A choice of the
-- session, shown in the page header; the project's own mode is a setting.
ALTER TABLE console_sessions ADD COLUMN view_test boolean NOT NULL DEFAULT false;
-- A session whose password was right but whose second factor is still to
-- be entered: it opens no page but the one asking for the code.
ALTER TABLE console_sessions ADD COLUMN second_factor_pending boolean NOT NULL DEFAULT false;

-- console_users.totp_secret holds the TOTP secret (base32); it is in force
-- once confirmed with a code. totp_last_step is the time step of the last
-- code accepted: a code counts once.
ALTER TABLE console_users ADD COLUMN totp_confirmed_at timestamptz;
ALTER TABLE console_users ADD COLUMN totp_last_step bigint NOT NULL DEFAULT 0;

-- Recovery codes of the second factor: ten per enrolment, stored as their
-- SHA-256, each usable once.
CREATE TABLE console_recovery_codes (
    user_id   uuid NOT NULL REFERENCES console_users (id),
    code_hash bytea NOT NULL,
    used_at   timestamptz,
    PRIMARY KEY (user_id, code_hash)
);

-- A project whose owner requires the second factor of every member.
CREATE TABLE console_project_policies (
    project_id   uuid PRIMARY KEY REFERENCES projects (id),
    require_totp boolean NOT NULL DEFAULT false
);

-- +goose Down
DROP TABLE console_project_policies;
DROP TABLE console_recovery_codes;
ALTER TABLE console_users DROP COLUMN totp_last_step;
ALTER TABLE console_users DROP COLUMN totp_confirmed_at;
ALTER TABLE console_sessions DROP COLUMN second_factor_pending;
ALTER TABLE console_sessions DROP COLUMN view_test;
