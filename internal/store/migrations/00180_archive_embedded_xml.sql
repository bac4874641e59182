-- +goose Up
-- A ZUGFeRD invoice's XML is archived only inside its PDF/A-3: its anchor
-- (kind xml) names the PDF object (key, version id) it is embedded in,
-- embedded_in = 'pdf', with the SHA-256 and size of the embedded file.
-- Null: the XML is an object of its own (XRechnung, and every document
-- archived before).
ALTER TABLE archive_objects ADD COLUMN embedded_in text CHECK (embedded_in IS NULL OR embedded_in = 'pdf' AND kind = 'xml');

-- +goose Down
ALTER TABLE archive_objects DROP COLUMN embedded_in;
