// Package command is the write side's API: one use case per file
// (PlaceOrder, RecordFulfillment, CancelOrder, MatchPayment, refunds, store
// credit, products, ResetTestData, Preview, ...), the write endpoints
// together in http.go (they parse, call, answer), the Service in
// service.go, shared pieces in files named for them: the keyed-command
// protocol (idempotency.go), the group commit of new orders
// (create_batch.go) and the body decoder (decode.go). The invoicer role
// (issuing, cancelling and crediting documents, archiving, mailing, the
// reconciler and dead letters) is command/invoicing; what both use (the
// order repository, payments matched to orders, review tasks, the e-mail
// queue) is command/orders. The relay role (relay.go) is internal/outbox's
// relay, which publishes what both write.
// Each command validates, writes its state change, idempotency record and
// outbox events in one PostgreSQL transaction; the rules that decide live in
// internal/lifecycle and internal/billing. It imports internal packages,
// archive, render and command/orders; never query, projection, a command under cmd, or command/invoicing.
package command

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/project"
)

// Routes are the write endpoints.
func (s *Service) Routes() []httpx.Route {
	// A keyed command's 200 may be a replay (idempotency.go).
	replayed := []httpx.Header{httpx.IdempotentReplayedHeader}
	return []httpx.Route{
		{
			Method: http.MethodPost, Path: "/v1/orders", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "createOrder", Summary: "Create or update an order (idempotent by orderNo and Idempotency-Key)",
			Description: orderDescription,
			Input:       OrderInput{},
			Responses: []httpx.Response{
				{Status: 201, Body: httpx.Envelope[OrderResult]{}, Description: "order created"},
				{Status: 200, Body: httpx.Envelope[OrderResult]{}, Description: "order updated, unchanged, or an idempotent replay (header Idempotent-Replayed: true)", Headers: replayed},
			},
			Errors:  []int{400, 409, 413, 415, 422},
			Handler: s.postOrder,
		},
		{
			Method: http.MethodPost, Path: "/v1/fulfillments", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "createFulfillment", Summary: "Report the fulfillment of an order; fulfilled sets the date of supply",
			Description: fulfillmentDescription,
			Input:       FulfillmentInput{},
			Responses:   []httpx.Response{{Status: 200, Body: httpx.Envelope[FulfillmentResult]{}, Description: "fulfillment recorded, or an idempotent replay (header Idempotent-Replayed: true)", Headers: replayed}},
			Errors:      []int{400, 404, 409, 413, 415, 422},
			Handler:     s.postFulfillment,
		},
		{
			Method: http.MethodPost, Path: "/v1/orders/{orderNo}/cancel", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "cancelOrder", Summary: "Cancel an order; its documents get cancellations (Stornorechnung)",
			Description: cancelDescription,
			Input:       CancelOrderInput{},
			Responses:   []httpx.Response{{Status: 200, Body: httpx.Envelope[OrderResult]{}, Description: "order cancelled (also when it was already), or an idempotent replay (header Idempotent-Replayed: true)", Headers: replayed}},
			Errors:      []int{400, 404, 409, 422},
			Handler:     s.postCancel,
		},
		{
			Method: http.MethodPut, Path: "/v1/products/{productId}", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "configureProduct", Summary: "Set a product's revenue recognition (releases orders held for it)",
			Description: productDescription,
			Input:       ProductInput{},
			Responses:   []httpx.Response{{Status: 200, Body: httpx.Envelope[ProductResult]{}, Description: "the product with its settings"}},
			Errors:      []int{400, 404, 413, 415, 422},
			Handler:     s.putProduct,
		},
		{
			Method: http.MethodPost, Path: "/v1/tasks/{id}/recheck", Scope: httpx.ScopeOrdersWrite, Tag: "tasks",
			OperationID: "recheckTask", Summary: "Evaluate the orders a hold holds again now (its cause fixed)",
			Description: recheckDescription,
			Input:       TaskActionInput{},
			Responses: []httpx.Response{
				{Status: 202, Body: httpx.Envelope[TaskResult]{}, Description: "the cause is reported fixed: the held orders are evaluated within seconds"},
				{Status: 200, Body: httpx.Envelope[TaskResult]{}, Description: "the task is resolved already: nothing to do"},
			},
			Errors:  []int{404, 409},
			Handler: s.postRecheckTask,
		},
		{
			Method: http.MethodPost, Path: "/v1/tasks/{id}/dismiss", Scope: httpx.ScopeOrdersWrite, Tag: "tasks",
			OperationID: "dismissTask", Summary: "Resolve an informational review task as dismissed",
			Description: dismissDescription,
			Input:       TaskActionInput{},
			Responses:   []httpx.Response{{Status: 200, Body: httpx.Envelope[TaskResult]{}, Description: "the task, resolved (also when it was already)"}},
			Errors:      []int{404, 409},
			Handler:     s.postDismissTask,
		},
		{
			Method: http.MethodPost, Path: "/v1/webhooks/stripe/{projectId}", Tag: "payments",
			OperationID: "receiveStripeWebhook", Summary: "The payment provider reports a payment (Stripe webhook, signed)",
			Description: webhookDescription,
			Input:       WebhookInput{},
			Body:        StripeEvent{},
			Responses:   []httpx.Response{{Status: 200, Body: httpx.Envelope[PaymentResult]{}, Description: "event recorded (or a repeated delivery)"}},
			Errors:      []int{400, 408, 413, 415, 429},
			BodyLimit:   maxWebhookBody,
			Handler:     s.postStripeWebhook,
		},
		{
			Method: http.MethodPost, Path: "/v1/credit-transactions", Scope: httpx.ScopeOrdersWrite, Tag: "credit",
			OperationID: "createCreditTransactions", Summary: "Report store-credit movements (at most 500 per call, each applied once per id)",
			Description: creditDescription,
			Input:       CreditTransactionsInput{},
			Responses:   []httpx.Response{{Status: 200, Body: CreditTransactionsResult{}}},
			Errors:      []int{400, 413, 415, 422},
			Handler:     s.postCreditTransactions,
		},
		{
			Method: http.MethodPut, Path: "/v1/credit-balances", Scope: httpx.ScopeOrdersWrite, Tag: "credit",
			OperationID: "putCreditBalances", Summary: "Report customers' credit balances once a day for reconciliation",
			Description: creditDescription,
			Input:       CreditBalancesInput{},
			Responses:   []httpx.Response{{Status: 200, Body: httpx.Envelope[CreditBalancesResult]{}}},
			Errors:      []int{400, 413, 415, 422},
			Handler:     s.putCreditBalances,
		},
	}
}

