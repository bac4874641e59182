-- +goose Up
-- The manifests of live documents chained in one transaction lie in one
-- object, one after another (a manifest batch): batch_key names it and
-- batch_offset is where the manifest's bytes start in it; both null for a
-- manifest in an object of its own. An anchor's byte_offset (archive_objects)
-- says the same of the object it names: the document is bytes byte_offset
-- to byte_offset + size of it; null: the whole object.
ALTER TABLE archive_manifests ADD COLUMN batch_key text, ADD COLUMN batch_offset bigint,
    ADD CONSTRAINT archive_manifests_batch CHECK ((batch_key IS NULL) = (batch_offset IS NULL) AND (batch_offset IS NULL OR batch_offset >= 0));
CREATE INDEX archive_manifests_batch_key ON archive_manifests (batch_key) WHERE batch_key IS NOT NULL;
ALTER TABLE archive_objects ADD COLUMN byte_offset bigint CHECK (byte_offset >= 0);

-- +goose Down
ALTER TABLE archive_objects DROP COLUMN byte_offset;
DROP INDEX archive_manifests_batch_key;
ALTER TABLE archive_manifests DROP CONSTRAINT archive_manifests_batch, DROP COLUMN batch_offset, DROP COLUMN batch_key;
