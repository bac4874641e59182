-- +goose Up
-- The PDFs of live documents chained together lie in one object, one after
-- another (a document batch), as their manifests do. Each PDF's part is
-- recorded here before the object is written, so that a write retried after
-- a failure or a crash writes that very object again (the PDF renders to the
-- same bytes from the same XML) and no object of the archive is left that no
-- document names. position orders the parts; byte_offset, size and sha256
-- are the PDF's in the object.
CREATE TABLE archive_document_batches (
    invoice_id  uuid PRIMARY KEY REFERENCES invoices (id),
    batch_key   text NOT NULL,
    position    integer NOT NULL CHECK (position >= 0),
    byte_offset bigint NOT NULL CHECK (byte_offset >= 0),
    size        bigint NOT NULL CHECK (size > 0),
    sha256      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (batch_key, position)
);

-- +goose Down
DROP TABLE archive_document_batches;
