package command

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/swaggest/jsonschema-go"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/store"
)

// MatchPayment: POST /v1/webhooks/stripe/{projectId}. The payment provider
// reports payments; the caller never does. Stripe signs every delivery with
// the project's webhook secret (project setting stripeWebhookSecret):
// Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">, any
// of several v1 values may match (secret rotation), and t must be within
// five minutes of now. Stripe delivers at least once and in any order, so
// each event is recorded once per project (by its id) and answered 200 again
// as a duplicate.
//
// payment_intent.succeeded is matched to the order whose paymentRef is the
// payment intent's id: the order becomes paid (once; later payments of the
// same reference are recorded, not applied) and an order.updated event lets
// the invoicer issue the invoice when the order is due. An order invoiced
// already (an open item) is closed by it; a payment that is not the amount
// its invoice asks for opens a payment_amount_mismatch task. A payment without
// such an order waits as "no order" with a review task; it is matched when
// the order arrives. Other event types are recorded as received and change
// nothing.

// stripeTolerance is how far a signature's timestamp may be from now.
const stripeTolerance = 300 * time.Second

// maxWebhookBody bounds a webhook delivery: Stripe's events are a few KiB.
const maxWebhookBody = 64 << 10

// maxStripeID bounds the ids the service stores from an event (event id,
// type, payment intent): Stripe's are far shorter.
const maxStripeID = 255

// PaymentResult is the answer to a webhook delivery.
type PaymentResult struct {
	EventID   string  `json:"eventId" required:"true" description:"the provider's event id"`
	Duplicate bool    `json:"duplicate" required:"true" description:"the event was received before; nothing changed"`
	Applied   bool    `json:"applied" required:"true" description:"the event paid an order"`
	OrderNo   *string `json:"orderNo" required:"true" description:"the order the payment matched; null when none (yet)"`
}

// StripeEvent is the part of a Stripe event the service reads, and the
// webhook's body in the OpenAPI document (see PrepareJSONSchema).
type StripeEvent struct {
	ID      string `json:"id" required:"true" minLength:"1" maxLength:"255" description:"the event id; each is applied once (at most 255 bytes)"`
	Type    string `json:"type" required:"true" minLength:"1" maxLength:"255" description:"payment_intent.succeeded, payment_intent.canceled, payment_intent.partially_funded and charge.refunded are applied; other types are recorded (at most 255 bytes)"`
	Created int64  `json:"created,omitempty"`
	Data    struct {
		Object struct {
			ID             string `json:"id" maxLength:"255" description:"the object's id: a payment_intent.* event's payment intent, matched with an order's paymentRef (at most 255 bytes)"`
			Object         string `json:"object,omitempty" description:"payment_intent or charge"`
			Amount         int64  `json:"amount,omitempty" description:"cents; the amount paid when amount_received is absent or 0"`
			AmountReceived int64  `json:"amount_received,omitempty" description:"cents; the amount paid"`
			AmountRefunded int64  `json:"amount_refunded,omitempty" description:"charge.refunded: the charge's refunded total so far, in cents"`
			Refunded       bool   `json:"refunded,omitempty" description:"charge.refunded: the charge is refunded in full"`
			PaymentIntent  string `json:"payment_intent,omitempty" maxLength:"255" description:"charge.refunded: the payment intent of the charge, matched with an order's paymentRef (at most 255 bytes)"`
			Currency       string `json:"currency,omitempty" description:"ISO 4217 code, any case"`
			NextAction     *struct {
				DisplayBankTransferInstructions *struct {
					AmountRemaining int64 `json:"amount_remaining" description:"cents still to be transferred"`
				} `json:"display_bank_transfer_instructions,omitempty"`
			} `json:"next_action,omitempty" description:"payment_intent.partially_funded: what remains to be transferred"`
		} `json:"object" required:"true" description:"the payment intent (payment_intent.* events) or the charge (charge.refunded)"`
	} `json:"data" required:"true"`
	// method is how the buyer paid, read from the object's charges,
	// latest_charge or payment_method_types (stripe_method.go).
	method billing.PaymentMethod
}

// PrepareJSONSchema completes the event's schema in the OpenAPI document.
// The members of data.object that say how the buyer paid (charges,
// latest_charge, payment_method_types) are read from the raw object
// (stripe_method.go, stripeIntentMethod): they join the object's own. And
// Stripe sends far more than the service reads, in every object of an
// event, and null for what an object lacks: every object admits members it
// does not list, and every member but the required ones may be null (the
// decoding reads null as absent), so that a client generated from the
// document can forward the provider's event as it is.
func (StripeEvent) PrepareJSONSchema(s *jsonschema.Schema) error {
	data := s.Properties["data"].TypeObject
	if data == nil || data.Properties["object"].TypeObject == nil {
		return nil // reflected for parameters (path, header), not as the body
	}
	method, err := (&jsonschema.Reflector{}).Reflect(stripeIntentMethod{}, jsonschema.InlineRefs)
	if err != nil {
		return err
	}
	object := data.Properties["object"].TypeObject
	for name, p := range method.Properties {
		object.WithPropertiesItem(name, p)
	}
	openObjects(s)
	return nil
}

