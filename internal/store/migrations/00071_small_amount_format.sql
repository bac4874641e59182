-- +goose Up
-- A small-amount invoice (Kleinbetragsrechnung, § 33 UStDV) is a document of
-- its own format: a PDF only, its XML kept as the PDF's source but never
-- archived or served.
ALTER TABLE invoices DROP CONSTRAINT invoices_format_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_format_check CHECK (format IN ('zugferd', 'xrechnung', 'small_amount'));

-- +goose Down
ALTER TABLE invoices DROP CONSTRAINT invoices_format_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_format_check CHECK (format IN ('zugferd', 'xrechnung'));
