package command

import (
	"github.com/swaggest/jsonschema-go"

	"github.com/o2i-service/o2i/internal/money"
)

// The request and response bodies of the write endpoints, as the OpenAPI
// document describes them. Decoding and validation (with exact JSON paths)
// happen in the handlers, not through these tags.

// Decimal is an exact decimal JSON number (quantities, percent rates), read
// without rounding through binary floating point.
type Decimal struct{ money.Decimal }

// JSONSchema documents Decimal as a JSON number.
func (Decimal) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.AddType(jsonschema.Number)
	return s, nil
}

// NullableDecimal is a Decimal that may be null.
type NullableDecimal struct{ money.Decimal }

// JSONSchema documents NullableDecimal as a JSON number or null.
func (NullableDecimal) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.AddType(jsonschema.Null)
	s.AddType(jsonschema.Number)
	return s, nil
}

// Address is a billing or shipping address.
type Address struct {
	CountryCode           string  `json:"country_code" required:"true" pattern:"^[A-Z]{2}$" description:"ISO 3166-1 alpha-2 country code; needed for VAT determination"`
	Name                  *string `json:"name,omitempty" maxLength:"300"`
	CompanyName           *string `json:"company_name,omitempty" maxLength:"300"`
	VATID                 *string `json:"vat_id,omitempty" maxLength:"50" description:"the buyer's VAT ID; on an address in an EU member state (and with the prefix XI) a VAT ID by the issuing member state's syntax: its prefix (EL for Greece, XI for Northern Ireland) and national number, spaces, dots and hyphens ignored; elsewhere the buyer's identifier as sent"`
	Street                *string `json:"street,omitempty" maxLength:"300"`
	AdditionalAddressLine *string `json:"additional_address_line,omitempty" maxLength:"300"`
	PostalCode            *string `json:"postal_code,omitempty" maxLength:"50"`
	City                  *string `json:"city,omitempty" maxLength:"300"`
	LeitwegID             *string `json:"leitweg_id,omitempty" maxLength:"46" pattern:"^[0-9]{2,12}(-[0-9A-Z]{1,30})?-[0-9]{2}$" description:"Routing ID of public-sector buyers (Leitweg-ID) with valid ISO/IEC 7064 MOD 97-10 check digits; a valid value makes the invoice XRechnung 3.0"`
}

// Item is one order line.
type Item struct {
	Name             string           `json:"name" required:"true" minLength:"1" maxLength:"500" description:"the line's name; with neither productId nor sku it binds the line to a catalogue product"`
	Quantity         Decimal          `json:"quantity" required:"true" exclusiveMinimum:"0" maximum:"1000000000" description:"greater than 0; an exact decimal with at most 9 decimal places; quantity × unit price must not exceed 10000000000000 cents"`
	UnitNetCents     *int64           `json:"unitNetCents,omitempty" minimum:"0" maximum:"10000000000000" description:"unit net price in cents; at least one of unitNetCents and unitGrossCents"`
	UnitGrossCents   *int64           `json:"unitGrossCents,omitempty" minimum:"0" maximum:"10000000000000" description:"unit gross price in cents; at least one of unitNetCents and unitGrossCents"`
	SKU              *string          `json:"sku,omitempty" maxLength:"200"`
	TaxRate          *NullableDecimal `json:"taxRate,omitempty" minimum:"0" maximum:"100" description:"percent (nineteen percent is 19); null: the product's default, else the standard rate"`
	GiftCard         bool             `json:"giftCard,omitempty" description:"a multi-purpose voucher sale (no VAT); invoiced on a separate document"`
	DiscountNetCents *int64           `json:"discountNetCents,omitempty" minimum:"0" maximum:"10000000000000" description:"net discount of the line (EN 16931 BG-27); the unit price stays undiscounted"`
	ProductID        string           `json:"productId,omitempty" maxLength:"200" description:"stable article id from the caller's system"`
}

// ServicePeriod is the period a time-based service covers.
type ServicePeriod struct {
	StartDate string `json:"start_date" required:"true" format:"date"`
	EndDate   string `json:"end_date" required:"true" format:"date" description:"not before start_date"`
}

