package billing

import (
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// Format is the e-invoice format of a document.
type Format string

// Formats. Every document is UN/CEFACT CII D16B XML.
const (
	// FormatZUGFeRD is ZUGFeRD 2.x / Factur-X, profile EN 16931
	// (BT-24 urn:cen.eu:en16931:2017).
	FormatZUGFeRD Format = "zugferd"
	// FormatXRechnung is XRechnung 3.0 (CII), used when the buyer has a valid
	// Leitweg-ID.
	FormatXRechnung Format = "xrechnung"
	// FormatSmallAmount is a small-amount invoice (Kleinbetragsrechnung,
	// § 33 UStDV): a PDF only, for a consumer whose name and address are not
	// known; no XML is archived or served (see SmallAmountRefused).
	FormatSmallAmount Format = "small_amount"
)

// Guideline IDs (BT-24) and the XRechnung business process (BT-23).
const (
	GuidelineEN16931   = "urn:cen.eu:en16931:2017"
	GuidelineXRechnung = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
	ProcessPeppol      = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"
)

// TypeCode is the document type (BT-3, UNTDID 1001).
type TypeCode string

// Document types in use.
const (
	TypeInvoice    TypeCode = "380" // commercial invoice
	TypeCreditNote TypeCode = "381" // credit note: cancellation with positive amounts
	TypeCorrected  TypeCode = "384" // corrected invoice: cancellation with negative amounts
)

// Kind tells what a document is for.
type Kind string

// Document kinds.
const (
	KindInvoice      Kind = "invoice"      // the taxed invoice of an order
	KindVoucherSale  Kind = "voucher_sale" // sale of multi-purpose vouchers (gift cards), not subject to VAT
	KindCancellation Kind = "cancellation" // Stornorechnung of an earlier document
	KindCreditNote   Kind = "credit_note"  // correction of an earlier invoice by a partial refund
)

// Category is a VAT category code (BT-118, UNTDID 5305 subset of EN 16931).
type Category string

// VAT categories.
const (
	CategoryStandard   Category = "S"  // standard or reduced rate
	CategoryZero       Category = "Z"  // zero-rated goods
	CategoryExempt     Category = "E"  // exempt
	CategoryReverse    Category = "AE" // reverse charge (services to EU businesses)
	CategoryIntraEU    Category = "K"  // intra-community supply of goods
	CategoryExport     Category = "G"  // export of goods outside the EU
	CategoryNotSubject Category = "O"  // not subject to VAT
)

// Treatment is the VAT treatment of an order's taxed document.
type Treatment string

// VAT treatments; see Determine.
const (
	TreatDomestic      Treatment = "domestic"        // German VAT, buyer in Germany
	TreatDistanceDE    Treatment = "distance_de_vat" // EU consumer, seller not OSS-registered: German VAT
	TreatOSS           Treatment = "oss"             // EU consumer, OSS: destination-country VAT
	TreatIntraEU       Treatment = "intra_eu_goods"  // EU business with VAT ID, goods: K
	TreatReverseCharge Treatment = "reverse_charge"  // EU business with VAT ID, services: AE
	TreatExport        Treatment = "export_goods"    // outside the EU, goods: G
	TreatNotSubject    Treatment = "not_subject"     // outside the EU, services: O
	TreatVoucherSale   Treatment = "voucher_sale"    // multi-purpose vouchers: O
)

// LineKind tells what a line bills.
type LineKind string

// Line kinds.
const (
	LineGoods    LineKind = "goods"
	LineService  LineKind = "service"
	LineShipping LineKind = "shipping"
	LineVoucher  LineKind = "voucher"
)

// Party is the seller or the buyer as printed on the document.
type Party struct {
	ID                    string // BT-29 seller identifier (used on documents without a VAT ID)
	LegalRegistrationID   string // BT-30
	Name                  string // BT-27 / BT-44
	Street                string
	AdditionalAddressLine string
	PostalCode            string
	City                  string
	CountryCode           string
	VATID                 string // BT-31 / BT-48 (VA)
	TaxNumber             string // BT-32 (FC), seller only
	ContactName           string
	ContactPhone          string
	ContactEmail          string
	// ElectronicAddress with its scheme (BT-34/BT-49): "EM" for e-mail,
	// "0204" for a Leitweg-ID.
	ElectronicAddress       string
	ElectronicAddressScheme string
}

// Line is one invoice line (BG-25).
type Line struct {
	ID        string // BT-126, 1-based position
	Kind      LineKind
	Name      string // BT-153
	SKU       string // BT-155
	ProductID string
	Quantity  money.Decimal // BT-129; negative on a 384 cancellation
	UnitCode  string        // BT-130, UN/ECE Rec 20
	// UnitNetPrice is the item net price in currency units (BT-146), never
	// negative; it may carry more than two decimals for gross-priced lines.
	UnitNetPrice money.Decimal
	// DiscountCents is the line allowance (BG-27, BT-136).
	DiscountCents money.Cents
	// NetCents is the line net amount (BT-131):
	// Quantity x UnitNetPrice - DiscountCents, within half a cent.
	NetCents money.Cents
	Category Category      // BT-151
	Rate     money.Decimal // BT-152, percent
	// GrossPriced marks a line whose net was derived from the paid gross.
	GrossPriced bool
	// Period is the line's service period (BG-26) from its product's
	// default, when the lines' periods differ; nil otherwise.
	Period *Period `json:",omitempty"`
	// source is the order input the line comes from ("items[2]",
	// "shippingGrossCents"), so that a line the engine cannot bill is
	// refused with that field.
	source string
}

// VATBreakdown is one VAT breakdown entry (BG-23) per category and rate.
type VATBreakdown struct {
	Category        Category      // BT-118
	Rate            money.Decimal // BT-119
	BaseCents       money.Cents   // BT-116: sum of line nets of this category and rate
	TaxCents        money.Cents   // BT-117: BaseCents x Rate / 100, rounded half up
	ExemptionReason string        // BT-120
	ExemptionCode   string        // BT-121 (VATEX)
}

// Totals are the document totals (BG-22).
type Totals struct {
	LineNetCents   money.Cents // BT-106 = sum of BT-131
	AllowanceCents money.Cents // BT-107 (document level; always 0 here)
	ChargeCents    money.Cents // BT-108 (document level; always 0 here)
	TaxBasisCents  money.Cents // BT-109 = BT-106 - BT-107 + BT-108
	TaxCents       money.Cents // BT-110 = sum of BT-117
	GrandCents     money.Cents // BT-112 = BT-109 + BT-110
	// PrepaidCents is BT-113: store credit redeemed, payments received
	// through the provider before issue (PaidCents) and the offset of a
	// cancellation against the invoice it cancels (OffsetCents).
	PrepaidCents  money.Cents
	RoundingCents money.Cents // BT-114: residual cent of gross pricing
	DueCents      money.Cents // BT-115 = BT-112 - BT-113 + BT-114
	// PaidCents is the part of BT-113 the provider received (or, on a
	// credit note, paid back) before issue: the books take it with the
	// payment, on its own date, never with the document.
	PaidCents money.Cents `json:",omitempty"`
	// OffsetCents is the part of BT-113 a cancellation settles by offset
	// against the invoice it cancels: no money moves, nothing is booked.
	OffsetCents money.Cents `json:",omitempty"`
}

// StoreCreditCents is the part of BT-113 paid by store credit: what is
// left of it after payments and offset. Documents recorded before the
// parts were kept apart have only store credit in BT-113.
func (t Totals) StoreCreditCents() money.Cents {
	return t.PrepaidCents - t.PaidCents - t.OffsetCents
}

// PaymentMeans are the payment instructions (BG-16); see SettleInvoice.
type PaymentMeans struct {
	Code        string // BT-81 (UNTDID 4461): 48/54/55 card, 58 SEPA credit transfer, 59 SEPA direct debit, 68 online payment service, 97 clearing, ...
	Information string // BT-82
	// Card is BG-18 (codes 48, 54, 55); DirectDebit is BG-19 (code 59).
	Card        *CardDetails `json:",omitempty"`
	DirectDebit *DirectDebit `json:",omitempty"`
	IBAN        string       // BT-84
	AccountName string       // BT-85; empty: not stated
	BIC         string       // BT-86
	Reference   string       // BT-83 remittance information
	Terms       string       // BT-20
	// DueDate is the payment due date (BT-9) of an open item; zero when
	// nothing is due or the invoice is paid already.
	DueDate time.Time
}

// Reference names a preceding invoice (BG-3).
type Reference struct {
	Number    string    // BT-25
	IssueDate time.Time // BT-26
}

// Invoice is one fully computed document. render serialises it without
// recomputing anything; internal/einvoice checks it.
type Invoice struct {
	Number    string   // BT-1
	Kind      Kind     //
	TypeCode  TypeCode // BT-3
	Format    Format
	Test      bool // test document: test number range, marked in the XML
	IssueDate time.Time
	Currency  string // BT-5
	OrderNo   string // the seller's order number (BT-14)
	// BuyerReference is BT-10: the Leitweg-ID for XRechnung.
	BuyerReference string
	Notes          []string // BT-22

	Seller Party
	Buyer  Party
	// ShipTo is the deliver-to address (BG-15): the shipping address of
	// goods, else the buyer's address.
	ShipTo *Party

	Treatment Treatment
	Goods     bool // goods (requiresShipping) or services
	// SupplyDate is the actual delivery date (BT-72); zero when Period is set.
	SupplyDate time.Time
	// Period is the invoicing period (BG-14) of services.
	Period *Period

	Lines   []Line
	VAT     []VATBreakdown
	Totals  Totals
	Payment PaymentMeans
	// Preceding is the cancelled invoice of a cancellation (BG-3).
	Preceding *Reference

	// OSSReport: the document counts towards the one-stop-shop return.
	OSSReport bool
	// ECSalesList: the document counts towards the EC sales list
	// (Zusammenfassende Meldung).
	ECSalesList bool
	// Destination is the member state of consumption of an OSS sale.
	Destination string
}

// Guideline returns the specification identifier BT-24 of inv's format.
func (inv *Invoice) Guideline() string {
	if inv.Format == FormatXRechnung {
		return GuidelineXRechnung
	}
	return GuidelineEN16931
}

// BusinessProcess returns BT-23: set for XRechnung, empty for ZUGFeRD.
func (inv *Invoice) BusinessProcess() string {
	if inv.Format == FormatXRechnung {
		return ProcessPeppol
	}
	return ""
}
