package command

import (
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
)

// TestStripePaymentMethod reads how the buyer paid from each of the three
// shapes a payment_intent.succeeded carries across Stripe API versions.
func TestStripePaymentMethod(t *testing.T) {
	cases := []struct {
		name   string
		object string
		want   billing.PaymentMethod
	}{
		{"older API: embedded charges, credit card",
			`{"id":"pi_1","charges":{"data":[{"payment_method_details":{"type":"card","card":{"brand":"visa","funding":"credit","last4":"4242"}},"billing_details":{"name":"Erika Musterfrau"}}]}}`,
			billing.PaymentMethod{Kind: billing.MethodCard, Type: "card", CardBrand: "visa", CardFunding: "credit", CardLast4: "4242", CardHolder: "Erika Musterfrau"}},
		{"older API: the last charge succeeded",
			`{"id":"pi_1","charges":{"data":[{"payment_method_details":{"type":"card","card":{"brand":"visa","funding":"debit","last4":"0002"}}},{"payment_method_details":{"type":"paypal"}}]}}`,
			billing.PaymentMethod{Kind: billing.MethodOnline, Type: "paypal"}},
		{"current API: expanded latest_charge, SEPA debit",
			`{"id":"pi_2","latest_charge":{"id":"ch_2","payment_method_details":{"type":"sepa_debit","sepa_debit":{"mandate":"mandate_1Nx","last4":"3000"}}},"payment_method_types":["card","sepa_debit"]}`,
			billing.PaymentMethod{Kind: billing.MethodSEPADebit, Type: "sepa_debit", MandateRef: "mandate_1Nx"}},
		{"current API: latest_charge an id, one method type",
			`{"id":"pi_3","latest_charge":"ch_3","payment_method_types":["klarna"]}`,
			billing.PaymentMethod{Kind: billing.MethodOnline, Type: "klarna"}},
		{"current API: card by type only, no digits",
			`{"id":"pi_4","latest_charge":"ch_4","payment_method_types":["card"]}`,
			billing.PaymentMethod{Kind: billing.MethodCard, Type: "card"}},
		{"bank transfer to the provider's account",
			`{"id":"pi_5","payment_method_types":["customer_balance"]}`,
			billing.PaymentMethod{Kind: billing.MethodProviderTransfer, Type: "customer_balance"}},
		{"several method types and no charge: unknown", `{"id":"pi_6","payment_method_types":["card","paypal"]}`, billing.PaymentMethod{}},
		{"nothing said", `{"id":"pi_7","amount_received":100}`, billing.PaymentMethod{}},
		{"a card number longer than 4 digits is not kept",
			`{"id":"pi_8","latest_charge":{"payment_method_details":{"type":"card","card":{"brand":"visa","funding":"credit","last4":"4242424242424242"}}}}`,
			billing.PaymentMethod{Kind: billing.MethodCard, Type: "card", CardBrand: "visa", CardFunding: "credit"}},
		{"not an object", `"pi_9"`, billing.PaymentMethod{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := stripePaymentMethod([]byte(tc.object)); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
