package command

// LockKey exposes the advisory lock of an idempotency key to the tests.
var LockKey = lockKey

// Endpoints as recorded in idempotency_keys.
const (
	EndpointOrders       = endpointOrders
	EndpointFulfillments = endpointFulfillments
)

// CreateBatches reports the group commit's statements, the new orders in
// them and the orders that fell back to one statement each.
func (s *Service) CreateBatches() (statements, orders, fallbacks int64) {
	return s.creates.statements.Load(), s.creates.orders.Load(), s.creates.fallbacks.Load()
}
