// Package lifecycle decides what comes next for an order (spec: States and
// transitions): whether its invoice is due now, what it waits for (the
// payment, the fulfillment), or which review task holds it back without an
// invoice number. It is the one place of these rules: the invoicer asks it
// for every order event, and the issuing transaction asks it again on the
// locked order. Pure: it imports only the standard library.
package lifecycle

// Facts are what the decision needs to know about an order and its project.
type Facts struct {
	Status           string // created, invoiced or cancelled
	RequiresShipping bool   // goods: invoiced at the complete shipment
	Fulfilled        bool   // the fulfilled report arrived
	Paid             bool   // the payment provider's payment is matched
	CoveredByCredit  bool   // store credit covers everything and financialStatus is paid
	InvoiceFirst     bool   // its paymentGateway is an enabled invoice-first gateway (exact spelling)

	XRechnung         bool // the buyer has a Leitweg-ID
	ContactPhone      bool // the project's invoice contact has a telephone number
	Accrual           bool // the project uses accrual accounting
	ServicePeriod     bool // the order sends a service_period
	RevenueRecognised bool // every line's product has a revenue recognition
}

// Waiting is what an order waits for before its invoice is due.
type Waiting string

// What an order waits for.
const (
	WaitingNone        Waiting = "none"        // due now, invoiced, cancelled, or held (see Hold)
	WaitingPayment     Waiting = "payment"     // the payment provider's payment (matched by paymentRef)
	WaitingFulfillment Waiting = "fulfillment" // the fulfilled report of goods
)

// Hold kinds: review tasks that keep a due order without an invoice number
// until their cause clears.
const (
	HoldContactPhone       = "xrechnung_contact_phone_missing"     // XRechnung needs the contact's phone (BR-DE-6)
	HoldRevenueRecognition = "product_without_revenue_recognition" // accrual accounting: no period, no product default
)

// Decision is what comes next for an order.
type Decision struct {
	Due        bool    // issue the invoice now
	WaitingFor Waiting // why it is not due yet: the first of Waits, or none
	Hold       string  // the hold kind that keeps a due order back, or ""
}

// Waits returns everything an order still misses before its invoice is due,
// in process order: the payment (unless store credit covers everything or an
// invoice-first gateway invoices it as an open item), then the fulfilled
// report of goods. It is empty for an order not in status created (invoiced
// or cancelled) and for one that misses nothing, held or not.
func Waits(f Facts) []Waiting {
	if f.Status != "created" {
		return nil
	}
	var w []Waiting
	if !f.CoveredByCredit && !f.InvoiceFirst && !f.Paid {
		w = append(w, WaitingPayment)
	}
	if f.RequiresShipping && !f.Fulfilled {
		w = append(w, WaitingFulfillment)
	}
	return w
}

// Decide returns the decision for f:
//   - only an order in status created can become due;
//   - it waits for what Waits lists (the payment: store credit covering
//     everything, an invoice-first gateway, or the provider's payment; the
//     fulfilled report of goods), WaitingFor naming the first;
//   - a due order is held while XRechnung lacks the contact's phone, or while
//     a service under accrual accounting has neither a service period nor a
//     product revenue recognition.
func Decide(f Facts) Decision {
	if f.Status != "created" {
		return Decision{WaitingFor: WaitingNone}
	}
	if w := Waits(f); len(w) > 0 {
		return Decision{WaitingFor: w[0]}
	}
	if h := HoldOf(f); h != "" {
		return Decision{WaitingFor: WaitingNone, Hold: h}
	}
	return Decision{Due: true, WaitingFor: WaitingNone}
}

// HoldOf returns the hold kind that keeps a due order back, or "".
func HoldOf(f Facts) string {
	switch {
	case f.XRechnung && !f.ContactPhone:
		return HoldContactPhone
	case f.Accrual && !f.RequiresShipping && !f.ServicePeriod && !f.RevenueRecognised:
		return HoldRevenueRecognition
	}
	return ""
}

// CoveredByCredit reports whether redeemed store credit (the amounts in
// cents) pays the whole order: their sum equals grossTotalCents and the
// financial status is paid (spec: CreditRedemption rules).
func CoveredByCredit(financialStatus string, grossTotalCents *int64, credits []int64) bool {
	if len(credits) == 0 || grossTotalCents == nil || financialStatus != "paid" {
		return false
	}
	var sum int64
	for _, c := range credits {
		sum += c
	}
	return sum == *grossTotalCents
}

// Payment states of an order, for its status record.
const (
	PaymentPending = "pending" // no payment yet, none needed yet
	PaymentOpen    = "open"    // invoiced as an open item of an invoice-first gateway: the payment is due
	PaymentPaid    = "paid"    // the provider's payment is matched
	PaymentCredit  = "credit"  // store credit pays the whole order
)

// PaymentOf returns the order's payment state.
func PaymentOf(f Facts) string {
	switch {
	case f.Paid:
		return PaymentPaid
	case f.CoveredByCredit:
		return PaymentCredit
	case f.InvoiceFirst && f.Status == "invoiced":
		return PaymentOpen
	}
	return PaymentPending
}
