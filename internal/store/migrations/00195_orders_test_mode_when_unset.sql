-- +goose Up
-- The trigger that sets an order's test mode from its project's runs only
-- for a row that arrives without one: the batch statement of new orders
-- reads the projects' modes once for the whole batch and sets them itself,
-- which spares every one of its orders a PL/pgSQL call and a query. Rows
-- without a mode are set exactly as before (the function is unchanged).
DROP TRIGGER orders_test_mode ON orders;
CREATE TRIGGER orders_test_mode BEFORE INSERT ON orders FOR EACH ROW
    WHEN (NEW.test_mode IS NULL) EXECUTE FUNCTION orders_test_mode();

-- +goose Down
DROP TRIGGER orders_test_mode ON orders;
CREATE TRIGGER orders_test_mode BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION orders_test_mode();
