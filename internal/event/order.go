package event

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// Address is a billing or shipping address. Optional values that were null
// or empty are omitted.
type Address struct {
	CountryCode           string `json:"country_code"`
	Name                  string `json:"name,omitempty"`
	CompanyName           string `json:"company_name,omitempty"`
	VATID                 string `json:"vat_id,omitempty"`
	Street                string `json:"street,omitempty"`
	AdditionalAddressLine string `json:"additional_address_line,omitempty"`
	PostalCode            string `json:"postal_code,omitempty"`
	City                  string `json:"city,omitempty"`
	LeitwegID             string `json:"leitweg_id,omitempty"` // valid format and check digits when present
}

// Item is one order line, bound to a catalogue product.
type Item struct {
	Name             string         `json:"name"`
	Quantity         money.Decimal  `json:"quantity"`                   // exact decimal > 0
	UnitNetCents     *int64         `json:"unitNetCents,omitempty"`     // at least one of the two unit prices is set
	UnitGrossCents   *int64         `json:"unitGrossCents,omitempty"`   //
	SKU              string         `json:"sku,omitempty"`              //
	TaxRate          *money.Decimal `json:"taxRate,omitempty"`          // percent; absent: the product's default
	GiftCard         bool           `json:"giftCard"`                   //
	DiscountNetCents *int64         `json:"discountNetCents,omitempty"` // net line discount (BG-27)
	ProductID        string         `json:"productId,omitempty"`        // the caller's article id
	CatalogProductID string         `json:"catalogProductId"`           // UUID of the catalogue product the line is bound to
}

// ServicePeriod is the period a time-based service covers (ISO dates).
type ServicePeriod struct {
	StartDate string `json:"start_date"`
	EndDate   string `json:"end_date"`
}

// CreditRedemption is store credit that pays part of the order.
type CreditRedemption struct {
	Type        string `json:"type"` // referral_credit
	AmountCents int64  `json:"amountCents"`
	ExternalRef string `json:"externalRef"`
}

// OrderContent is the validated, normalised order as the caller sent it
// (defaults applied: currency EUR, requiresShipping false), with each line's
// catalogue binding.
type OrderContent struct {
	OrderNo            string             `json:"orderNo"`
	BillingAddress     Address            `json:"billingAddress"`
	ShippingAddress    *Address           `json:"shippingAddress,omitempty"`
	Items              []Item             `json:"items"`
	PaymentRef         string             `json:"paymentRef,omitempty"`
	PaymentGateway     string             `json:"paymentGateway,omitempty"`
	Currency           string             `json:"currency"`
	RequiresShipping   bool               `json:"requiresShipping"`
	ServicePeriod      *ServicePeriod     `json:"service_period,omitempty"`
	ShippingGrossCents *int64             `json:"shippingGrossCents,omitempty"`
	ShippingNetCents   *int64             `json:"shippingNetCents,omitempty"`
	ShippingTaxRate    *money.Decimal     `json:"shippingTaxRate,omitempty"`
	CreditRedemptions  []CreditRedemption `json:"creditRedemptions,omitempty"`
	GrossTotalCents    *int64             `json:"grossTotalCents,omitempty"`
	// The fields that are not invoice-relevant come last (see NonInvoiceTail).
	FinancialStatus string `json:"financialStatus,omitempty"`
	Email           string `json:"email,omitempty"`
}

// NonInvoiceTail returns the JSON members, without braces, that
// json.Marshal(c) writes last for the fields that are not invoice-relevant
// (financialStatus, email); "" when both are empty. The JSON of c without
// them is the invoice-relevant part.
func NonInvoiceTail(c OrderContent) ([]byte, error) {
	t, err := json.Marshal(struct {
		FinancialStatus string `json:"financialStatus,omitempty"`
		Email           string `json:"email,omitempty"`
	}{c.FinancialStatus, c.Email})
	if err != nil {
		return nil, err
	}
	return t[1 : len(t)-1], nil
}

