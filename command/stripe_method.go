package command

import (
	"encoding/json"
	"strings"

	"github.com/o2i-service/o2i/internal/billing"
)

// How the buyer paid, read from a Stripe payment intent event. Stripe says
// it in one of three places, depending on the API version of the webhook
// endpoint:
//
//   - older versions embed the charges: charges.data[].payment_method_details;
//   - current versions name the charge in latest_charge, a charge id or,
//     when expanded, the charge with its payment_method_details;
//   - every version lists the allowed methods in payment_method_types.
//
// The first that says something wins. Nothing here fetches from the
// provider: what the event does not say stays unknown, and the invoice
// names the method generically (billing.Means).

// stripeMethodDetails is a charge's payment_method_details.
type stripeMethodDetails struct {
	Type string `json:"type"`
	Card *struct {
		Brand   string `json:"brand"`
		Funding string `json:"funding"`
		Last4   string `json:"last4"`
	} `json:"card,omitempty"`
	SEPADebit *struct {
		Mandate string `json:"mandate"`
		Last4   string `json:"last4"`
	} `json:"sepa_debit,omitempty"`
}

// stripeCharge is the part of a charge read for the method.
type stripeCharge struct {
	PaymentMethodDetails *stripeMethodDetails `json:"payment_method_details,omitempty"`
	BillingDetails       *struct {
		Name string `json:"name"`
	} `json:"billing_details,omitempty"`
}

// stripeIntentMethod is the part of a payment intent read for the method.
// Its descriptions are the OpenAPI document's (StripeEvent.PrepareJSONSchema).
type stripeIntentMethod struct {
	Charges *struct {
		Data []stripeCharge `json:"data"`
	} `json:"charges,omitempty" description:"older API versions: the payment intent's charges; the last one's payment_method_details says how the buyer paid"`
	LatestCharge       json.RawMessage `json:"latest_charge,omitempty" description:"the latest charge: its id, or the charge itself (with payment_method_details) when expanded"`
	PaymentMethodTypes []string        `json:"payment_method_types,omitempty" description:"the payment methods allowed; when it names one, that is how the buyer paid"`
}

// stripePaymentMethod reads how the buyer paid from a payment intent object
// (the event's data.object, raw). It never fails: what it cannot read is
// billing.MethodUnknown.
func stripePaymentMethod(object []byte) billing.PaymentMethod {
	var pi stripeIntentMethod
	if json.Unmarshal(object, &pi) != nil {
		return billing.PaymentMethod{}
	}
	if pi.Charges != nil {
		for i := len(pi.Charges.Data) - 1; i >= 0; i-- { // the last charge is the one that succeeded
			if m, ok := chargeMethod(pi.Charges.Data[i]); ok {
				return m
			}
		}
	}
	if len(pi.LatestCharge) > 0 && pi.LatestCharge[0] == '{' {
		var ch stripeCharge
		if json.Unmarshal(pi.LatestCharge, &ch) == nil {
			if m, ok := chargeMethod(ch); ok {
				return m
			}
		}
	}
	if len(pi.PaymentMethodTypes) == 1 {
		return methodOfType(pi.PaymentMethodTypes[0])
	}
	return billing.PaymentMethod{}
}

func chargeMethod(ch stripeCharge) (billing.PaymentMethod, bool) {
	d := ch.PaymentMethodDetails
	if d == nil || d.Type == "" {
		return billing.PaymentMethod{}, false
	}
	m := methodOfType(d.Type)
	if c := d.Card; c != nil && m.Kind == billing.MethodCard {
		m.CardBrand, m.CardFunding = c.Brand, c.Funding
		if last4 := strings.TrimSpace(c.Last4); len(last4) == 4 {
			m.CardLast4 = last4
		}
		if ch.BillingDetails != nil {
			m.CardHolder = strings.TrimSpace(ch.BillingDetails.Name)
		}
	}
	if s := d.SEPADebit; s != nil && m.Kind == billing.MethodSEPADebit {
		m.MandateRef = s.Mandate
	}
	return m, true
}

// methodOfType maps a Stripe payment method type to its kind.
func methodOfType(t string) billing.PaymentMethod {
	t = strings.ToLower(strings.TrimSpace(t))
	m := billing.PaymentMethod{Type: t}
	switch t {
	case "":
		return billing.PaymentMethod{}
	case "card", "card_present", "interac_present":
		m.Kind = billing.MethodCard
	case "sepa_debit":
		m.Kind = billing.MethodSEPADebit
	case "customer_balance":
		// Bank transfer to the customer's virtual account at the provider.
		m.Kind = billing.MethodProviderTransfer
	default:
		m.Kind = billing.MethodOnline
	}
	return m
}