const idempotencyDescription = `Idempotency-Key (required, at most 200 characters) is scoped to the project and endpoint and kept at least 24 hours. ` +
	`The same key with the same body replays the first successful response byte for byte (a 201 is replayed as 200: nothing new is created) with the header Idempotent-Replayed: true; ` +
	`with a different body it is 422 idempotency_key_reused; while the first request is still running it is 409 idempotency_in_progress. ` +
	`Failed requests store nothing, so a corrected retry with the same key is executed.`

const orderDescription = `Orders are idempotent by orderNo independent of the key: a new orderNo is 201 with the new order's id; ` +
	`the same orderNo again is 200 with the same id, the order updated (or unchanged). An issued invoice is never changed: ` +
	`a change of an invoiced order's invoice-relevant content (anything but financialStatus and email) is accepted (200, status created) and ` +
	`corrects the invoice: the invoicer issues a cancellation of it and, when the order is due, a new invoice with a new number; both appear ` +
	`in the order's invoices[]. A cancelled order's invoice-relevant content is final: a change is 409 order_cancelled. A paymentRef used by another order of the project is 409 payment_ref_conflict. ` +
	`Each line is bound to a catalogue product: by productId, else by sku, else by exact name.

` + idempotencyDescription

const fulfillmentDescription = `status defaults to fulfilled. fulfilled sets the date of supply to shippedAt, or to the time of receipt when shippedAt is absent. ` +
	`A report that moves the date of supply of an invoiced goods order corrects its invoice (cancellation, then a new invoice with the new date). ` +
	`data.shippedAt is the date of supply (null unless fulfilled). Unknown orderNo is 404 order_not_found.

` + idempotencyDescription

const creditDescription = `Each transaction is applied exactly once per id: repeats (also within one call) count as duplicates. ` +
	`accepted counts the entries of the call, applied the ones applied now. At most 500 transactions per call (more: 422, field transactions). ` +
	`A customer's balance from the history is the sum of earn (+), redeem, payout and expire (-) and reverse (signed as sent); ` +
	`PUT /v1/credit-balances opens a review task for every e-mail whose reported balance differs.`

// readCommand returns the Idempotency-Key and the JSON body of a write request.
func readCommand(r *http.Request) (key string, body []byte, err error) {
	if key, err = idempotencyKey(r); err != nil {
		return "", nil, err
	}
	body, err = httpx.ReadBody(r, httpx.MaxBodyBytes)
	return key, body, err
}

func (s *Service) postOrder(w http.ResponseWriter, r *http.Request) error {
	s.maybeSweep()
	key, body, err := readCommand(r)
	if err != nil {
		return err
	}
	c, err := parseOrder(body)
	if err != nil {
		return err
	}
	if err := s.engineCheck(r.Context(), httpx.ProjectID(r.Context()), c); err != nil {
		return err
	}
	resp, err := s.placeOrder(r.Context(), httpx.ProjectID(r.Context()), key, httpx.RequestID(r.Context()), c)
	if err != nil {
		return err
	}
	resp.write(w)
	return nil
}

