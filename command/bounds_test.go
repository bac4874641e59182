package command_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Bounded input: every value that breaks a bound is answered 4xx with the
// code and field, and changes nothing.

// deepJSON is a JSON value nesting arrays and objects depth levels deep.
func deepJSON(depth int) string {
	return strings.Repeat(`{"a":[`, depth/2) + strings.Repeat("[", depth%2) + "1" +
		strings.Repeat("]", depth%2) + strings.Repeat(`]}`, depth/2)
}

// lines returns n order lines with names of the given text.
func lines(n int, name func(i int) string) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"name": name(i), "quantity": json.Number("1"), "unitNetCents": json.Number("100"), "taxRate": json.Number("19")}
	}
	return items
}

type boundCase struct {
	name         string
	method, path string // default POST /v1/orders
	idemKey      string // default a fresh key
	change       func(m map[string]any)
	raw          func(t *testing.T) []byte // the body, instead of a changed order
	status       int
	code, field  string
}

func (e *env) run(t *testing.T, tt boundCase) reply {
	t.Helper()
	method, path, key := tt.method, tt.path, tt.idemKey
	if method == "" {
		method, path = http.MethodPost, "/v1/orders"
	}
	if key == "" {
		key = uuid.NewString()
	}
	var body []byte
	if tt.raw != nil {
		body = tt.raw(t)
	} else {
		m := order(uniqueNo("B"))
		tt.change(m)
		body = mustJSON(t, m)
	}
	r := e.do(method, path, key, body)
	if r.status != tt.status {
		t.Fatalf("status %d, want %d: %.500s", r.status, tt.status, r.body)
	}
	if tt.status >= 400 {
		eb := r.errBody(t)
		if eb.Error.Code != tt.code || eb.Error.Field != tt.field {
			t.Errorf("code %q field %q, want %q %q (%s)", eb.Error.Code, eb.Error.Field, tt.code, tt.field, eb.Error.Message)
		}
	}
	return r
}