// openObjects lets every object schema in s admit members it does not list
// (additionalProperties: true) and null for each member it does not
// require.
func openObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.HasType(jsonschema.Object) || len(s.Properties) > 0 {
		s.WithAdditionalProperties(jsonschema.SchemaOrBool{TypeBoolean: &[]bool{true}[0]})
	}
	for name, p := range s.Properties {
		if p.TypeObject == nil {
			continue
		}
		if p.TypeObject.Type != nil && !p.TypeObject.HasType(jsonschema.Null) && !slices.Contains(s.Required, name) {
			p.TypeObject.AddType(jsonschema.Null)
		}
		openObjects(p.TypeObject)
	}
	if s.Items != nil {
		openObjects(s.Items.SchemaOrBool.TypeObject)
	}
}

// WebhookInput documents the webhook request's parameters for the OpenAPI
// document; its body is a StripeEvent (the route's Body).
type WebhookInput struct {
	ProjectID string `path:"projectId" format:"uuid" description:"the project whose webhook secret signs the deliveries"`
	Signature string `header:"Stripe-Signature" required:"true" description:"t=<unix>,v1=<hex>[,v1=...]"`
}

const webhookDescription = "The payment provider's webhook (Stripe). Public: authenticated by the Stripe-Signature header " +
	"with the project's webhook secret (o2i project set --stripe-webhook-secret); a missing, malformed, wrong or older " +
	"than five minutes signature is 400 invalid_signature, and so is a delivery to an unknown project or one without a " +
	"webhook secret. The endpoint tells nobody which projects exist: every answer before the signature verifies (400, 408, 413, 415, 429) " +
	"is the same for any project id. The body is at most 64 KiB and must arrive within a few seconds of the headers (5 s by default; else 408 request_timeout); " +
	"one client address may have a few deliveries in flight at once (16 by default; else 429 rate_limited with Retry-After). Each event id is applied once; a repeated delivery is 200 " +
	"with duplicate true. payment_intent.succeeded pays the order whose paymentRef is the payment intent id (the " +
	"invoice follows when the order is due); without such an order the payment waits, with a review task, until the " +
	"order arrives; for a provider_transfer order the payment intent is its bank-transfer payment order. How the buyer paid is kept with the " +
	"payment and printed on the invoice (card with its last four digits, SEPA debit, PayPal, ...): it is read from the payment intent's " +
	"charges.data[].payment_method_details (older API versions), an expanded latest_charge, or payment_method_types when it names one method. " +
	"payment_intent.canceled of a provider_transfer order's payment order before payment cancels the order (its invoice gets " +
	"a cancellation); its payment_intent.partially_funded (a transfer short of the amount) opens payment_amount_mismatch. charge.refunded (matched by the charge's payment_intent) with the whole charge refunded at once cancels " +
	"the order (its documents get cancellations); a partial refund gets a credit note (type code 381, Rechnungskorrektur) " +
	"for the newly refunded gross, split over the invoice's VAT rates by their gross (largest remainder)."

// decoyWebhookSecret signs nothing: a delivery to an unknown project, or
// one without a webhook secret, is checked against it, so that its answer
// costs the same work as a wrong signature's.
var decoyWebhookSecret = rand.Text()

func errSignatureMismatch() error {
	return apperr.New(apperr.Invalid, "invalid_signature", "the Stripe-Signature does not verify for this endpoint (wrong secret, wrong project, or no webhook secret set)")
}

// parseStripeSignature reads the header t=<unix>,v1=<hex>[,v1=<hex>...].
func parseStripeSignature(header string) (ts string, sigs [][]byte, err error) {
	if len(header) > 2048 {
		return "", nil, apperr.New(apperr.Invalid, "invalid_signature", "the Stripe-Signature header is too long")
	}
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	if ts == "" || len(sigs) == 0 {
		return "", nil, apperr.New(apperr.Invalid, "invalid_signature", "the Stripe-Signature header needs t=<unix> and at least one v1=<hex>")
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return "", nil, apperr.New(apperr.Invalid, "invalid_signature", "the Stripe-Signature timestamp %q is not a number", ts)
	}
	return ts, sigs, nil
}

