// Package banktransfer creates bank-transfer payment orders at the payment
// provider (Stripe, through stripe-go against a configurable base URL): the
// customer found by e-mail or created, and a PaymentIntent for the amount
// with customer_balance / eu_bank_transfer funding, whose instructions
// (the customer's virtual IBAN and the payment reference) go on the invoice.
// Every request carries an Idempotency-Key per order and step and is bounded
// in time; the caller retries. It imports stripe-go only.
package banktransfer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
)

// Request is one order's payment order.
type Request struct {
	OrderID     string // makes the Idempotency-Keys: o2i-<orderID>-customer, o2i-<orderID>-payment-intent[-<Generation>]
	Generation  int    // the order's n-th payment order (a correction changed the amount); 0 or 1: the first
	OrderNo     string // metadata at the provider
	Email       string // the customer is found or created by it
	Name        string
	AmountCents int64  // the order's gross, exactly
	Currency    string // EUR
	Country     string // of the virtual IBAN: DE, FR, IE or NL; DE when empty
}

// Instructions are what the invoice shows: pay AmountCents to IBAN with
// Reference (payment means 58, BT-84, BT-83).
type Instructions struct {
	CustomerID      string
	PaymentIntentID string
	IBAN            string
	BIC             string
	AccountHolder   string
	Reference       string
	AmountCents     int64
}

// RightsError: the API key may not write customers or payment intents
// (HTTP 401 or 403). It goes away only when the key gets the rights.
type RightsError struct{ Err error }

func (e *RightsError) Error() string { return "payment provider: missing rights: " + e.Err.Error() }
func (e *RightsError) Unwrap() error { return e.Err }

// Client talks to the provider's API at a base URL.
type Client struct {
	base    string
	timeout time.Duration
}

// DefaultBaseURL is Stripe's API.
const DefaultBaseURL = "https://api.stripe.com"

// New returns a client of the API at baseURL; every request is bounded by
// timeout. The client does not retry by itself: the caller does, with the
// same Idempotency-Keys.
func New(baseURL string, timeout time.Duration) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), timeout: timeout}
}

func (c *Client) api(key string) *stripe.Client {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(c.base),
		HTTPClient:        &http.Client{Timeout: c.timeout},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return stripe.NewClient(key, stripe.WithBackends(&stripe.Backends{API: backend, Connect: backend, Uploads: backend, MeterEvents: backend}))
}

// Create finds or creates the customer and creates the payment intent, and
// returns its bank-transfer instructions. A key without the rights is a
// *RightsError; anything else may succeed when tried again (the same
// Idempotency-Keys make a repeated step return what the first one created).
func (c *Client) Create(ctx context.Context, key string, r Request) (Instructions, error) {
	if key == "" {
		return Instructions{}, &RightsError{errors.New("no API key is stored for the project (o2i project set --stripe-api-key)")}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*c.timeout)
	defer cancel()
	sc := c.api(key)
	cust, err := c.customer(ctx, sc, r)
	if err != nil {
		return Instructions{}, classify("customer", err)
	}
	country := r.Country
	if country == "" {
		country = "DE"
	}
	p := &stripe.PaymentIntentCreateParams{
		Amount:             stripe.Int64(r.AmountCents),
		Currency:           stripe.String(strings.ToLower(r.Currency)),
		Customer:           stripe.String(cust),
		PaymentMethodTypes: []*string{stripe.String("customer_balance")},
		PaymentMethodData:  &stripe.PaymentIntentCreatePaymentMethodDataParams{Type: stripe.String("customer_balance")},
		PaymentMethodOptions: &stripe.PaymentIntentCreatePaymentMethodOptionsParams{
			CustomerBalance: &stripe.PaymentIntentCreatePaymentMethodOptionsCustomerBalanceParams{
				FundingType: stripe.String("bank_transfer"),
				BankTransfer: &stripe.PaymentIntentCreatePaymentMethodOptionsCustomerBalanceBankTransferParams{
					Type:           stripe.String("eu_bank_transfer"),
					EUBankTransfer: &stripe.PaymentIntentCreatePaymentMethodOptionsCustomerBalanceBankTransferEUBankTransferParams{Country: stripe.String(country)},
				},
			},
		},
		Confirm: stripe.Bool(true),
	}
	p.AddMetadata("orderNo", r.OrderNo)
	idem := "o2i-" + r.OrderID + "-payment-intent"
	if r.Generation > 1 {
		idem += fmt.Sprintf("-%d", r.Generation)
	}
	p.SetIdempotencyKey(idem)
	pi, err := sc.V1PaymentIntents.Create(ctx, p)
	if err != nil {
		return Instructions{}, classify("payment intent", err)
	}
	out := Instructions{CustomerID: cust, PaymentIntentID: pi.ID, AmountCents: pi.Amount}
	if pi.NextAction != nil && pi.NextAction.DisplayBankTransferInstructions != nil {
		in := pi.NextAction.DisplayBankTransferInstructions
		out.Reference = in.Reference
		for _, a := range in.FinancialAddresses {
			if a.IBAN != nil {
				out.IBAN, out.BIC, out.AccountHolder = strings.ReplaceAll(a.IBAN.IBAN, " ", ""), a.IBAN.BIC, a.IBAN.AccountHolderName
				break
			}
		}
	}
	if out.IBAN == "" || out.Reference == "" || out.PaymentIntentID == "" {
		return Instructions{}, fmt.Errorf("payment provider: payment intent %s has no bank-transfer instructions (status %s)", pi.ID, pi.Status)
	}
	if out.AmountCents != r.AmountCents {
		return Instructions{}, fmt.Errorf("payment provider: payment intent %s is for %d cents, not %d", pi.ID, out.AmountCents, r.AmountCents)
	}
	return out, nil
}

// Cancel cancels a payment intent that is no longer wanted (a correction
// replaced it); cancelling one cancelled before is harmless.
func (c *Client) Cancel(ctx context.Context, key, paymentIntent string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	p := &stripe.PaymentIntentCancelParams{CancellationReason: stripe.String("abandoned")}
	p.SetIdempotencyKey("o2i-cancel-" + paymentIntent)
	if _, err := c.api(key).V1PaymentIntents.Cancel(ctx, paymentIntent, p); err != nil {
		return classify("cancel payment intent", err)
	}
	return nil
}

// customer returns the id of the customer with r's e-mail, created once.
func (c *Client) customer(ctx context.Context, sc *stripe.Client, r Request) (string, error) {
	lp := &stripe.CustomerListParams{Email: stripe.String(r.Email)}
	lp.Limit = stripe.Int64(1)
	for cust, err := range sc.V1Customers.List(ctx, lp).All(ctx) {
		if err != nil {
			return "", err
		}
		return cust.ID, nil
	}
	p := &stripe.CustomerCreateParams{Email: stripe.String(r.Email)}
	if r.Name != "" {
		p.Name = stripe.String(r.Name)
	}
	p.SetIdempotencyKey("o2i-" + r.OrderID + "-customer")
	cust, err := sc.V1Customers.Create(ctx, p)
	if err != nil {
		return "", err
	}
	return cust.ID, nil
}

func classify(step string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && (se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden) {
		return &RightsError{fmt.Errorf("%s: %s", step, se.Msg)}
	}
	return fmt.Errorf("payment provider: %s: %w", step, err)
}

// Answered reports whether err is an answer of the provider (it refused
// the request: missing rights, a 4xx), not a failure to reach it (a
// timeout, a refused connection, a 5xx): a circuit breaker counts only the
// latter.
func Answered(err error) bool {
	var rights *RightsError
	var se *stripe.Error
	return errors.As(err, &rights) || errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500
}
