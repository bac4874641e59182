-- +goose Up
-- assert_true(ok, message) raises message (SQLSTATE P0004, assert_failure)
-- unless ok is true, and gives true otherwise. A statement checks its own
-- outcome with it where the check has to stop the transaction inside
-- PostgreSQL: in a pipeline that ends with COMMIT, a check the client makes
-- after reading the result would come after the commit.
-- +goose StatementBegin
CREATE FUNCTION assert_true(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'assert_failure', MESSAGE = message;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION assert_true(boolean, text);
