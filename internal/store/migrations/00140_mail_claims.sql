-- +goose Up
-- Mail once. Each delivery is claimed on its own: claim_token names the
-- mailer's claim and lease_until ends it (a second mailer claims the row
-- only after that); the claimer renews the lease right before the SMTP
-- session and records its outcome only while the token is still its own.
-- message_id is the Message-ID (without angle brackets) of the delivery's
-- e-mail, set once at its first claim and reused by every attempt, so that
-- a resend after a crash between the relay's acceptance and the commit is
-- the same message to the receiver.
-- Nullable columns without a default: adding them rewrites nothing.
ALTER TABLE mail_deliveries ADD COLUMN claim_token uuid, ADD COLUMN lease_until timestamptz, ADD COLUMN message_id text;

-- +goose Down
ALTER TABLE mail_deliveries DROP COLUMN message_id, DROP COLUMN lease_until, DROP COLUMN claim_token;
