package command_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/o2i-service/o2i/internal/httpx"
)

// TestOrderRulesOfTheEngine: rates not allowed for a German buyer and a
// grossTotalCents that is not the computed amount payable are refused at the
// door with the exact field.
func TestOrderRulesOfTheEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := `"billingAddress":{"country_code":"DE","name":"Max","street":"Weg 1","postal_code":"10115","city":"Berlin"}`
	tests := []struct {
		name, body, field string
	}{
		{"16 % for a German buyer", `"items":[{"name":"A","quantity":1,"unitNetCents":1000,"taxRate":16}]`, "items[0].taxRate"},
		{"second line 5 %", `"items":[{"name":"A","quantity":1,"unitNetCents":1000,"taxRate":19},{"name":"B","quantity":1,"unitNetCents":1000,"taxRate":5}]`, "items[1].taxRate"},
		{"shipping at 16 %", `"items":[{"name":"A","quantity":1,"unitNetCents":1000,"taxRate":19}],"shippingNetCents":490,"shippingTaxRate":16`, "shippingTaxRate"},
		{"gross total one cent off", `"items":[{"name":"A","quantity":1,"unitGrossCents":1190,"taxRate":19}],"creditRedemptions":[{"type":"referral_credit","amountCents":100,"externalRef":"r"}],"grossTotalCents":1191`, "grossTotalCents"},
		{"gross total right", `"items":[{"name":"A","quantity":1,"unitGrossCents":1190,"taxRate":19}],"creditRedemptions":[{"type":"referral_credit","amountCents":100,"externalRef":"r"}],"grossTotalCents":1190`, ""},
		{"rates 19, 7 and 0", `"items":[{"name":"A","quantity":1,"unitNetCents":1000,"taxRate":19},{"name":"B","quantity":1,"unitNetCents":1000,"taxRate":7},{"name":"C","quantity":1,"unitNetCents":1000,"taxRate":0}]`, ""},
		{"no address details yet: accepted, held at invoicing", `"items":[{"name":"A","quantity":1,"unitNetCents":1000,"taxRate":19}],"billingAddress":{"country_code":"DE"}`, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"orderNo":"E-%d",%s,%s}`, i, base, tt.body)
			if tt.name == "no address details yet: accepted, held at invoicing" {
				body = fmt.Sprintf(`{"orderNo":"E-%d",%s}`, i, tt.body)
			}
			r := e.postOrder([]byte(body))
			var eb httpx.ErrorBody
			_ = json.Unmarshal(r.body, &eb)
			status, field := r.status, eb.Error.Field
			if tt.field == "" {
				if status != 201 {
					t.Errorf("status %d (field %q), want 201", status, field)
				}
				return
			}
			if status != 422 || field != tt.field {
				t.Errorf("status %d field %q, want 422 %q", status, field, tt.field)
			}
		})
	}
}
