package billing

import (
	"fmt"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// What a document says about the money (BT-113, BT-115, BG-16, BT-20)
//
// The payment block of a document tells the buyer what happened to the
// money and what, if anything, is still to be paid. It is decided here, in
// one place, from what is known when the document is issued:
//
//	case                                   BT-113                 BT-115         BG-16 (BT-81)                         BT-20
//	paid before issue (provider payment)   received (+ credit)    0              how it was paid: 48/54/55 card,       "Bezahlt am … per … (Stripe, pi_…).
//	                                                                             59 SEPA debit, 68 online service,      Es ist keine Zahlung mehr zu leisten."
//	                                                                             58 to the provider's virtual IBAN
//	paid by store credit alone             credit                 0              97 clearing                           "Mit Guthaben bezahlt …"
//	partly paid (credit and/or payment)    received (+ credit)    the rest       58 to the seller's IBAN, due date     "Bereits bezahlt … Restbetrag … bis zum …"
//	open item (invoice-first, transfer)    credit, if any         the rest       58 to the seller's or provider's IBAN "Zahlbar innerhalb von N Tagen …"
//	nothing known                          credit, if any         the rest       58 to the seller's IBAN               "Zahlbar sofort ohne Abzug."
//	credit note, refunded already          the refund             0              the original payment's means          "Erstattet am … per …"
//	credit note, refund still to be paid   0                      the refund     1 (the seller pays)                   "Der Betrag wird … erstattet."
//	cancellation                           its grand total        0              97 clearing                           "Verrechnet mit Rechnung …"
//
// A caller-sent financialStatus never makes a document paid: BT-113 comes
// only from matched provider payments and store credit. The seller's IBAN
// is never the pay-to account of a document with nothing due.
//
// BT-113 has three sources that the books treat differently (see
// Totals.StoreCreditCents): store credit redeemed (booked with the
// document), provider payments received before issue (booked once, with the
// payment, on its own date) and the offset of a cancellation against the
// invoice it cancels (booked by nothing).

// MethodKind is how the buyer paid, as the payment provider reported it.
type MethodKind string

// Payment method kinds.
const (
	MethodUnknown          MethodKind = ""                  // the provider did not say
	MethodCard             MethodKind = "card"              // credit, debit or prepaid card
	MethodSEPADebit        MethodKind = "sepa_debit"        // SEPA direct debit
	MethodOnline           MethodKind = "online"            // PayPal, Klarna, wallets and other online payment services
	MethodProviderTransfer MethodKind = "provider_transfer" // credit transfer to the provider's virtual account
)

// PaymentMethod is what the provider said about how the buyer paid.
type PaymentMethod struct {
	Kind MethodKind `json:"kind,omitempty"`
	// Type is the provider's own word for the method (card, sepa_debit,
	// paypal, klarna, link, ...).
	Type        string `json:"type,omitempty"`
	CardBrand   string `json:"cardBrand,omitempty"`   // visa, mastercard, ...
	CardFunding string `json:"cardFunding,omitempty"` // credit, debit, prepaid, unknown
	CardLast4   string `json:"cardLast4,omitempty"`   // only the last four digits, never more
	CardHolder  string `json:"cardHolder,omitempty"`
	// MandateRef, CreditorID and DebitedIBAN are a SEPA direct debit's
	// mandate reference (BT-89), the creditor identifier (BT-90) and the
	// debited account (BT-91).
	MandateRef  string `json:"mandateRef,omitempty"`
	CreditorID  string `json:"creditorId,omitempty"`
	DebitedIBAN string `json:"debitedIban,omitempty"`
}

// ReceivedPayment is a payment the provider reported for the order before
// its document is issued (or, on a credit note, the payment a refund went
// back to).
type ReceivedPayment struct {
	Provider  string        `json:"provider"`  // the provider's name as printed: "Stripe"
	Reference string        `json:"reference"` // the provider's reference (pi_…)
	Date      time.Time     `json:"date"`
	Cents     money.Cents   `json:"cents"`
	Method    PaymentMethod `json:"method"`
}

// CardDetails is BG-18.
type CardDetails struct {
	Last4  string `json:",omitempty"` // BT-87: only the last four digits (BR-51)
	Holder string `json:",omitempty"` // BT-88
}

// DirectDebit is BG-19.
type DirectDebit struct {
	MandateRef  string `json:",omitempty"` // BT-89
	CreditorID  string `json:",omitempty"` // BT-90
	DebitedIBAN string `json:",omitempty"` // BT-91
}

// Payment means codes (BT-81, UNTDID 4461) in use.
const (
	MeansNotDefined     = "1"
	MeansBankCard       = "48"
	MeansCreditCard     = "54"
	MeansDebitCard      = "55"
	MeansSEPATransfer   = "58"
	MeansSEPADebit      = "59"
	MeansOnlineService  = "68"
	MeansClearing       = "97"
	MeansMutuallyDefine = "ZZZ"
)

// Means returns the payment instructions (BG-16) that say how p was paid:
// a card by its funding with the last four digits (BG-18), a SEPA direct
// debit with mandate, creditor id and debited account all known as 59 with
// BG-19, a transfer to the provider's virtual account as 58 with that
// account (transfer), and everything else (wallets, PayPal, Klarna, a debit
// with a detail missing, a method the provider did not name) as 68, an
// online payment service, named in words.
func Means(p ReceivedPayment, transfer *BankTransfer) PaymentMeans {
	m := p.Method
	pm := PaymentMeans{Reference: p.Reference}
	switch {
	case m.Kind == MethodCard && validLast4(m.CardLast4):
		switch strings.ToLower(m.CardFunding) {
		case "credit":
			pm.Code = MeansCreditCard
		case "debit":
			pm.Code = MeansDebitCard
		default:
			pm.Code = MeansBankCard
		}
		pm.Card = &CardDetails{Last4: m.CardLast4, Holder: m.CardHolder}
	case m.Kind == MethodSEPADebit && m.MandateRef != "" && m.CreditorID != "" && m.DebitedIBAN != "":
		pm.Code = MeansSEPADebit
		pm.DirectDebit = &DirectDebit{MandateRef: m.MandateRef, CreditorID: m.CreditorID,
			DebitedIBAN: strings.ReplaceAll(m.DebitedIBAN, " ", "")}
	case m.Kind == MethodProviderTransfer && transfer != nil && transfer.IBAN != "":
		pm.Code, pm.IBAN, pm.BIC, pm.AccountName = MeansSEPATransfer, strings.ReplaceAll(transfer.IBAN, " ", ""), transfer.BIC, transfer.AccountHolder
		if transfer.Reference != "" {
			pm.Reference = transfer.Reference
		}
	default:
		pm.Code = MeansOnlineService
	}
	if pm.Card != nil {
		// The code says card already: BT-82 says which one.
		pm.Information = cardDetail(m) + ", über " + providerOf(p)
	} else {
		pm.Information = MethodName(p)
	}
	return pm
}

// cardDetail names a card: "Visa, endet auf 4242".
func cardDetail(m PaymentMethod) string {
	var detail []string
	if m.CardBrand != "" {
		detail = append(detail, brandName(m.CardBrand))
	}
	if validLast4(m.CardLast4) {
		detail = append(detail, "endet auf "+m.CardLast4)
	}
	return strings.Join(detail, ", ")
}

func providerOf(p ReceivedPayment) string {
	if p.Provider == "" {
		return "Zahlungsdienstleister"
	}
	return p.Provider
}

// MethodName names how p was paid, in words: "Karte (Visa, endet auf
// 4242)", "SEPA-Lastschrift", "PayPal", with the provider.
func MethodName(p ReceivedPayment) string {
	m := p.Method
	provider := providerOf(p)
	var s string
	switch m.Kind {
	case MethodCard:
		s = "Karte"
		if d := cardDetail(m); d != "" {
			s += " (" + d + ")"
		}
	case MethodSEPADebit:
		s = "SEPA-Lastschrift"
		if m.MandateRef != "" {
			s += " (Mandat " + m.MandateRef + ")"
		}
	case MethodProviderTransfer:
		s = "Überweisung an " + provider
		return s
	case MethodOnline:
		s = onlineName(m.Type)
	default:
		s = "Online-Zahlung"
	}
	return s + " über " + provider
}

func validLast4(s string) bool {
	if len(s) != 4 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func brandName(b string) string {
	switch strings.ToLower(b) {
	case "visa":
		return "Visa"
	case "mastercard":
		return "Mastercard"
	case "amex":
		return "American Express"
	case "diners":
		return "Diners Club"
	case "discover":
		return "Discover"
	case "jcb":
		return "JCB"
	case "unionpay":
		return "UnionPay"
	case "cartes_bancaires":
		return "Cartes Bancaires"
	}
	return b
}

func onlineName(t string) string {
	switch strings.ToLower(t) {
	case "paypal":
		return "PayPal"
	case "klarna":
		return "Klarna"
	case "link":
		return "Link"
	case "giropay":
		return "giropay"
	case "sofort":
		return "Sofortüberweisung"
	case "eps":
		return "eps-Überweisung"
	case "ideal":
		return "iDEAL"
	case "bancontact":
		return "Bancontact"
	case "apple_pay":
		return "Apple Pay"
	case "google_pay":
		return "Google Pay"
	case "amazon_pay":
		return "Amazon Pay"
	case "revolut_pay":
		return "Revolut Pay"
	case "":
		return "Online-Zahlung"
	}
	return t
}

// InvoiceSettlement is what is known about the money of one invoice (or
// gift-card document) when it is issued.
type InvoiceSettlement struct {
	PayableCents money.Cents // BT-112 + BT-114
	CreditCents  money.Cents // store credit applied to this document (≤ PayableCents)
	CreditRefs   []string    // the caller's references of the credit redemptions
	// Paid are the provider payments applied to this document, each with
	// the part of it applied (Cents); their sum is at most PayableCents -
	// CreditCents.
	Paid []ReceivedPayment
	// OpenItem: an invoice-first gateway's order or a provider transfer
	// still waiting: the invoice is an open item with a payment term.
	OpenItem bool
	Transfer *BankTransfer // the provider's virtual account of a provider_transfer order
	// CarriedFrom is the number of the cancelled invoice whose payment the
	// document carries over (a correction); empty otherwise.
	CarriedFrom string
	Gateway     string
	SellerIBAN  string
	SellerBIC   string
	// Reference is BT-83 of an open item: the payment reference, else the
	// invoice number. The rest of a partly paid document is asked for
	// with the order number.
	Reference string
	OrderNo   string
	Currency  string
	IssueDate time.Time
	TermDays  int // 0: DefaultPaymentTermDays
}

// Settled is the payment block of a document: BT-113 (with its sources),
// BT-115 and BG-16 with BT-9/BT-20.
type Settled struct {
	PrepaidCents money.Cents // BT-113
	PaidCents    money.Cents // part of BT-113 received through the provider before issue
	DueCents     money.Cents // BT-115 (with BT-114 in it)
	Means        PaymentMeans
}

// SettleInvoice decides the payment block of an invoice or gift-card
// document. It is pure: every case of the table above is one input.
func SettleInvoice(f InvoiceSettlement) (Settled, error) {
	var paid money.Cents
	for _, p := range f.Paid {
		if p.Cents <= 0 {
			return Settled{}, fmt.Errorf("billing: payment %s of %s: applied amount must be positive", p.Reference, p.Cents)
		}
		paid += p.Cents
	}
	if f.CreditCents < 0 || f.CreditCents+paid > f.PayableCents && f.PayableCents >= 0 {
		return Settled{}, fmt.Errorf("billing: credit %s and payments %s exceed the amount payable %s", f.CreditCents, paid, f.PayableCents)
	}
	s := Settled{PrepaidCents: f.CreditCents + paid, PaidCents: paid}
	s.DueCents = f.PayableCents - s.PrepaidCents
	days := f.TermDays
	if days <= 0 {
		days = DefaultPaymentTermDays
	}
	ref := f.Reference
	if ref == "" {
		ref = f.OrderNo
	}
	sellerAccount := func() PaymentMeans {
		pm := PaymentMeans{Code: MeansMutuallyDefine, Reference: ref}
		if iban := strings.ReplaceAll(f.SellerIBAN, " ", ""); iban != "" {
			pm.Code, pm.IBAN, pm.BIC = MeansSEPATransfer, iban, f.SellerBIC
		}
		if f.Gateway != "" {
			pm.Information = "Zahlung über " + f.Gateway
		}
		return pm
	}
	var said []string // what happened to the money, sentence by sentence
	for _, p := range f.Paid {
		said = append(said, fmt.Sprintf("Bezahlt am %s per %s (%s).", p.Date.Format("02.01.2006"), MethodName(p), p.Reference))
	}
	if f.CarriedFrom != "" && paid > 0 {
		said = append(said, "Die Zahlung wurde von der stornierten Rechnung "+f.CarriedFrom+" übertragen.")
	}
	if f.CreditCents > 0 {
		c := fmt.Sprintf("Mit Guthaben bezahlt: %s %s", f.CreditCents, f.Currency)
		if len(f.CreditRefs) > 0 {
			c += " (Ref. " + strings.Join(f.CreditRefs, ", ") + ")"
		}
		said = append(said, c+".")
	}

	switch {
	case s.DueCents == 0 && paid > 0:
		// Paid before issue: say how, never ask again.
		s.Means = Means(largest(f.Paid), f.Transfer)
		s.Means.Terms = strings.Join(append(said, "Es ist keine Zahlung mehr zu leisten."), " ")
	case s.DueCents == 0:
		// Store credit alone (or nothing payable at all).
		s.Means = PaymentMeans{Code: MeansClearing, Information: "Verrechnung mit Guthaben", Reference: ref}
		s.Means.Terms = strings.Join(append(said, "Es ist keine Zahlung mehr zu leisten."), " ")
		if f.CreditCents == 0 {
			s.Means.Terms = "Es ist keine Zahlung zu leisten."
		}
	case f.Transfer != nil:
		// The provider's bank-transfer order: its virtual IBAN and reference.
		t := f.Transfer
		s.Means = PaymentMeans{Code: MeansSEPATransfer, IBAN: strings.ReplaceAll(t.IBAN, " ", ""), BIC: t.BIC,
			AccountName: t.AccountHolder, Reference: t.Reference, Information: "Überweisung an das Konto des Zahlungsdienstleisters"}
		s.Means.DueDate = f.IssueDate.AddDate(0, 0, days)
		s.Means.Terms = strings.Join(append(said, dueSentence(s, days, f.Currency, s.Means.Reference)), " ")
	case s.PrepaidCents > 0 || f.OpenItem:
		// Partly paid, or an open item: the rest within the term.
		s.Means = sellerAccount()
		if s.PrepaidCents > 0 && f.OrderNo != "" {
			s.Means.Reference, ref = f.OrderNo, f.OrderNo
		}
		s.Means.DueDate = f.IssueDate.AddDate(0, 0, days)
		transferRef := ""
		if s.Means.IBAN != "" {
			transferRef = ref
		}
		s.Means.Terms = strings.Join(append(said, dueSentence(s, days, f.Currency, transferRef)), " ")
	default:
		s.Means = sellerAccount()
		s.Means.Terms = "Zahlbar sofort ohne Abzug."
	}
	return s, nil
}

// dueSentence asks for what is due within the term.
func dueSentence(s Settled, days int, currency, transferRef string) string {
	var t string
	if s.PrepaidCents > 0 {
		t = fmt.Sprintf("Restbetrag %s %s zahlbar innerhalb von %d Tagen ohne Abzug bis zum %s.", s.DueCents, currency, days, s.Means.DueDate.Format("02.01.2006"))
	} else {
		t = fmt.Sprintf("Zahlbar innerhalb von %d Tagen ohne Abzug bis zum %s.", days, s.Means.DueDate.Format("02.01.2006"))
	}
	if transferRef != "" {
		t += " Bitte überweisen Sie den Betrag unter Angabe des Verwendungszwecks " + transferRef + "."
	}
	return t
}

// largest is the payment that paid most (the first of equals): its means
// stand for the document's.
func largest(ps []ReceivedPayment) ReceivedPayment {
	best := ps[0]
	for _, p := range ps[1:] {
		if p.Cents > best.Cents {
			best = p
		}
	}
	return best
}

// RefundSettlement is what is known about the money of a credit note.
type RefundSettlement struct {
	// Refunded: the provider paid the amount back through the original
	// means already (a charge.refunded report); Refund is that payment.
	Refunded bool
	Refund   ReceivedPayment // Cents: the amount refunded; Date: when
	TermDays int
	Currency string
}

// SettleCreditNote decides the payment block of a credit note (381,
// positive amounts) whose amount (BT-112 + BT-114) is payable: BT-115 is
// what the seller still owes the buyer.
func SettleCreditNote(payable money.Cents, f RefundSettlement, issueDate time.Time) Settled {
	if f.Refunded {
		pm := Means(f.Refund, nil)
		if pm.Code == MeansSEPATransfer || pm.Code == MeansSEPADebit {
			// Money that came by transfer or debit went back to the buyer's
			// account: no account is a pay-to or debited account of a
			// settled note.
			pm = PaymentMeans{Code: MeansOnlineService, Information: MethodName(f.Refund), Reference: f.Refund.Reference}
		}
		pm.Terms = fmt.Sprintf("Erstattet am %s per %s (%s). Es ist keine Zahlung mehr zu leisten.",
			f.Refund.Date.Format("02.01.2006"), MethodName(f.Refund), f.Refund.Reference)
		return Settled{PrepaidCents: payable, PaidCents: payable, Means: pm}
	}
	days := f.TermDays
	if days <= 0 {
		days = DefaultPaymentTermDays
	}
	pm := PaymentMeans{Code: MeansNotDefined, Information: "Erstattung durch den Verkäufer", Reference: f.Refund.Reference}
	pm.DueDate = issueDate.AddDate(0, 0, days)
	pm.Terms = fmt.Sprintf("Der Betrag von %s %s wird Ihnen bis zum %s über den ursprünglichen Zahlungsweg erstattet. "+
		"Sie müssen nichts zahlen.", payable, f.Currency, pm.DueDate.Format("02.01.2006"))
	return Settled{DueCents: payable, Means: pm}
}

// SettleCancellation decides the payment block of a cancellation: it
// settles by offset against the invoice it cancels, so BT-113 is its whole
// amount (signed as its amounts: negative on a 384), BT-115 is 0, and
// nothing is paid or asked for.
func SettleCancellation(payable money.Cents, cancelled Reference) Settled {
	pm := PaymentMeans{Code: MeansClearing, Information: "Verrechnung mit Rechnung " + cancelled.Number, Reference: cancelled.Number}
	pm.Terms = fmt.Sprintf("Verrechnet mit Rechnung %s vom %s. Es ist keine Zahlung zu leisten.",
		cancelled.Number, cancelled.IssueDate.Format("02.01.2006"))
	return Settled{PrepaidCents: payable, Means: pm}
}
