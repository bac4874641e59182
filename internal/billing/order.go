// Package billing turns an order into fully computed invoice documents: the
// lines, line allowances, the VAT breakdown per category and rate, the
// document totals, the VAT treatment (domestic, intra-community supply,
// reverse charge, one-stop-shop distance sale, export, not subject to VAT),
// the document type and format, and the invoice number format.
//
// The package is pure: no I/O, no clock, no globals that change. Dates and
// invoice numbers come in through Context. It imports only the standard
// library, internal/money, internal/leitweg and internal/vatid; render and internal/einvoice import it, never
// the reverse.
//
// The arithmetic follows EN 16931: VAT is computed once per VAT category and
// rate on the summed taxable amount (BR-CO-17) and rounded half up; all the
// BR-CO sum rules hold exactly in integer cents.
package billing

import (
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// Address is a billing or shipping address as sent with an order.
type Address struct {
	CountryCode           string // ISO 3166-1 alpha-2, required
	Name                  string
	CompanyName           string
	VATID                 string
	Street                string
	AdditionalAddressLine string
	PostalCode            string
	City                  string
	LeitwegID             string // routing ID of a public-sector buyer; selects XRechnung
}

// DisplayName is the buyer's legal name on the invoice: the company name when
// present, else the person's name.
func (a Address) DisplayName() string {
	if a.CompanyName != "" {
		return a.CompanyName
	}
	return a.Name
}

// Item is one order line as sent.
type Item struct {
	Name     string
	Quantity money.Decimal // > 0
	// UnitNetCents is the unit price without VAT. At least one of
	// UnitNetCents and UnitGrossCents is set.
	UnitNetCents *int64
	// UnitGrossCents is the unit price the customer paid, VAT included. When
	// it is set the line is gross-priced: the paid gross is the truth and the
	// net is derived from it (UnitNetCents is then ignored).
	UnitGrossCents *int64
	SKU            string
	// TaxRate is the VAT rate in percent as sent (19 for nineteen percent).
	TaxRate *money.Decimal
	// ProductTaxRate is the default rate of the catalogue product, filled in
	// by the caller from the catalogue; used when TaxRate is nil.
	ProductTaxRate *money.Decimal
	// GiftCard marks the sale of a multi-purpose voucher: not subject to VAT
	// at sale, issued on a separate document of the same order.
	GiftCard bool
	// DiscountNetCents is a net line discount (EN 16931 line allowance BG-27);
	// the unit price stays undiscounted.
	DiscountNetCents *int64
	ProductID        string
	// DefaultPeriodMonths is the catalogue product's default service
	// period in months (a SaaS default), filled in by the caller from the
	// catalogue; 0: none. Used when the order sends no service_period.
	DefaultPeriodMonths int
}

// Period is a service period (EN 16931 BG-14); only the calendar dates count.
type Period struct {
	Start time.Time
	End   time.Time
}

// CreditRedemption is store credit used to pay the order. It is a payment,
// never a discount.
type CreditRedemption struct {
	Type        string // referral_credit
	AmountCents int64
	ExternalRef string
}

// Order is the pure domain input mirroring the interface's Order input.
type Order struct {
	OrderNo          string
	BillingAddress   Address
	ShippingAddress  *Address
	Items            []Item
	PaymentRef       string
	PaymentGateway   string
	FinancialStatus  string
	Email            string
	Currency         string // default EUR
	RequiresShipping bool   // true: goods; false: services (digital, SaaS)
	ServicePeriod    *Period
	// ShippingGrossCents is shipping as paid (gross). Its VAT follows the
	// goods; with mixed rates it is split by the gross ratio of the goods.
	ShippingGrossCents *int64
	// ShippingNetCents with ShippingTaxRate: shipping as computed by the
	// checkout, taken as given.
	ShippingNetCents  *int64
	ShippingTaxRate   *money.Decimal
	CreditRedemptions []CreditRedemption
	// GrossTotalCents is the order's gross total as the caller computed it;
	// it must equal the computed amount payable to the cent.
	GrossTotalCents *int64
	// Transfer is the payment provider's bank-transfer order of a
	// provider_transfer order: the invoice asks to pay to its virtual IBAN
	// with its reference.
	Transfer *BankTransfer
	// Payments are the provider payments matched to the order before its
	// documents are issued, net of refunds, in the order they arrived.
	// Only these and store credit make a document paid (BT-113); the
	// caller's FinancialStatus never does.
	Payments []ReceivedPayment
	// CarriedFrom is the number of the cancelled invoice whose payment a
	// correction's new invoice carries over; empty otherwise.
	CarriedFrom string
}

// BankTransfer is where and with which reference the buyer pays.
type BankTransfer struct {
	IBAN          string // BT-84: the customer's virtual IBAN at the payment provider
	BIC           string // BT-86
	AccountHolder string // BT-85
	Reference     string // BT-83: the provider's payment reference
}

// Seller holds the project's seller settings. The seller is established in
// Germany.
type Seller struct {
	Name       string
	Street     string
	PostalCode string
	City       string
	Country    string // ISO 3166-1 alpha-2; DE
	VATID      string // USt-IdNr. (BT-31)
	TaxNumber  string // Steuernummer (BT-32)
	// RegistrationID is the optional commercial register entry (BT-30), e.g.
	// "HRB 12345 Amtsgericht Musterstadt".
	RegistrationID string
	IBAN           string
	BIC            string
	ContactName    string // BT-41
	ContactPhone   string // BT-42, required for XRechnung (BR-DE-6)
	ContactEmail   string // BT-43 and the seller's electronic address BT-34
	// OSSRegistered: distance sales to consumers in other EU member states
	// are taxed at the destination country's rate and reported through the
	// one-stop shop.
	OSSRegistered bool
	// TestMode: documents are test documents, numbered from the test range
	// and kept out of OSS and EC sales list figures.
	TestMode bool
	// NumberPattern is the live invoice number pattern; see FormatNumber.
	// Empty means DefaultNumberPattern.
	NumberPattern string
	// InvoiceFirstGateways are the payment gateways whose orders are
	// invoiced before payment, as open items with a payment term.
	InvoiceFirstGateways []string
	// PaymentTermDays is the payment term of open items in days; 0 means
	// DefaultPaymentTermDays.
	PaymentTermDays int
}

// Context carries everything Compute must not take from a clock or a
// database: the dates of the documents and the invoice numbers reserved for
// them.
type Context struct {
	// IssueDate is the invoice date (BT-2).
	IssueDate time.Time
	// SupplyDate is the date of supply of goods: the fulfillment's shipping
	// date (BT-72). Unused for services.
	SupplyDate time.Time
	// PaymentDate is the date the payment was received; it is the date of
	// supply of services sent without a service period.
	PaymentDate time.Time
	// Numbers holds one invoice number per document, in the order of
	// Documents(order): the taxed invoice first, then the gift-card document.
	Numbers []string
}
