package main

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// TestOrderDoorNamesTheField: POST /v1/orders on the running service answers
// 422 validation_failed naming the exact field: the billing country when
// billingAddress is missing or has no country (spec: Address), and the
// address's vat_id when it is not a VAT ID by its member state's syntax. A
// VAT ID written with spaces, dots or hyphens is accepted.
func TestOrderDoorNamesTheField(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	const items = `"items":[{"name":"Beratung","quantity":1,"unitNetCents":1000}]`
	tests := []struct {
		name   string
		fields string // the order's members besides orderNo and items
		status int
		field  string
	}{
		{"billingAddress missing", `"email":"a@example.com"`, 422, "billingAddress.country_code"},
		{"billingAddress null", `"billingAddress":null`, 422, "billingAddress.country_code"},
		{"billingAddress without country", `"billingAddress":{"name":"Max","city":"Berlin"}`, 422, "billingAddress.country_code"},
		{"country empty", `"billingAddress":{"country_code":""}`, 422, "billingAddress.country_code"},
		{"VAT ID malformed", `"billingAddress":{"country_code":"FR","vat_id":"FR123"}`, 422, "billingAddress.vat_id"},
		{"VAT ID with a line break", `"billingAddress":{"country_code":"FR","vat_id":"FR12,345678901\r\nDE1"}`, 422, "billingAddress.vat_id"},
		{"Greek VAT ID with GR", `"billingAddress":{"country_code":"GR","vat_id":"GR123456789"}`, 422, "billingAddress.vat_id"},
		{"shipping VAT ID malformed", `"billingAddress":{"country_code":"DE"},"shippingAddress":{"country_code":"AT","vat_id":"AT12345678"}`, 422, "shippingAddress.vat_id"},
		{"VAT ID formatted", `"billingAddress":{"country_code":"FR","vat_id":"fr 12.345.678-901"}`, 201, ""},
		{"Greek VAT ID with EL", `"billingAddress":{"country_code":"GR","vat_id":"EL123456789"}`, 201, ""},
		{"Northern Ireland", `"billingAddress":{"country_code":"GB","vat_id":"XI123456789"}`, 201, ""},
		{"Swiss UID kept as sent", `"billingAddress":{"country_code":"CH","vat_id":"CHE-123.456.789 MWST"}`, 201, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			no := "DOOR-" + uuid.NewString()[:8]
			body := fmt.Sprintf(`{"orderNo":%q,%s,%s}`, no, tc.fields, items)
			r := c.Do("POST", "/v1/orders", key, []byte(body), "Idempotency-Key", no)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.status != 422 {
				return
			}
			if code, field := r.ErrorCode(t); code != "validation_failed" || field != tc.field {
				t.Errorf("error %q field %q, want validation_failed %q: %s", code, field, tc.field, r.Body)
			}
			if id, _ := r.JSON(t)["requestId"].(string); id == "" || id != r.Header.Get("X-Request-Id") {
				t.Errorf("requestId %q, X-Request-Id %q", id, r.Header.Get("X-Request-Id"))
			}
		})
	}
}