// CreditRedemption is store credit used to pay part of an order.
type CreditRedemption struct {
	Type        string `json:"type" required:"true" enum:"referral_credit"`
	AmountCents int64  `json:"amountCents" required:"true" minimum:"1" maximum:"10000000000000"`
	ExternalRef string `json:"externalRef" required:"true" minLength:"1" maxLength:"200"`
}

// OrderInput is the body of POST /v1/orders.
type OrderInput struct {
	IdempotencyKey     string             `header:"Idempotency-Key" json:"-" required:"true" maxLength:"200" minLength:"1" description:"deduplicates deliveries; kept at least 24 hours"`
	OrderNo            string             `json:"orderNo" required:"true" minLength:"1" maxLength:"200" description:"the caller's order number; unique within the project permanently; no control or bidirectional formatting characters (like every identifier)"`
	BillingAddress     Address            `json:"billingAddress" required:"true"`
	Items              []Item             `json:"items" required:"true" minItems:"1" maxItems:"1000" description:"at most 1000 lines, and the order as a whole must encode to at most 512 KiB of JSON (422 items)"`
	ShippingAddress    *Address           `json:"shippingAddress,omitempty"`
	PaymentRef         *string            `json:"paymentRef,omitempty" maxLength:"200" description:"payment-provider reference; unique per project"`
	PaymentGateway     *string            `json:"paymentGateway,omitempty" maxLength:"200"`
	FinancialStatus    *string            `json:"financialStatus,omitempty" maxLength:"200"`
	Email              *string            `json:"email,omitempty" format:"email" maxLength:"254"`
	Currency           string             `json:"currency,omitempty" maxLength:"3" pattern:"^[A-Z]{3}$" default:"EUR"`
	RequiresShipping   bool               `json:"requiresShipping,omitempty" default:"false"`
	ServicePeriod      *ServicePeriod     `json:"service_period,omitempty"`
	ShippingGrossCents *int64             `json:"shippingGrossCents,omitempty" minimum:"0" maximum:"10000000000000"`
	ShippingNetCents   *int64             `json:"shippingNetCents,omitempty" minimum:"0" maximum:"10000000000000"`
	ShippingTaxRate    *NullableDecimal   `json:"shippingTaxRate,omitempty" minimum:"0" maximum:"100" description:"percent; required with shippingNetCents"`
	CreditRedemptions  []CreditRedemption `json:"creditRedemptions,omitempty" maxItems:"100"`
	GrossTotalCents    *int64             `json:"grossTotalCents,omitempty" minimum:"0" maximum:"10000000000000" description:"required when creditRedemptions is sent"`
}

// OrderResult is the data of POST /v1/orders.
type OrderResult struct {
	ID      string `json:"id" required:"true" format:"uuid" description:"internal order id (not an invoice id)"`
	OrderNo string `json:"orderNo" required:"true"`
	Status  string `json:"status" required:"true" enum:"created,invoiced,cancelled"`
}

// CancelOrderInput is the request of POST /v1/orders/{orderNo}/cancel (no body).
type CancelOrderInput struct {
	IdempotencyKey string `header:"Idempotency-Key" json:"-" required:"true" maxLength:"200" minLength:"1"`
	OrderNo        string `path:"orderNo" required:"true"`
}

// FulfillmentInput is the body of POST /v1/fulfillments.
type FulfillmentInput struct {
	IdempotencyKey string  `header:"Idempotency-Key" json:"-" required:"true" maxLength:"200" minLength:"1"`
	OrderNo        string  `json:"orderNo" required:"true" minLength:"1" maxLength:"200"`
	Status         string  `json:"status,omitempty" enum:"unfulfilled,partial,fulfilled"`
	ShippedAt      *string `json:"shippedAt,omitempty" format:"date-time"`
	TrackingNumber *string `json:"trackingNumber,omitempty" maxLength:"200"`
}

// FulfillmentResult is the data of POST /v1/fulfillments: what was recorded.
type FulfillmentResult struct {
	OrderNo           string  `json:"orderNo" required:"true"`
	FulfillmentStatus string  `json:"fulfillmentStatus" required:"true" enum:"unfulfilled,partial,fulfilled"`
	ShippedAt         *string `json:"shippedAt" required:"true" format:"date-time" description:"the date of supply for goods; null unless fulfilled"`
}