// Order is the full state of an order after a change: the data of every
// order.* event, so that a projector needs nothing else.
type Order struct {
	ID                string     `json:"id"` // internal UUID
	ProjectID         string     `json:"projectId"`
	Status            string     `json:"status"`  // created, invoiced, cancelled
	Version           int64      `json:"version"` // 1 on creation, +1 per change
	FulfillmentStatus string     `json:"fulfillmentStatus"`
	ShippedAt         *time.Time `json:"shippedAt,omitempty"`
	SuppliedAt        *time.Time `json:"suppliedAt,omitempty"` // date of supply set by a fulfilled report
	TrackingNumber    string     `json:"trackingNumber,omitempty"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
	InvoicedAt        *time.Time `json:"invoicedAt,omitempty"`
	// CorrectionPending: the order's documents no longer match it (its
	// invoice-relevant content or date of supply changed after invoicing,
	// or it was cancelled); the invoicer cancels them.
	CorrectionPending bool `json:"correctionPending,omitempty"`
	// RefundPendingCents is refunded gross the provider reported that no
	// credit note covers yet; the invoicer issues one against the invoice.
	RefundPendingCents int64 `json:"refundPendingCents,omitempty"`
	// PaidAt is when the payment provider's payment was matched.
	PaidAt *time.Time `json:"paidAt,omitempty"`
	// Holds are the review tasks that hold the due order back.
	Holds []Hold `json:"holds,omitempty"`
	OrderContent
}

// Hold is a review task holding an order back without an invoice number.
type Hold struct {
	Type   string `json:"type"`
	TaskID string `json:"taskId"`
}

// CreditTransaction is the data of credit.transaction_recorded.
type CreditTransaction struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"` // earn, redeem, reverse, payout, expire
	Email       string    `json:"email"`
	AmountCents int64     `json:"amount_cents"`
	OccurredAt  time.Time `json:"occurred_at"`
	OrderRef    string    `json:"order_ref,omitempty"`
}

// orderHead is Order without its content, in the same field order.
type orderHead struct {
	ID                 string     `json:"id"`
	ProjectID          string     `json:"projectId"`
	Status             string     `json:"status"`
	Version            int64      `json:"version"`
	FulfillmentStatus  string     `json:"fulfillmentStatus"`
	ShippedAt          *time.Time `json:"shippedAt,omitempty"`
	SuppliedAt         *time.Time `json:"suppliedAt,omitempty"`
	TrackingNumber     string     `json:"trackingNumber,omitempty"`
	CreatedAt          time.Time  `json:"createdAt"`
	UpdatedAt          time.Time  `json:"updatedAt"`
	InvoicedAt         *time.Time `json:"invoicedAt,omitempty"`
	CorrectionPending  bool       `json:"correctionPending,omitempty"`
	RefundPendingCents int64      `json:"refundPendingCents,omitempty"`
	PaidAt             *time.Time `json:"paidAt,omitempty"`
	Holds              []Hold     `json:"holds,omitempty"`
}

// OrderData returns the JSON of o (the bytes json.Marshal(o) gives) from
// content, which must be json.Marshal(o.OrderContent): writers that already
// encoded the content do not encode it again.
func OrderData(o Order, content []byte) (json.RawMessage, error) {
	h, err := json.Marshal(orderHead{o.ID, o.ProjectID, o.Status, o.Version, o.FulfillmentStatus, o.ShippedAt,
		o.SuppliedAt, o.TrackingNumber, o.CreatedAt, o.UpdatedAt, o.InvoicedAt, o.CorrectionPending, o.RefundPendingCents, o.PaidAt, o.Holds})
	if err != nil {
		return nil, err
	}
	if len(content) < 2 || content[0] != '{' {
		return nil, errors.New("event: order content is not a JSON object")
	}
	out := make([]byte, 0, len(h)+len(content))
	out = append(out, h[:len(h)-1]...)
	if len(content) > 2 {
		out = append(out, ',')
	}
	return append(out, content[1:]...), nil
}