// stored counts what the project has in every table a write can touch.
func (e *env) stored(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"orders", "outbox", "idempotency_keys", "fulfillments", "credit_transactions", "tasks", "payments", "products"} {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE project_id = $1`, e.project).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

func TestBoundedInputIsRefusedAndStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := func(n int) string { return strings.Repeat("x", n) }
	emoji := func(n int) string { return strings.Repeat("😀", n) }
	sa := func(m map[string]any) map[string]any {
		m["shippingAddress"] = map[string]any{"country_code": "AT"}
		return m["shippingAddress"].(map[string]any)
	}
	credit := func(change func(r map[string]any)) func(m map[string]any) {
		return func(m map[string]any) {
			r := redemption("100")
			change(r)
			m["creditRedemptions"], m["grossTotalCents"] = []any{r}, json.Number("4165")
		}
	}
	raw := func(s string) func(*testing.T) []byte { return func(*testing.T) []byte { return []byte(s) } }
	// rawOrder is a valid order's JSON with old replaced by new (bytes
	// json.Marshal would not write).
	rawOrder := func(old, new string) func(*testing.T) []byte {
		return func(t *testing.T) []byte {
			b := mustJSON(t, order(uniqueNo("B")))
			if !bytes.Contains(b, []byte(old)) {
				t.Fatalf("%s not in %s", old, b)
			}
			return bytes.Replace(b, []byte(old), []byte(new), 1)
		}
	}
	fulfillment := func(v map[string]any) func(*testing.T) []byte {
		return func(t *testing.T) []byte { return mustJSON(t, v) }
	}
	creditTxs := func(change func(m map[string]any)) func(*testing.T) []byte {
		return func(t *testing.T) []byte {
			tx := creditTx("ct-1", "earn", "a@example.com", 100)
			change(tx)
			return mustJSON(t, map[string]any{"transactions": []any{tx}})
		}
	}
	const vf, ij, ir = "validation_failed", "invalid_json", "invalid_request"
	post := http.MethodPost
	tests := []boundCase{
		// 1. Text lengths, in characters.
		{name: "orderNo 201", change: func(m map[string]any) { m["orderNo"] = long(201) }, status: 422, code: vf, field: "orderNo"},
		{name: "orderNo 201 multi-byte", change: func(m map[string]any) { m["orderNo"] = strings.Repeat("ä", 201) }, status: 422, code: vf, field: "orderNo"},
		{name: "name 301", change: func(m map[string]any) { ba(m)["name"] = long(301) }, status: 422, code: vf, field: "billingAddress.name"},
		{name: "company_name 301", change: func(m map[string]any) { ba(m)["company_name"] = long(301) }, status: 422, code: vf, field: "billingAddress.company_name"},
		{name: "vat_id 51", change: func(m map[string]any) { ba(m)["vat_id"] = long(51) }, status: 422, code: vf, field: "billingAddress.vat_id"},
		{name: "street 301", change: func(m map[string]any) { ba(m)["street"] = emoji(301) }, status: 422, code: vf, field: "billingAddress.street"},
		{name: "additional_address_line 301", change: func(m map[string]any) { ba(m)["additional_address_line"] = long(301) }, status: 422, code: vf, field: "billingAddress.additional_address_line"},
		{name: "postal_code 51", change: func(m map[string]any) { ba(m)["postal_code"] = long(51) }, status: 422, code: vf, field: "billingAddress.postal_code"},
		{name: "city 301", change: func(m map[string]any) { ba(m)["city"] = long(301) }, status: 422, code: vf, field: "billingAddress.city"},
		{name: "leitweg_id 47", change: func(m map[string]any) { ba(m)["leitweg_id"] = strings.Repeat("1", 47) }, status: 422, code: vf, field: "billingAddress.leitweg_id"},
		{name: "shipping city 301", change: func(m map[string]any) { sa(m)["city"] = long(301) }, status: 422, code: vf, field: "shippingAddress.city"},
		{name: "email 255", change: func(m map[string]any) { m["email"] = long(243) + "@example.com" }, status: 422, code: vf, field: "email"},
		{name: "currency 4", change: func(m map[string]any) { m["currency"] = "EURO" }, status: 422, code: vf, field: "currency"},
		{name: "currency long", change: func(m map[string]any) { m["currency"] = long(100_000) }, status: 422, code: vf, field: "currency"},
		{name: "paymentRef 201", change: func(m map[string]any) { m["paymentRef"] = emoji(201) }, status: 422, code: vf, field: "paymentRef"},
		{name: "paymentRef 100k", change: func(m map[string]any) { m["paymentRef"] = long(100_000) }, status: 422, code: vf, field: "paymentRef"},
		{name: "paymentGateway 201", change: func(m map[string]any) { m["paymentGateway"] = long(201) }, status: 422, code: vf, field: "paymentGateway"},
		{name: "financialStatus 201", change: func(m map[string]any) { m["financialStatus"] = long(201) }, status: 422, code: vf, field: "financialStatus"},
		{name: "item name 501", change: func(m map[string]any) { item(m, 1)["name"] = emoji(501) }, status: 422, code: vf, field: "items[1].name"},
		{name: "sku 201", change: func(m map[string]any) { item(m, 0)["sku"] = long(201) }, status: 422, code: vf, field: "items[0].sku"},
		{name: "productId 201", change: func(m map[string]any) { item(m, 1)["productId"] = long(201) }, status: 422, code: vf, field: "items[1].productId"},
		{name: "productId 100k", change: func(m map[string]any) { item(m, 1)["productId"] = long(100_000) }, status: 422, code: vf, field: "items[1].productId"},
		{name: "numeric productId 201 digits", change: func(m map[string]any) { item(m, 1)["productId"] = json.Number(strings.Repeat("9", 201)) }, status: 422, code: vf, field: "items[1].productId"},
		{name: "credit type 201", change: credit(func(r map[string]any) { r["type"] = long(201) }), status: 422, code: vf, field: "creditRedemptions[0].type"},
		{name: "credit externalRef 201", change: credit(func(r map[string]any) { r["externalRef"] = long(201) }), status: 422, code: vf, field: "creditRedemptions[0].externalRef"},
		{name: "fulfillment orderNo 201", method: post, path: "/v1/fulfillments", raw: fulfillment(map[string]any{"orderNo": long(201)}), status: 422, code: vf, field: "orderNo"},
		{name: "fulfillment trackingNumber 201", method: post, path: "/v1/fulfillments", raw: fulfillment(map[string]any{"orderNo": "X", "trackingNumber": emoji(201)}), status: 422, code: vf, field: "trackingNumber"},
		{name: "fulfillment trackingNumber 500k", method: post, path: "/v1/fulfillments", raw: fulfillment(map[string]any{"orderNo": "X", "trackingNumber": long(500_000)}), status: 422, code: vf, field: "trackingNumber"},
		{name: "credit id 201", method: post, path: "/v1/credit-transactions", raw: creditTxs(func(m map[string]any) { m["id"] = long(201) }), status: 422, code: vf, field: "transactions[0].id"},
		{name: "credit email 255", method: post, path: "/v1/credit-transactions", raw: creditTxs(func(m map[string]any) { m["email"] = long(243) + "@example.com" }), status: 422, code: vf, field: "transactions[0].email"},
		{name: "credit order_ref 201", method: post, path: "/v1/credit-transactions", raw: creditTxs(func(m map[string]any) { m["order_ref"] = long(201) }), status: 422, code: vf, field: "transactions[0].order_ref"},
		{name: "credit type long", method: post, path: "/v1/credit-transactions", raw: creditTxs(func(m map[string]any) { m["type"] = long(201) }), status: 422, code: vf, field: "transactions[0].type"},
		{name: "balance email 255", method: http.MethodPut, path: "/v1/credit-balances", raw: func(t *testing.T) []byte {
			return mustJSON(t, map[string]any{"balances": []any{map[string]any{"email": long(243) + "@example.com", "balance_cents": 0}}})
		}, status: 422, code: vf, field: "balances[0].email"},

		// Sizes.
		{name: "1001 items", change: func(m map[string]any) { m["items"] = lines(1001, func(i int) string { return fmt.Sprint("L", i) }) }, status: 422, code: vf, field: "items"},
		{name: "101 credit redemptions", change: func(m map[string]any) {
			rs := make([]any, 101)
			for i := range rs {
				rs[i] = redemption("1")
			}
			m["creditRedemptions"], m["grossTotalCents"] = rs, json.Number("4165")
		}, status: 422, code: vf, field: "creditRedemptions"},
		// 1,000 lines of 150 "<" are a 200 KB body, but more than 1 MB in
		// the event (each "<" is written as \u003c).
		{name: "order too large for its event", change: func(m map[string]any) {
			m["items"] = lines(1000, func(i int) string { return fmt.Sprint(i, strings.Repeat("<", 150)) })
		}, status: 422, code: vf, field: "items"},

		// 3. Amounts: no product or sum may overflow.
		{name: "quantity 999999999 × 9e15", change: func(m map[string]any) {
			item(m, 1)["quantity"], item(m, 1)["unitNetCents"] = json.Number("999999999"), json.Number("9e15")
		}, status: 422, code: vf, field: "items[1].unitNetCents"},
		{name: "quantity 999999999 × 10^13", change: func(m map[string]any) {
			item(m, 1)["quantity"], item(m, 1)["unitNetCents"] = json.Number("999999999"), json.Number("10000000000000")
		}, status: 422, code: vf, field: "items[1].quantity"},
		{name: "quantity 999999999 × 10^10 (overflows int64)", change: func(m map[string]any) {
			item(m, 1)["quantity"], item(m, 1)["unitNetCents"] = json.Number("999999999"), json.Number("10000000000")
		}, status: 422, code: vf, field: "items[1].quantity"},
		{name: "gross line above 10^13", change: func(m map[string]any) {
			item(m, 0)["quantity"], item(m, 0)["unitGrossCents"] = json.Number("2"), json.Number("10000000000000")
		}, status: 422, code: vf, field: "items[0].quantity"},
		{name: "two lines whose sum overflowed", change: func(m map[string]any) {
			for i := 0; i < 2; i++ {
				item(m, i)["quantity"], item(m, i)["unitNetCents"], item(m, i)["unitGrossCents"] = json.Number("999999999"), json.Number("9000000000"), nil
			}
		}, status: 422, code: vf, field: "items[0].quantity"},
		{name: "quantity above 10^9", change: func(m map[string]any) { item(m, 1)["quantity"] = json.Number("1000000000.000000001") }, status: 422, code: vf, field: "items[1].quantity"},
		{name: "unit price above 10^13", change: func(m map[string]any) { item(m, 0)["unitGrossCents"] = json.Number("10000000000001") }, status: 422, code: vf, field: "items[0].unitGrossCents"},

		// 2. Nesting.
		{name: "depth 33", raw: rawOrder(`"orderNo":`, `"extra":`+deepJSON(32)+`,"orderNo":`), status: 400, code: ij},
		{name: "depth 10000", raw: raw(strings.Repeat("[", 10000)), status: 400, code: ij},
		{name: "depth 33 fulfillment", method: post, path: "/v1/fulfillments", raw: raw(`{"orderNo":"X","x":` + deepJSON(32) + `}`), status: 400, code: ij},
		{name: "depth 33 credit", method: post, path: "/v1/credit-transactions", raw: raw(`{"transactions":` + deepJSON(32) + `}`), status: 400, code: ij},
		{name: "depth 33 balances", method: http.MethodPut, path: "/v1/credit-balances", raw: raw(`{"balances":[],"x":` + deepJSON(32) + `}`), status: 400, code: ij},
		{name: "depth 33 product", method: http.MethodPut, path: "/v1/products/P-1", raw: raw(`{"revenueRecognition":` + deepJSON(32) + `}`), status: 400, code: ij},
		// The public webhook checks the signature header before anything in the body.
		{name: "depth 33 webhook, unsigned", method: post, path: "/v1/webhooks/stripe/" + e.project, raw: raw(`{"id":"evt_1","type":"x","data":` + deepJSON(32) + `}`), status: 400, code: "invalid_signature"},

		// 4. NUL and invalid UTF-8: in bodies, path parameters and headers.
		{name: "NUL in orderNo", raw: rawOrder(`"orderNo":"`, `"orderNo":"\u0000`), status: 400, code: ij, field: "orderNo"},
		{name: "NUL in a line name", raw: rawOrder(`"name":"Plan"`, `"name":"Pl\u0000an"`), status: 400, code: ij, field: "items[1].name"},
		{name: "invalid UTF-8 in a city", raw: rawOrder(`"city":"Köln"`, "\"city\":\"K\xf6ln\""), status: 400, code: ij, field: "billingAddress.city"},
		{name: "unpaired surrogate in a street", raw: rawOrder(`"street":"`, `"street":"\ud800`), status: 400, code: ij, field: "billingAddress.street"},
		{name: "NUL in an unknown member", raw: rawOrder(`"orderNo":`, `"extra":{"note":["\u0000"]},"orderNo":`), status: 400, code: ij, field: "extra.note[0]"},
		{name: "NUL in a member name", raw: rawOrder(`"orderNo":`, `"\u0000":1,"orderNo":`), status: 400, code: ij},
		{name: "raw NUL byte", raw: rawOrder(`"name":"Plan"`, "\"name\":\"Pl\x00an\""), status: 400, code: ij},
		{name: "NUL in trackingNumber", method: post, path: "/v1/fulfillments", raw: raw(`{"orderNo":"X","trackingNumber":"1Z\u0000"}`), status: 400, code: ij, field: "trackingNumber"},
		{name: "NUL in a credit id", method: post, path: "/v1/credit-transactions", raw: creditTxs(func(m map[string]any) { m["id"] = "a\x00" }), status: 400, code: ij, field: "transactions[0].id"},
		{name: "invalid UTF-8 in a balance e-mail", method: http.MethodPut, path: "/v1/credit-balances", raw: raw("{\"balances\":[{\"email\":\"a\xff@example.com\",\"balance_cents\":0}]}"), status: 400, code: ij, field: "balances[0].email"},
		{name: "NUL in a webhook event id, unsigned", method: post, path: "/v1/webhooks/stripe/" + e.project, raw: raw(`{"id":"evt_\u0000","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","amount":100}}}`), status: 400, code: "invalid_signature"},
		{name: "NUL in a cancelled orderNo", method: post, path: "/v1/orders/A%00/cancel", raw: raw(""), status: 400, code: ir, field: "orderNo"},
		{name: "invalid UTF-8 in a cancelled orderNo", method: post, path: "/v1/orders/A%2F%FF/cancel", raw: raw(""), status: 400, code: ir, field: "orderNo"},
		{name: "NUL in a productId", method: http.MethodPut, path: "/v1/products/P%00", raw: raw(`{"revenueRecognition":null}`), status: 400, code: ir, field: "productId"},
		{name: "invalid UTF-8 in Idempotency-Key", idemKey: "key-\xff", change: func(m map[string]any) {}, status: 400, code: ir, field: "Idempotency-Key"},
		{name: "invalid UTF-8 in a fulfillment Idempotency-Key", method: post, path: "/v1/fulfillments", idemKey: "\xc3", raw: raw(`{"orderNo":"X"}`), status: 400, code: ir, field: "Idempotency-Key"},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				e.run(t, tt)
			})
		}
	})
	if got := e.stored(t); len(got) > 0 {
		t.Errorf("refused requests stored %v", got)
	}
}

// The limits are inclusive, counted in characters: values at the limit are
// accepted, also in 4-byte characters where PostgreSQL indexes them
// (orderNo, paymentRef, productId, and a line's name when it binds the line
// to its catalogue product).
func TestBoundedInputAtTheLimitsIsAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	emoji := wide
	tests := []boundCase{
		{name: "orderNo 200 ä", change: func(m map[string]any) { m["orderNo"] = strings.Repeat("ä", 200) }, status: 201},
		{name: "orderNo 200 emoji", change: func(m map[string]any) { m["orderNo"] = emoji(200) }, status: 201},
		{name: "paymentRef 200 emoji", change: func(m map[string]any) { m["paymentRef"] = emoji(200) }, status: 201},
		{name: "productId 200 emoji", change: func(m map[string]any) { item(m, 1)["productId"] = emoji(200) }, status: 201},
		{name: "sku 200 emoji", change: func(m map[string]any) { item(m, 0)["sku"] = emoji(200) }, status: 201},
		{name: "name 500 emoji binds by name", change: func(m map[string]any) {
			delete(item(m, 0), "sku")
			item(m, 0)["name"] = emoji(500)
		}, status: 201},
		{name: "address lines 300", change: func(m map[string]any) {
			for _, k := range []string{"name", "company_name", "street", "additional_address_line", "city"} {
				ba(m)[k] = emoji(300)
			}
			// Outside the EU a vat_id is the buyer's identifier as sent.
			ba(m)["country_code"], ba(m)["postal_code"], ba(m)["vat_id"] = "CH", emoji(50), emoji(50)
		}, status: 201},
		{name: "vat_id 50 with separators", change: func(m map[string]any) {
			ba(m)["vat_id"] = "DE" + strings.Repeat(" ", 37) + "123.456.789" // 50 characters, DE123456789
		}, status: 201},
		{name: "leitweg_id 46", change: func(m map[string]any) {
			ba(m)["leitweg_id"] = "123456789012-ABCDEFGHIJKLMNOPQRSTUVWXYZ1234-" + leitwegCheck("123456789012ABCDEFGHIJKLMNOPQRSTUVWXYZ1234")
		}, status: 201},
		{name: "email 254", change: func(m map[string]any) { m["email"] = strings.Repeat("e", 242) + "@example.com" }, status: 201},
		{name: "1000 lines", change: func(m map[string]any) { m["items"] = lines(1000, func(i int) string { return fmt.Sprint("Line ", i) }) }, status: 201},
		{name: "line amount 10^13", change: func(m map[string]any) {
			m["items"] = []any{map[string]any{"name": "Big", "quantity": json.Number("1000000000"), "unitNetCents": json.Number("10000"), "taxRate": json.Number("19")}}
		}, status: 201},
		{name: "depth 32 in an unknown member", raw: func(t *testing.T) []byte {
			b := mustJSON(t, order(uniqueNo("D")))
			return append([]byte(`{"extra":`+deepJSON(31)+`,`), b[1:]...)
		}, status: 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e.run(t, tt)
		})
	}
	t.Run("trackingNumber 200 emoji", func(t *testing.T) {
		t.Parallel()
		no := e.newOrder(t)
		r := e.postFulfillment(map[string]any{"orderNo": no, "trackingNumber": emoji(200)})
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var found bool
		for _, ev := range e.outboxEvents() {
			if o := orderOf(t, ev); o.OrderNo == no && utf8.RuneCountInString(o.TrackingNumber) == 200 {
				found = true
			}
		}
		if !found {
			t.Error("no order event with the tracking number")
		}
	})
	t.Run("credit ids 200", func(t *testing.T) {
		t.Parallel()
		tx := creditTx(emoji(200), "earn", strings.Repeat("c", 242)+"@example.com", 100)
		tx["order_ref"] = emoji(200)
		if r := e.postCredit(tx); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

// wide returns n random characters of 4 bytes each (CJK Extension B and
// later). PostgreSQL compresses index entries, so a repeated character would
// fit an index where n incompressible ones do not: 700 of these exceed its
// index-row limit of 2,704 bytes.
func wide(n int) string {
	r := rand.New(rand.NewSource(seed.Add(1)))
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(rune(0x20000 + r.Intn(0xA000)))
	}
	return b.String()
}

var seed atomic.Int64

// leitwegCheck returns the two ISO/IEC 7064 MOD 97-10 check digits of body
// (digits and upper-case letters, A = 10 ... Z = 35).
func leitwegCheck(body string) string {
	rem := 0
	for _, c := range body {
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		default:
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	return fmt.Sprintf("%02d", (98-(rem*100)%97)%97)
}

// Unknown members are accepted and ignored: they are not stored, and the
// same Idempotency-Key with the body without them is the same request.
func TestUnknownMembersAreIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := uniqueNo("U")
	m := order(no)
	plain := mustJSON(t, m)
	m["futureOption"] = map[string]any{"mode": "fast", "list": []any{1, 2}}
	ba(m)["floor"] = "3"
	item(m, 0)["color"] = "red"
	extended := mustJSON(t, m)

	key := uuid.NewString()
	r := e.do(http.MethodPost, "/v1/orders", key, extended)
	if r.status != 201 {
		t.Fatalf("with unknown members: %d %s", r.status, r.body)
	}
	again := e.do(http.MethodPost, "/v1/orders", key, plain)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, r.body) {
		t.Errorf("the body without the unknown members is not the same request: %d %s %s", again.status, again.header, again.body)
	}
	evs := e.outboxEvents()
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	for _, name := range []string{"futureOption", "floor", "color"} {
		if bytes.Contains(evs[0].Data, []byte(name)) {
			t.Errorf("the event holds %s: %s", name, evs[0].Data)
		}
	}
	var stored int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE project_id = $1 AND content::text LIKE '%futureOption%'`, e.project).Scan(&stored); err != nil || stored != 0 {
		t.Errorf("stored with unknown members: %d (%v)", stored, err)
	}
}
