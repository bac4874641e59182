package command

import (
	"context"
	"time"
)

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

// PaidAt exposes the invoicer's payment check (which also matches a payment
// that waited for its order).
func (s *Service) PaidAt(ctx context.Context, projectID, orderID string) (*time.Time, error) {
	return s.paidAt(ctx, projectID, orderID)
}

// Process exposes the invoicer's handling of one order event: its tries,
// then the dead letter with its task and the failed documents.
func (iv *Invoicer) Process(ctx context.Context, raw []byte) error {
	return iv.process(ctx, raw)
}
