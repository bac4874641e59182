package command_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func ba(m map[string]any) map[string]any { return m["billingAddress"].(map[string]any) }
func item(m map[string]any, i int) map[string]any {
	return m["items"].([]any)[i].(map[string]any)
}

var redemption = func(amount string) map[string]any {
	return map[string]any{"type": "referral_credit", "amountCents": json.Number(amount), "externalRef": "ct_1"}
}

func TestPlaceOrderValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name   string
		change func(m map[string]any)
		raw    string // sent instead of the changed order when set
		status int
		code   string
		field  string
	}{
		// Accepted variants.
		{name: "valid", change: func(m map[string]any) {}, status: 201},
		{name: "cents with integral exponent", change: func(m map[string]any) { item(m, 0)["unitGrossCents"] = json.Number("1e2") }, status: 201},
		{name: "cents 100.0 is an integer", change: func(m map[string]any) { item(m, 0)["unitGrossCents"] = json.Number("100.0") }, status: 201},
		{name: "both unit prices", change: func(m map[string]any) { item(m, 0)["unitNetCents"] = json.Number("1000") }, status: 201},
		{name: "leitweg id", change: func(m map[string]any) { ba(m)["leitweg_id"] = "04011000-1234512345-06" }, status: 201},
		{name: "leitweg id with letters", change: func(m map[string]any) { ba(m)["leitweg_id"] = "991-33333TEST-33" }, status: 201},
		{name: "leitweg id X", change: func(m map[string]any) { ba(m)["leitweg_id"] = "04011000-900X999-08" }, status: 201},
		{name: "leitweg id short", change: func(m map[string]any) { ba(m)["leitweg_id"] = "992-90009-96" }, status: 201},
		{name: "service period", change: func(m map[string]any) {
			m["service_period"] = map[string]any{"start_date": "2026-01-01", "end_date": "2026-01-01"}
		}, status: 201},
		{name: "shipping gross", change: func(m map[string]any) { m["shippingGrossCents"] = json.Number("490") }, status: 201},
		{name: "shipping net with rate", change: func(m map[string]any) {
			m["shippingNetCents"] = json.Number("412")
			m["shippingTaxRate"] = json.Number("19")
		}, status: 201},
		{name: "credit equal to total", change: func(m map[string]any) {
			// The base order's computed amount payable is 41.65.
			m["creditRedemptions"] = []any{redemption("4000"), redemption("165")}
			m["grossTotalCents"] = json.Number("4165")
		}, status: 201},
		{name: "nulls for optional fields", change: func(m map[string]any) {
			m["paymentRef"], m["email"], m["shippingGrossCents"], m["service_period"], m["currency"] = nil, nil, nil, nil, nil
			item(m, 0)["taxRate"], item(m, 0)["sku"] = nil, nil
		}, status: 201},
		{name: "numeric productId", change: func(m map[string]any) { item(m, 1)["productId"] = json.Number("4711") }, status: 201},

		// orderNo
		{name: "orderNo missing", change: func(m map[string]any) { delete(m, "orderNo") }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo empty", change: func(m map[string]any) { m["orderNo"] = "" }, status: 422, code: "validation_failed", field: "orderNo"},
		// Identifiers carry no control or bidirectional formatting characters.
		{name: "orderNo with CR LF", change: func(m map[string]any) { m["orderNo"] = "A-1\r\nRE-2026-000001;100,00" }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo with TAB", change: func(m map[string]any) { m["orderNo"] = "A-1\tX" }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo with ESC", change: func(m map[string]any) { m["orderNo"] = "A-1\u001b[31m" }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo with RLO", change: func(m map[string]any) { m["orderNo"] = "A-1\u202egnp.exe" }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo with LRI", change: func(m map[string]any) { m["orderNo"] = "A-1\u2066" }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo with DEL", change: func(m map[string]any) { m["orderNo"] = "A-1\u007f" }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo with umlaut and space is fine", change: func(m map[string]any) { m["orderNo"] = "Bestellung Nr. Ä-1" }, status: 201},
		{name: "paymentRef with LF", change: func(m map[string]any) { m["paymentRef"] = "pi_1\n" }, status: 422, code: "validation_failed", field: "paymentRef"},
		{name: "paymentGateway with NEL", change: func(m map[string]any) { m["paymentGateway"] = "stripe\u0085" }, status: 422, code: "validation_failed", field: "paymentGateway"},
		{name: "sku with RLM", change: func(m map[string]any) { item(m, 0)["sku"] = "SKU\u200f1" }, status: 422, code: "validation_failed", field: "items[0].sku"},
		{name: "productId with CR", change: func(m map[string]any) { item(m, 1)["productId"] = "p\r1" }, status: 422, code: "validation_failed", field: "items[1].productId"},
		{name: "externalRef with LF", change: func(m map[string]any) {
			r := redemption("100")
			r["externalRef"] = "ct\n1"
			m["creditRedemptions"] = []any{r}
			m["grossTotalCents"] = json.Number("4165")
		}, status: 422, code: "validation_failed", field: "creditRedemptions[0].externalRef"},
		{name: "orderNo blank", change: func(m map[string]any) { m["orderNo"] = "  " }, status: 422, code: "validation_failed", field: "orderNo"},
		{name: "orderNo number", change: func(m map[string]any) { m["orderNo"] = json.Number("12") }, status: 422, code: "validation_failed", field: "orderNo"},

		// addresses
		{name: "billingAddress missing", change: func(m map[string]any) { delete(m, "billingAddress") }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "billingAddress null", change: func(m map[string]any) { m["billingAddress"] = nil }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "billingAddress empty", change: func(m map[string]any) { m["billingAddress"] = map[string]any{} }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "country empty", change: func(m map[string]any) { ba(m)["country_code"] = "" }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "billingAddress not an object", change: func(m map[string]any) { m["billingAddress"] = "DE" }, status: 422, code: "validation_failed", field: "billingAddress"},
		{name: "country missing", change: func(m map[string]any) { delete(ba(m), "country_code") }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "country lower case", change: func(m map[string]any) { ba(m)["country_code"] = "de" }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "country three letters", change: func(m map[string]any) { ba(m)["country_code"] = "DEU" }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "country number", change: func(m map[string]any) { ba(m)["country_code"] = json.Number("49") }, status: 422, code: "validation_failed", field: "billingAddress.country_code"},
		{name: "city number", change: func(m map[string]any) { ba(m)["city"] = json.Number("1") }, status: 422, code: "validation_failed", field: "billingAddress.city"},
		{name: "shipping country", change: func(m map[string]any) { m["shippingAddress"] = map[string]any{"country_code": "at"} }, status: 422, code: "validation_failed", field: "shippingAddress.country_code"},
		{name: "shipping country missing", change: func(m map[string]any) { m["shippingAddress"] = map[string]any{"city": "Wien"} }, status: 422, code: "validation_failed", field: "shippingAddress.country_code"},
		{name: "leitweg check digits", change: func(m map[string]any) { ba(m)["leitweg_id"] = "04011000-1234512345-07" }, status: 422, code: "validation_failed", field: "billingAddress.leitweg_id"},
		{name: "leitweg format", change: func(m map[string]any) { ba(m)["leitweg_id"] = "4-1234512345-06" }, status: 422, code: "validation_failed", field: "billingAddress.leitweg_id"},
		{name: "leitweg lower case", change: func(m map[string]any) { ba(m)["leitweg_id"] = "991-33333test-33" }, status: 422, code: "validation_failed", field: "billingAddress.leitweg_id"},

		// VAT ids: by the issuing member state's syntax on EU addresses
		// (spaces, dots and hyphens do not count), and any XI id; other
		// countries' identifiers as sent.
		{name: "vat id DE", change: func(m map[string]any) { ba(m)["vat_id"] = "DE123456789" }, status: 201},
		{name: "vat id formatted", change: func(m map[string]any) { ba(m)["vat_id"] = "de 123.456-789" }, status: 201},
		{name: "vat id FR", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "FR", "FR 12 345678901" }, status: 201},
		{name: "vat id of another member state", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "FR", "BE0123456789" }, status: 201},
		{name: "vat id EL for Greece", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "GR", "EL123456789" }, status: 201},
		{name: "vat id XI for Northern Ireland", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "GB", "XI 123 4567 89" }, status: 201},
		{name: "vat id UK", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "GB", "GB123456789" }, status: 201},
		{name: "vat id Swiss UID", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "CH", "CHE-123.456.789 MWST" }, status: 201},
		{name: "vat id blank", change: func(m map[string]any) { ba(m)["vat_id"] = " " }, status: 201},
		{name: "vat id shipping", change: func(m map[string]any) {
			m["shippingAddress"] = map[string]any{"country_code": "AT", "vat_id": "ATU12345678", "city": "Wien"}
		}, status: 201},
		{name: "vat id too short", change: func(m map[string]any) { ba(m)["vat_id"] = "DE12345678" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id free text", change: func(m map[string]any) { ba(m)["vat_id"] = "n/a" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id without prefix", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "FR", "12345678901" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id GR prefix", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "GR", "GR123456789" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id non-EU on an EU address", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "AT", "CHE-123.456.789" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id with a line break", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "FR", "FR12,345678901\r\nDE1" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id XI malformed", change: func(m map[string]any) { ba(m)["country_code"], ba(m)["vat_id"] = "GB", "XI12345" }, status: 422, code: "validation_failed", field: "billingAddress.vat_id"},
		{name: "vat id shipping malformed", change: func(m map[string]any) {
			m["shippingAddress"] = map[string]any{"country_code": "AT", "vat_id": "AT12345678", "city": "Wien"}
		}, status: 422, code: "validation_failed", field: "shippingAddress.vat_id"},

		// items
		{name: "items missing", change: func(m map[string]any) { delete(m, "items") }, status: 422, code: "validation_failed", field: "items"},
		{name: "items empty", change: func(m map[string]any) { m["items"] = []any{} }, status: 422, code: "validation_failed", field: "items"},
		{name: "items object", change: func(m map[string]any) { m["items"] = map[string]any{} }, status: 422, code: "validation_failed", field: "items"},
		{name: "item not an object", change: func(m map[string]any) { m["items"].([]any)[1] = "Mug" }, status: 422, code: "validation_failed", field: "items[1]"},
		{name: "item name missing", change: func(m map[string]any) { delete(item(m, 1), "name") }, status: 422, code: "validation_failed", field: "items[1].name"},
		{name: "item name empty", change: func(m map[string]any) { item(m, 0)["name"] = "" }, status: 422, code: "validation_failed", field: "items[0].name"},
		{name: "quantity missing", change: func(m map[string]any) { delete(item(m, 0), "quantity") }, status: 422, code: "validation_failed", field: "items[0].quantity"},
		{name: "quantity zero", change: func(m map[string]any) { item(m, 0)["quantity"] = json.Number("0") }, status: 422, code: "validation_failed", field: "items[0].quantity"},
		{name: "quantity negative", change: func(m map[string]any) { item(m, 1)["quantity"] = json.Number("-1") }, status: 422, code: "validation_failed", field: "items[1].quantity"},
		{name: "quantity string", change: func(m map[string]any) { item(m, 0)["quantity"] = "2" }, status: 422, code: "validation_failed", field: "items[0].quantity"},
		{name: "no unit price", change: func(m map[string]any) { delete(item(m, 0), "unitGrossCents") }, status: 422, code: "validation_failed", field: "items[0].unitNetCents"},
		{name: "unit net cents fraction", change: func(m map[string]any) { item(m, 1)["unitNetCents"] = json.Number("1.5") }, status: 422, code: "validation_failed", field: "items[1].unitNetCents"},
		{name: "unit gross cents fraction exponent", change: func(m map[string]any) { item(m, 0)["unitGrossCents"] = json.Number("1.5e0") }, status: 422, code: "validation_failed", field: "items[0].unitGrossCents"},
		{name: "unit gross cents negative exponent", change: func(m map[string]any) { item(m, 0)["unitGrossCents"] = json.Number("15e-1") }, status: 422, code: "validation_failed", field: "items[0].unitGrossCents"},
		{name: "unit gross cents string", change: func(m map[string]any) { item(m, 0)["unitGrossCents"] = "1190" }, status: 422, code: "validation_failed", field: "items[0].unitGrossCents"},
		{name: "unit net cents negative", change: func(m map[string]any) { item(m, 1)["unitNetCents"] = json.Number("-1") }, status: 422, code: "validation_failed", field: "items[1].unitNetCents"},
		{name: "discount fraction", change: func(m map[string]any) { item(m, 0)["discountNetCents"] = json.Number("0.5") }, status: 422, code: "validation_failed", field: "items[0].discountNetCents"},
		{name: "tax rate negative", change: func(m map[string]any) { item(m, 0)["taxRate"] = json.Number("-19") }, status: 422, code: "validation_failed", field: "items[0].taxRate"},
		{name: "tax rate string", change: func(m map[string]any) { item(m, 0)["taxRate"] = "19" }, status: 422, code: "validation_failed", field: "items[0].taxRate"},
		{name: "gift card string", change: func(m map[string]any) { item(m, 0)["giftCard"] = "yes" }, status: 422, code: "validation_failed", field: "items[0].giftCard"},
		{name: "productId object", change: func(m map[string]any) { item(m, 1)["productId"] = map[string]any{} }, status: 422, code: "validation_failed", field: "items[1].productId"},

		// currency, email, flags, free strings
		{name: "currency lower case", change: func(m map[string]any) { m["currency"] = "eur" }, status: 422, code: "validation_failed", field: "currency"},
		{name: "currency two letters", change: func(m map[string]any) { m["currency"] = "EU" }, status: 422, code: "validation_failed", field: "currency"},
		{name: "email invalid", change: func(m map[string]any) { m["email"] = "erika.example.com" }, status: 422, code: "validation_failed", field: "email"},
		{name: "email with name", change: func(m map[string]any) { m["email"] = "Erika <erika@example.com>" }, status: 422, code: "validation_failed", field: "email"},
		{name: "requiresShipping string", change: func(m map[string]any) { m["requiresShipping"] = "true" }, status: 422, code: "validation_failed", field: "requiresShipping"},
		{name: "paymentRef number", change: func(m map[string]any) { m["paymentRef"] = json.Number("1") }, status: 422, code: "validation_failed", field: "paymentRef"},
		{name: "financialStatus bool", change: func(m map[string]any) { m["financialStatus"] = true }, status: 422, code: "validation_failed", field: "financialStatus"},

		// service_period
		{name: "period only start", change: func(m map[string]any) { m["service_period"] = map[string]any{"start_date": "2026-01-01"} }, status: 422, code: "validation_failed", field: "service_period.end_date"},
		{name: "period only end", change: func(m map[string]any) { m["service_period"] = map[string]any{"end_date": "2026-01-01"} }, status: 422, code: "validation_failed", field: "service_period.start_date"},
		{name: "period end before start", change: func(m map[string]any) {
			m["service_period"] = map[string]any{"start_date": "2026-02-01", "end_date": "2026-01-31"}
		}, status: 422, code: "validation_failed", field: "service_period.end_date"},
		{name: "period bad start date", change: func(m map[string]any) {
			m["service_period"] = map[string]any{"start_date": "2026-02-30", "end_date": "2026-03-31"}
		}, status: 422, code: "validation_failed", field: "service_period.start_date"},
		{name: "period date-time", change: func(m map[string]any) {
			m["service_period"] = map[string]any{"start_date": "2026-02-01", "end_date": "2026-03-31T00:00:00Z"}
		}, status: 422, code: "validation_failed", field: "service_period.end_date"},
		{name: "period camelCase keys", change: func(m map[string]any) {
			m["service_period"] = map[string]any{"startDate": "2026-02-01", "end_date": "2026-03-31"}
		}, status: 422, code: "validation_failed", field: "service_period.start_date"},
		{name: "period not an object", change: func(m map[string]any) { m["service_period"] = "2026" }, status: 422, code: "validation_failed", field: "service_period"},

		// shipping
		{name: "shipping gross and net", change: func(m map[string]any) {
			m["shippingGrossCents"], m["shippingNetCents"], m["shippingTaxRate"] = json.Number("490"), json.Number("412"), json.Number("19")
		}, status: 422, code: "validation_failed", field: "shippingNetCents"},
		{name: "shipping net without rate", change: func(m map[string]any) { m["shippingNetCents"] = json.Number("412") }, status: 422, code: "validation_failed", field: "shippingTaxRate"},
		{name: "shipping rate without net", change: func(m map[string]any) {
			m["shippingGrossCents"], m["shippingTaxRate"] = json.Number("490"), json.Number("19")
		}, status: 422, code: "validation_failed", field: "shippingTaxRate"},
		{name: "shipping gross negative", change: func(m map[string]any) { m["shippingGrossCents"] = json.Number("-1") }, status: 422, code: "validation_failed", field: "shippingGrossCents"},
		{name: "shipping net negative", change: func(m map[string]any) {
			m["shippingNetCents"], m["shippingTaxRate"] = json.Number("-412"), json.Number("19")
		}, status: 422, code: "validation_failed", field: "shippingNetCents"},
		{name: "shipping gross fraction", change: func(m map[string]any) { m["shippingGrossCents"] = json.Number("4.9") }, status: 422, code: "validation_failed", field: "shippingGrossCents"},
		{name: "shipping rate negative", change: func(m map[string]any) {
			m["shippingNetCents"], m["shippingTaxRate"] = json.Number("412"), json.Number("-7")
		}, status: 422, code: "validation_failed", field: "shippingTaxRate"},

		// credit redemptions
		{name: "credit without total", change: func(m map[string]any) { m["creditRedemptions"] = []any{redemption("500")} }, status: 422, code: "validation_failed", field: "grossTotalCents"},
		{name: "credit above total", change: func(m map[string]any) {
			m["creditRedemptions"] = []any{redemption("500"), redemption("501")}
			m["grossTotalCents"] = json.Number("1000")
		}, status: 422, code: "validation_failed", field: "creditRedemptions"},
		{name: "credit type", change: func(m map[string]any) {
			r := redemption("500")
			r["type"] = "gift_card"
			m["creditRedemptions"], m["grossTotalCents"] = []any{r}, json.Number("1000")
		}, status: 422, code: "validation_failed", field: "creditRedemptions[0].type"},
		{name: "credit amount zero", change: func(m map[string]any) {
			m["creditRedemptions"], m["grossTotalCents"] = []any{redemption("100"), redemption("0")}, json.Number("1000")
		}, status: 422, code: "validation_failed", field: "creditRedemptions[1].amountCents"},
		{name: "credit amount fraction", change: func(m map[string]any) {
			m["creditRedemptions"], m["grossTotalCents"] = []any{redemption("99.5")}, json.Number("1000")
		}, status: 422, code: "validation_failed", field: "creditRedemptions[0].amountCents"},
		{name: "credit amount missing", change: func(m map[string]any) {
			r := redemption("1")
			delete(r, "amountCents")
			m["creditRedemptions"], m["grossTotalCents"] = []any{r}, json.Number("1000")
		}, status: 422, code: "validation_failed", field: "creditRedemptions[0].amountCents"},
		{name: "credit externalRef missing", change: func(m map[string]any) {
			r := redemption("100")
			delete(r, "externalRef")
			m["creditRedemptions"], m["grossTotalCents"] = []any{r}, json.Number("1000")
		}, status: 422, code: "validation_failed", field: "creditRedemptions[0].externalRef"},
		{name: "gross total fraction", change: func(m map[string]any) { m["grossTotalCents"] = json.Number("10.01") }, status: 422, code: "validation_failed", field: "grossTotalCents"},

		// malformed bodies
		{name: "malformed JSON", raw: `{"orderNo": "x",`, status: 400, code: "invalid_json"},
		{name: "trailing data", raw: `{"orderNo": "x"} {}`, status: 400, code: "invalid_json"},
		{name: "array body", raw: `[]`, status: 400, code: "invalid_json"},
		{name: "empty body", raw: ` `, status: 400, code: "invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body []byte
			if tt.raw != "" {
				body = []byte(tt.raw)
			} else {
				m := order(uniqueNo("V"))
				tt.change(m)
				body = mustJSON(t, m)
			}
			r := e.postOrder(body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			if tt.status < 300 {
				return
			}
			eb := r.errBody(t)
			if eb.Error.Code != tt.code || eb.Error.Field != tt.field {
				t.Errorf("error code %q field %q, want %q %q (message %q)", eb.Error.Code, eb.Error.Field, tt.code, tt.field, eb.Error.Message)
			}
			if eb.RequestID == "" || eb.RequestID != r.header.Get("X-Request-Id") {
				t.Errorf("requestId %q, X-Request-Id %q", eb.RequestID, r.header.Get("X-Request-Id"))
			}
		})
	}
}

func TestIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := mustJSON(t, order(uniqueNo("K")))
	tests := []struct {
		name, key string
		status    int
		code      string
	}{
		{"missing", "", 400, "idempotency_key_missing"},
		{"too long", strings.Repeat("k", 201), 400, "idempotency_key_too_long"},
		{"200 multi-byte characters", strings.Repeat("ä", 200), 201, ""},
	}
	for _, tt := range tests {
		for _, path := range []string{"/v1/orders", "/v1/fulfillments"} {
			t.Run(tt.name+path, func(t *testing.T) {
				if path == "/v1/fulfillments" && tt.status == 201 {
					return
				}
				r := e.do(http.MethodPost, path, tt.key, body)
				if r.status != tt.status {
					t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
				}
				if tt.code != "" && r.errBody(t).Error.Code != tt.code {
					t.Errorf("code %q, want %q", r.errBody(t).Error.Code, tt.code)
				}
			})
		}
	}
}
