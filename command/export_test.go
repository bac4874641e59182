package command

// LockKey exposes the advisory lock of an idempotency key to the tests.
var LockKey = lockKey

// Endpoints as recorded in idempotency_keys.
const (
	EndpointOrders       = endpointOrders
	EndpointFulfillments = endpointFulfillments
)
