// Package command is the write side: one use case per file (PlaceOrder,
// RecordFulfillment, ...) and the write endpoints. Each command validates,
// writes its state change, idempotency record and outbox events in one
// PostgreSQL transaction. It imports internal packages, never query.
package command

import (
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
)

// Service holds what the write use cases need.
type Service struct {
	pool *pgxpool.Pool
}

// New returns the write side over pool.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

func notImplemented(w http.ResponseWriter, r *http.Request) error {
	return apperr.New(apperr.NotImplemented, "not_implemented", "%s %s is not available yet", r.Method, r.URL.Path)
}

// Routes are the write endpoints.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/v1/orders", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "createOrder", Summary: "Create or update an order (idempotent by orderNo and Idempotency-Key)",
			Input: OrderInput{},
			Responses: []httpx.Response{
				{Status: 201, Body: httpx.Envelope[OrderResult]{}, Description: "order created"},
				{Status: 200, Body: httpx.Envelope[OrderResult]{}, Description: "order updated, unchanged, or an idempotent replay (header Idempotent-Replayed: true)"},
			},
			Errors:  []int{400, 409, 413, 415, 422},
			Handler: notImplemented,
		},
		{
			Method: http.MethodPost, Path: "/v1/fulfillments", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "createFulfillment", Summary: "Report the fulfillment of an order; fulfilled sets the date of supply",
			Input:     FulfillmentInput{},
			Responses: []httpx.Response{{Status: 200, Body: httpx.Envelope[FulfillmentResult]{}, Description: "fulfillment recorded"}},
			Errors:    []int{400, 404, 409, 413, 415, 422},
			Handler:   notImplemented,
		},
		{
			Method: http.MethodPost, Path: "/v1/credit-transactions", Scope: httpx.ScopeOrdersWrite, Tag: "credit",
			OperationID: "createCreditTransactions", Summary: "Report store-credit movements (at most 500 per call, each applied once per id)",
			Input:     CreditTransactionsInput{},
			Responses: []httpx.Response{{Status: 200, Body: CreditTransactionsResult{}}},
			Errors:    []int{400, 413, 415, 422},
			Handler:   notImplemented,
		},
		{
			Method: http.MethodPut, Path: "/v1/credit-balances", Scope: httpx.ScopeOrdersWrite, Tag: "credit",
			OperationID: "putCreditBalances", Summary: "Report customers' credit balances once a day for reconciliation",
			Input:     CreditBalancesInput{},
			Responses: []httpx.Response{{Status: 200, Body: httpx.Envelope[CreditBalancesResult]{}}},
			Errors:    []int{400, 413, 415, 422},
			Handler:   notImplemented,
		},
	}
}