func (s *Service) postFulfillment(w http.ResponseWriter, r *http.Request) error {
	received := time.Now()
	key, body, err := readCommand(r)
	if err != nil {
		return err
	}
	in, err := parseFulfillment(body)
	if err != nil {
		return err
	}
	resp, err := s.recordFulfillment(r.Context(), httpx.ProjectID(r.Context()), key, httpx.RequestID(r.Context()), in, received)
	if err != nil {
		return err
	}
	resp.write(w)
	return nil
}

func (s *Service) postCancel(w http.ResponseWriter, r *http.Request) error {
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	orderNo := chi.URLParam(r, "orderNo")
	resp, err := s.cancelOrder(r.Context(), httpx.ProjectID(r.Context()), key, httpx.RequestID(r.Context()), orderNo)
	if err != nil {
		return err
	}
	resp.write(w)
	return nil
}

func (s *Service) postCreditTransactions(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(r, httpx.MaxBodyBytes)
	if err != nil {
		return err
	}
	txs, err := parseCreditTransactions(body)
	if err != nil {
		return err
	}
	res, err := s.recordCreditTransactions(r.Context(), httpx.ProjectID(r.Context()), txs)
	if err != nil {
		return err
	}
	res.RequestID = httpx.RequestID(r.Context())
	httpx.WriteJSON(w, r, http.StatusOK, res)
	return nil
}

func (s *Service) putCreditBalances(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(r, httpx.MaxBodyBytes)
	if err != nil {
		return err
	}
	bs, err := parseCreditBalances(body)
	if err != nil {
		return err
	}
	res, err := s.reconcileBalances(r.Context(), httpx.ProjectID(r.Context()), bs)
	if err != nil {
		return err
	}
	httpx.WriteData(w, r, http.StatusOK, res)
	return nil
}

func (s *Service) postStripeWebhook(w http.ResponseWriter, r *http.Request) error {
	// The route is public, and it tells nobody which projects exist: every
	// answer before the signature verifies is the same for any project id.
	// So the header, the body's type, size and JSON are checked before the
	// project is looked up, and an unknown project, a project without a
	// webhook secret and a wrong signature all answer invalid_signature
	// after the same work. The server has read the body already, within a
	// few seconds and a few requests per address at once (httpx.Server).
	header := r.Header.Get("Stripe-Signature")
	if _, _, err := parseStripeSignature(header); err != nil {
		return err
	}
	body, err := httpx.ReadBody(r, maxWebhookBody)
	if err != nil {
		return err
	}
	now := time.Now()
	p, err := project.Get(r.Context(), s.pool, chi.URLParam(r, "projectId"))
	var ae *apperr.Error
	switch {
	case errors.As(err, &ae) && ae.Kind == apperr.NotFound, err == nil && p.Settings.StripeWebhookSecret == "":
		_ = verifyStripeSignature(header, body, decoyWebhookSecret, now)
		return errSignatureMismatch()
	case err != nil:
		return err
	}
	if err := verifyStripeSignature(header, body, p.Settings.StripeWebhookSecret, now); err != nil {
		return err
	}
	var ev StripeEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.Type == "" {
		return apperr.New(apperr.Invalid, "invalid_json", "not a Stripe event (id and type are required)")
	}
	var raw struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &raw) == nil {
		ev.method = stripePaymentMethod(raw.Data.Object)
	}
	for name, v := range map[string]string{"id": ev.ID, "type": ev.Type, "data.object.id": ev.Data.Object.ID, "data.object.payment_intent": ev.Data.Object.PaymentIntent} {
		if len(v) > maxStripeID {
			return apperr.New(apperr.Invalid, "invalid_json", "%s is longer than %d bytes", name, maxStripeID)
		}
	}
	res, err := s.recordPayment(r.Context(), p.ID, ev, time.Now().UTC())
	if err != nil {
		return err
	}
	httpx.WriteData(w, r, http.StatusOK, res)
	return nil
}

func (s *Service) putProduct(w http.ResponseWriter, r *http.Request) error {
	body, err := httpx.ReadBody(r, httpx.MaxBodyBytes)
	if err != nil {
		return err
	}
	settings, err := parseProductSettings(body)
	if err != nil {
		return err
	}
	res, err := ConfigureProduct(r.Context(), s.pool, httpx.ProjectID(r.Context()), chi.URLParam(r, "productId"), settings)
	if err != nil {
		return err
	}
	httpx.WriteData(w, r, http.StatusOK, res)
	return nil
}

func (s *Service) postRecheckTask(w http.ResponseWriter, r *http.Request) error {
	res, enqueued, err := s.RecheckTask(r.Context(), httpx.ProjectID(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if enqueued {
		status = http.StatusAccepted
	}
	httpx.WriteData(w, r, status, res)
	return nil
}

func (s *Service) postDismissTask(w http.ResponseWriter, r *http.Request) error {
	res, err := s.DismissTask(r.Context(), httpx.ProjectID(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	httpx.WriteData(w, r, http.StatusOK, res)
	return nil
}