// CreditTransaction is one store-credit movement.
type CreditTransaction struct {
	ID          string `json:"id" required:"true" minLength:"1" maxLength:"200" description:"caller's unique id; makes repeats harmless"`
	Type        string `json:"type" required:"true" enum:"earn,redeem,reverse,payout,expire"`
	Email       string `json:"email" required:"true" format:"email" maxLength:"254"`
	AmountCents int64  `json:"amount_cents" required:"true" minimum:"-10000000000000" maximum:"10000000000000"`
	OccurredAt  string `json:"occurred_at" required:"true" format:"date-time"`
	OrderRef    string `json:"order_ref,omitempty" maxLength:"200"`
}

// CreditTransactionsInput is the body of POST /v1/credit-transactions.
type CreditTransactionsInput struct {
	Transactions []CreditTransaction `json:"transactions" required:"true" minItems:"1" maxItems:"500"`
}

// CreditTransactionsResult counts what a call did.
type CreditTransactionsResult struct {
	Accepted   int    `json:"accepted" required:"true"`
	Duplicates int    `json:"duplicates" required:"true"`
	Applied    int    `json:"applied" required:"true"`
	RequestID  string `json:"requestId" required:"true"`
}

// CreditBalance is a customer's balance as the caller sees it.
type CreditBalance struct {
	Email        string `json:"email" required:"true" format:"email" maxLength:"254"`
	BalanceCents int64  `json:"balance_cents" required:"true" minimum:"-10000000000000" maximum:"10000000000000"`
}

// CreditBalancesInput is the body of PUT /v1/credit-balances.
type CreditBalancesInput struct {
	Balances []CreditBalance `json:"balances" required:"true" maxItems:"10000"`
}

// CreditBalancesResult says how many balances were compared and how many differ.
type CreditBalancesResult struct {
	Compared   int `json:"compared" required:"true"`
	Mismatches int `json:"mismatches" required:"true" description:"balances that differ from the transaction history; each creates a task"`
}

// ProductInput is the request of PUT /v1/products/{productId}.
type ProductInput struct {
	ProductID          string                   `path:"productId" required:"true" description:"the caller's article id (productId of the order lines), or the catalogue id of GET /v1/products"`
	RevenueRecognition *RevenueRecognitionInput `json:"revenueRecognition" required:"true" description:"{periodMonths: N} defers the revenue over N months; null recognises it at the date of supply"`
}

// RevenueRecognitionInput is a deferral over a number of months.
type RevenueRecognitionInput struct {
	PeriodMonths int `json:"periodMonths" required:"true" minimum:"1" maximum:"120"`
}

// ProductResult is the data of PUT /v1/products/{productId}.
type ProductResult struct {
	ID                 string              `json:"id" required:"true" format:"uuid" description:"the catalogue id"`
	ProductID          string              `json:"productId" required:"true" description:"the caller's article id; empty for products matched by sku or name"`
	MatchedBy          string              `json:"matchedBy" required:"true" enum:"product_id,sku,name" description:"how order lines find the product"`
	SKU                string              `json:"sku" required:"true" description:"empty when the product has none"`
	Name               string              `json:"name" required:"true" description:"the name of the order line that created the product"`
	RevenueRecognition *RevenueRecognition `json:"revenueRecognition" required:"true" description:"null: not set"`
}

// RevenueRecognition is a product's revenue recognition.
type RevenueRecognition struct {
	Mode         string `json:"mode" required:"true" enum:"immediate,saas" description:"immediate: at the date of supply; saas: deferred over periodMonths"`
	PeriodMonths *int   `json:"periodMonths,omitempty"`
}

// TaskActionInput is the path of POST /v1/tasks/{id}/recheck and /dismiss.
type TaskActionInput struct {
	ID string `path:"id" required:"true" description:"the task's id (a UUID); anything else, or another project's task, is 404 task_not_found"`
}

// TaskResult is a review task after a recheck or a dismissal.
type TaskResult struct {
	ID         string  `json:"id" required:"true" format:"uuid"`
	Type       string  `json:"type" required:"true"`
	Status     string  `json:"status" required:"true" enum:"open,resolved"`
	Resolution *string `json:"resolution" required:"true" description:"dismissed for a dismissed task; null while open"`
	HeldOrders int     `json:"heldOrders" required:"true" minimum:"0" description:"how many orders the task holds back now"`
}
