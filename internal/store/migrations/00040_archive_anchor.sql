-- +goose Up
-- The archive's anchor: for every archived object its bucket, key, version
-- id, SHA-256, size and retain-until, recorded when it is archived. Reads go
-- by version id and are checked against this record, not against the
-- object's own metadata. kind: xml, pdf, manifest.
CREATE TABLE archive_objects (
    invoice_id   uuid NOT NULL REFERENCES invoices (id),
    kind         text NOT NULL CHECK (kind IN ('xml', 'pdf', 'manifest')),
    project_id   uuid NOT NULL,
    bucket       text NOT NULL,
    object_key   text NOT NULL,
    version_id   text NOT NULL,
    sha256       text NOT NULL,
    size         bigint NOT NULL,
    retain_until timestamptz, -- null: no retention (test documents)
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (invoice_id, kind)
);

-- One manifest per archived invoice, chained per project and number range:
-- chain_seq counts 1, 2, ... in archiving order, prev_sha256 is the SHA-256
-- of the manifest before (null for the first). body is the manifest as
-- archived; stored_at is null until the object is written (its version id
-- then lands in archive_objects). seq orders the auditor's listing.
CREATE TABLE archive_manifests (
    invoice_id  uuid PRIMARY KEY REFERENCES invoices (id),
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    project_id  uuid NOT NULL,
    range_key   text NOT NULL,
    chain_seq   bigint NOT NULL CHECK (chain_seq >= 1),
    number      text NOT NULL,
    issue_date  date NOT NULL,
    year        integer NOT NULL,
    type        text NOT NULL,
    test_mode   boolean NOT NULL,
    body        bytea NOT NULL,
    sha256      text NOT NULL,
    prev_sha256 text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    stored_at   timestamptz,
    UNIQUE (project_id, range_key, chain_seq)
);
CREATE INDEX archive_manifests_list ON archive_manifests (project_id, test_mode, year, seq);

-- Whether an order was taken in test mode: decided by the project's mode when
-- the order arrives, so that a reset of test data finds test orders that
-- have no invoice yet.
ALTER TABLE orders ADD COLUMN test_mode boolean;
UPDATE orders o SET test_mode = COALESCE(
    (SELECT bool_and(i.test_mode) FROM invoices i WHERE i.order_id = o.id),
    (SELECT p.test_mode FROM projects p WHERE p.id = o.project_id), false);
-- +goose StatementBegin
CREATE FUNCTION orders_test_mode() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.test_mode IS NULL THEN
        SELECT p.test_mode INTO NEW.test_mode FROM projects p WHERE p.id = NEW.project_id;
        NEW.test_mode := COALESCE(NEW.test_mode, false);
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER orders_test_mode BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION orders_test_mode();
ALTER TABLE orders ALTER COLUMN test_mode SET NOT NULL;

-- +goose Down
DROP TRIGGER orders_test_mode ON orders;
DROP FUNCTION orders_test_mode();
ALTER TABLE orders DROP COLUMN test_mode;
DROP TABLE archive_manifests;
DROP TABLE archive_objects;