// verifyStripeSignature checks Stripe's signature of body with secret: a v1
// HMAC-SHA256 of "<t>.<body>", then t within the tolerance (said only to a
// sender whose signature matched).
func verifyStripeSignature(header string, body []byte, secret string, now time.Time) error {
	bad := func(format string, args ...any) error {
		return apperr.New(apperr.Invalid, "invalid_signature", format, args...)
	}
	ts, sigs, err := parseStripeSignature(header)
	if err != nil {
		return err
	}
	sec, _ := strconv.ParseInt(ts, 10, 64)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	matched := false
	for _, sig := range sigs {
		matched = matched || hmac.Equal(sig, want)
	}
	if !matched {
		return errSignatureMismatch()
	}
	if d := now.Sub(time.Unix(sec, 0)); d > stripeTolerance || d < -stripeTolerance {
		return bad("the Stripe-Signature timestamp is %s away from now (at most %s)", d.Round(time.Second), stripeTolerance)
	}
	return nil
}

// recordPayment records a Stripe event once and applies a succeeded payment.
func (s *Service) recordPayment(ctx context.Context, projectID string, ev StripeEvent, now time.Time) (PaymentResult, error) {
	res := PaymentResult{EventID: ev.ID}
	obj := ev.Data.Object
	amount := obj.AmountReceived
	if amount == 0 {
		amount = obj.Amount
	}
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		paymentID := uuid.Must(uuid.NewV7()).String()
		var method []byte // NULL: the event did not say
		if ev.method.Kind != billing.MethodUnknown {
			b, err := json.Marshal(ev.method)
			if err != nil {
				return err
			}
			method = b
		}
		tag, err := tx.Exec(ctx, `INSERT INTO payments (id, project_id, provider, provider_event_id, event_type, payment_ref,
  amount_cents, currency, received_at, method) VALUES ($1, $2, 'stripe', $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (project_id, provider, provider_event_id) DO NOTHING`,
			paymentID, projectID, ev.ID, ev.Type, obj.ID, amount, strings.ToUpper(obj.Currency), now, method)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			res.Duplicate = true
			return tx.QueryRow(ctx, `SELECT o.order_no FROM payments p LEFT JOIN orders o ON o.id = p.order_id
WHERE p.project_id = $1 AND p.provider = 'stripe' AND p.provider_event_id = $2`, projectID, ev.ID).Scan(&res.OrderNo)
		}
		if ev.Type == "charge.refunded" && obj.PaymentIntent != "" {
			orderNo, applied, err := refundOrder(ctx, tx, projectID, paymentID, obj.PaymentIntent, obj.AmountRefunded, obj.Amount, obj.Refunded)
			if err != nil {
				return err
			}
			if orderNo == "" {
				return orders.OpenTask(ctx, tx, projectID, TaskRefundWithoutOrder, obj.PaymentIntent, map[string]any{
					"paymentRef": obj.PaymentIntent, "eventId": ev.ID, "amountRefundedCents": obj.AmountRefunded,
				})
			}
			res.OrderNo, res.Applied = &orderNo, applied
			return nil
		}
		if ev.Type == "payment_intent.partially_funded" && obj.ID != "" {
			// A transfer that does not cover the payment order: to clarification.
			var remaining *int64
			if na := obj.NextAction; na != nil && na.DisplayBankTransferInstructions != nil {
				remaining = &na.DisplayBankTransferInstructions.AmountRemaining
			}
			orderNo, err := underpaidTransferTx(ctx, tx, projectID, obj.ID, obj.Amount, remaining)
			if orderNo != "" {
				res.OrderNo, res.Applied = &orderNo, true
			}
			return err
		}
		if ev.Type == "payment_intent.canceled" && obj.ID != "" {
			orderNo, applied, err := cancelTransferTx(ctx, tx, projectID, obj.ID)
			if orderNo != "" {
				res.OrderNo, res.Applied = &orderNo, applied
			}
			return err
		}
		if ev.Type != "payment_intent.succeeded" || obj.ID == "" {
			return nil
		}
		orderNo, applied, err := orders.PayOrder(ctx, tx, projectID, paymentID, obj.ID, amount, now)
		if err != nil {
			return err
		}
		if orderNo == "" {
			return orders.OpenTask(ctx, tx, projectID, orders.TaskPaymentWithoutOrder, obj.ID, map[string]any{
				"paymentRef": obj.ID, "eventId": ev.ID, "amountCents": amount, "currency": strings.ToUpper(obj.Currency),
			})
		}
		res.OrderNo, res.Applied = &orderNo, applied
		return nil
	})
	if err != nil {
		return PaymentResult{}, fmt.Errorf("record payment %s: %w", ev.ID, err)
	}
	return res, nil
}
