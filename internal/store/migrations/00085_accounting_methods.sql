-- +goose Up
-- A project's accounting method as a history. Each row is in force from the
-- first day of fiscal year from_year (the calendar year) until the next row;
-- years before the first row have the first row's method. A change takes
-- effect from a year without documents (o2i project set --accounting
-- --accounting-from), so the exports of earlier years stay as they were: the
-- DATEV export asks each document's fiscal year for its method.
-- projects.accounting keeps the method of the latest row; a project without
-- rows (created by an older version) has that method throughout.
CREATE TABLE accounting_methods (
    project_id uuid NOT NULL REFERENCES projects (id),
    from_year  integer NOT NULL CHECK (from_year BETWEEN 1900 AND 9999),
    method     text NOT NULL CHECK (method IN ('accrual', 'cash')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, from_year)
);

-- Every project so far had its method from the year it was created.
INSERT INTO accounting_methods (project_id, from_year, method)
SELECT id, extract(year FROM created_at AT TIME ZONE 'UTC')::integer, accounting FROM projects;

-- +goose Down
DROP TABLE accounting_methods;
