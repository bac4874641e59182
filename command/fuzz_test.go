package command

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/vatid"
)

// Fuzz targets of the body parsers. `go test` runs their seeds; `make fuzz`
// runs each for FUZZTIME. Every parser must answer any body with a value or
// a classified error, never a panic, and what it accepts must survive being
// encoded and parsed again.

// checkBodyErr fails unless err is what a body parser may return: 400
// invalid_json, or 422 validation_failed naming a field.
func checkBodyErr(t *testing.T, err error) {
	t.Helper()
	e := apperr.As(err)
	switch {
	case e == nil:
		t.Fatalf("unclassified error %T: %v", err, err)
	case e.Kind == apperr.Invalid && e.Code == "invalid_json":
	case e.Kind == apperr.Validation && e.Code == "validation_failed" && e.Field != "":
	default:
		t.Fatalf("unexpected error kind %d code %q field %q: %v", e.Kind, e.Code, e.Field, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const seedOrder = `{"orderNo":"DEMO-1","paymentRef":"pi_demo_1","paymentGateway":"stripe",
"billingAddress":{"country_code":"DE","name":"Erika Musterfrau","street":"Lindenstraße 12","postal_code":"50667","city":"Köln"},
"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
"items":[{"name":"Online-Kurs","quantity":1,"unitGrossCents":11900,"taxRate":19}]}`

func FuzzParseOrder(f *testing.F) {
	for _, s := range []string{
		seedOrder,
		`{"orderNo":"A-1","currency":"EUR","requiresShipping":true,"email":"a@example.com","financialStatus":"paid",
"billingAddress":{"country_code":"DE","company_name":"Stadt Köln","leitweg_id":"04011000-1234512345-06","vat_id":"DE123456789"},
"shippingAddress":{"country_code":"AT","city":"Wien","additional_address_line":"c/o"},
"items":[{"name":"Kaffee","quantity":2.5,"unitNetCents":1e2,"taxRate":7,"sku":"K-1","discountNetCents":10,"productId":4711},
{"name":"Gutschein","quantity":"1","unitGrossCents":5000,"giftCard":true,"productId":"g-1"}],
"shippingNetCents":412,"shippingTaxRate":19,"grossTotalCents":10000,
"creditRedemptions":[{"type":"referral_credit","amountCents":500,"externalRef":"ct_1"}]}`,
		`{"orderNo":"B","billingAddress":{"country_code":"FR"},"items":[{"name":"x","quantity":0.000000001,"unitGrossCents":10000000000000}],"shippingGrossCents":0}`,
		`{"orderNo":"C","billingAddress":{"country_code":"DE","leitweg_id":"991-33333TEST-34"},"items":[{"name":"x","quantity":1,"unitGrossCents":1}]}`,
		`{"orderNo":"D","billingAddress":{"country_code":"DE"},"items":[{"name":"x","quantity":1,"unitGrossCents":1.5}]}`,
		`{"orderNo":"E","billingAddress":{"country_code":"DE"},"items":[{"name":"x","quantity":1e30,"unitGrossCents":1}]}`,
		`{"orderNo":"F","billingAddress":{"country_code":"DE"},"items":[{"name":"\u0000","quantity":1,"unitGrossCents":1}],"service_period":{"start_date":"2026-02-30","end_date":"2026-01-01"}}`,
		`{"orderNo":"G","billingAddress":{"country_code":"DE"},"items":[null],"creditRedemptions":[{}]}`,
		"{\"orderNo\":\"\xff\",\"billingAddress\":{\"country_code\":\"DE\"},\"items\":[{\"name\":\"\\ud800\",\"quantity\":1,\"unitGrossCents\":1}]}",
		`{"orderNo":"V","billingAddress":{"country_code":"GR","vat_id":"el 123.456-789"},"shippingAddress":{"country_code":"GB","vat_id":"XI12"},"items":[{"name":"x","quantity":1,"unitGrossCents":1}]}`,
		`{"orderNo":"W","billingAddress":{"country_code":"FR","vat_id":"FR12,345678901\r\nDE1"},"items":[{"name":"x","quantity":1,"unitGrossCents":1}]}`,
		`{"orderNo":"H","billingAddress":{"country_code":"DE"},"items":[{"name":"x","quantity":1,"unitGrossCents":1}],"email":"Name <a@b.c>"}`,
		`[1]`, `{}`, ``, `{"a":1}x`, `{"orderNo":12}`, `null`, `{"items":[[[[[[]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := parseOrder(body)
		if err != nil {
			checkBodyErr(t, err)
			return
		}
		checkOrder(t, c)
		// The content re-encodes (as the order events carry it) to a body
		// that parses to the very same content.
		again, err := parseOrder(mustJSON(t, c))
		if err != nil {
			t.Fatalf("re-encoded order refused: %v", err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("round trip changed the order:\n first %+v\nsecond %+v", c, again)
		}
	})
}

// checkOrder asserts the invariants of an accepted order.
func checkOrder(t *testing.T, c event.OrderContent) {
	t.Helper()
	if strings.TrimSpace(c.OrderNo) == "" || utf8.RuneCountInString(c.OrderNo) > maxIDLength {
		t.Fatalf("orderNo %q accepted", c.OrderNo)
	}
	if !countryRE.MatchString(c.BillingAddress.CountryCode) || !currencyRE.MatchString(c.Currency) {
		t.Fatalf("country %q, currency %q accepted", c.BillingAddress.CountryCode, c.Currency)
	}
	for _, a := range []*event.Address{&c.BillingAddress, c.ShippingAddress} {
		if a == nil || vatid.Normalize(a.VATID) == "" || !vatid.IsMemberState(a.CountryCode) {
			continue
		}
		if _, err := vatid.Parse(a.VATID); err != nil {
			t.Fatalf("VAT id %q of an address in %s accepted: %v", a.VATID, a.CountryCode, err)
		}
	}
	if len(c.Items) == 0 || len(c.Items) > maxItems || len(c.CreditRedemptions) > maxCreditRedemptions {
		t.Fatalf("%d items, %d redemptions accepted", len(c.Items), len(c.CreditRedemptions))
	}
	for _, it := range c.Items {
		if it.Quantity.Sign() <= 0 || it.Quantity.Cmp(maxQty) > 0 || (it.UnitNetCents == nil && it.UnitGrossCents == nil) {
			t.Fatalf("item %+v accepted", it)
		}
		if it.TaxRate != nil && (it.TaxRate.Sign() < 0 || it.TaxRate.Cmp(hundred) > 0) {
			t.Fatalf("tax rate %s accepted", it.TaxRate)
		}
	}
	if (c.ShippingNetCents == nil) != (c.ShippingTaxRate == nil) || (c.ShippingNetCents != nil && c.ShippingGrossCents != nil) {
		t.Fatalf("shipping %v/%v/%v accepted", c.ShippingGrossCents, c.ShippingNetCents, c.ShippingTaxRate)
	}
	if len(c.CreditRedemptions) > 0 {
		var sum int64
		for _, r := range c.CreditRedemptions {
			sum += r.AmountCents
		}
		if c.GrossTotalCents == nil || sum > *c.GrossTotalCents {
			t.Fatalf("redemptions of %d with grossTotalCents %v accepted", sum, c.GrossTotalCents)
		}
	}
	if b := mustJSON(t, c); len(b)+36*len(c.Items) > maxOrderJSONBytes {
		t.Fatalf("order of %d bytes accepted", len(b))
	}
}

func FuzzParseFulfillment(f *testing.F) {
	for _, s := range []string{
		`{"orderNo":"DEMO-1"}`,
		`{"orderNo":"DEMO-1","status":"partial","trackingNumber":"1Z999"}`,
		`{"orderNo":"DEMO-1","status":"fulfilled","shippedAt":"2026-03-01T11:15:00.123456789+01:00"}`,
		`{"orderNo":"DEMO-1","shippedAt":"2026-03-01"}`,
		`{"orderNo":"DEMO-1","shippedAt":"0000-01-01T00:00:00+01:00"}`,
		`{"orderNo":"DEMO-1","shippedAt":"9999-12-31T23:59:59-01:00"}`,
		`{"orderNo":"DEMO-1","status":"shipped"}`,
		`{"orderNo":" ","status":null,"shippedAt":null}`,
		`{"orderNo":["x"]}`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := parseFulfillment(body)
		if err != nil {
			checkBodyErr(t, err)
			return
		}
		switch in.Status {
		case Unfulfilled, Partial, Fulfilled:
		default:
			t.Fatalf("status %q accepted", in.Status)
		}
		if strings.TrimSpace(in.OrderNo) == "" {
			t.Fatalf("orderNo %q accepted", in.OrderNo)
		}
		re := map[string]any{"orderNo": in.OrderNo, "status": in.Status, "trackingNumber": in.TrackingNumber}
		if in.ShippedAt != nil {
			at := *in.ShippedAt
			if at.Location() != time.UTC || !at.Equal(at.Truncate(time.Microsecond)) {
				t.Fatalf("shippedAt %v is not UTC in microseconds", at)
			}
			re["shippedAt"] = at.Format(time.RFC3339Nano)
		}
		again, err := parseFulfillment(mustJSON(t, re))
		if err != nil {
			t.Fatalf("re-encoded report %s refused: %v", mustJSON(t, re), err)
		}
		if again.OrderNo != in.OrderNo || again.Status != in.Status || again.TrackingNumber != in.TrackingNumber ||
			!sameTime(again.ShippedAt, in.ShippedAt) {
			t.Fatalf("round trip changed the report: %+v, then %+v", in, again)
		}
	})
}

func FuzzParseCreditTransactions(f *testing.F) {
	for _, s := range []string{
		`{"transactions":[{"id":"ct_1","type":"earn","email":"a@example.com","amount_cents":500,"occurred_at":"2026-03-01T10:15:00+01:00"},
{"id":"ct_2","type":"reverse","email":"A@Example.com","amount_cents":-500,"occurred_at":"2026-03-02T10:15:00Z","order_ref":"ORDER-1"}]}`,
		`{"transactions":[{"id":"ct_1","type":"gift","email":"a@example.com","amount_cents":1,"occurred_at":"2026-03-01T10:15:00Z"}]}`,
		`{"transactions":[{"id":"ct_1","type":"earn","email":"not an address","amount_cents":1,"occurred_at":"2026-03-01T10:15:00Z"}]}`,
		`{"transactions":[{"id":"ct_1","type":"earn","email":"a@example.com","amount_cents":-10000000000001,"occurred_at":"2026-03-01T10:15:00Z"}]}`,
		`{"transactions":[{"id":"ct_1","type":"earn","email":"a@example.com","amount_cents":1,"occurred_at":"0000-01-01T00:00:00+00:01"}]}`,
		`{"transactions":[]}`, `{"transactions":{}}`, `{"transactions":[1]}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		txs, err := parseCreditTransactions(body)
		if err != nil {
			checkBodyErr(t, err)
			return
		}
		if len(txs) == 0 || len(txs) > MaxCreditTransactions {
			t.Fatalf("%d transactions accepted", len(txs))
		}
		re := make([]map[string]any, len(txs))
		for i, ct := range txs {
			if !validEmail(ct.Email) || ct.AmountCents < -maxCents || ct.AmountCents > maxCents || ct.OccurredAt.Location() != time.UTC {
				t.Fatalf("transaction %+v accepted", ct)
			}
			re[i] = map[string]any{"id": ct.ID, "type": ct.Type, "email": ct.Email, "amount_cents": ct.AmountCents,
				"occurred_at": ct.OccurredAt.Format(time.RFC3339Nano), "order_ref": ct.OrderRef}
		}
		again, err := parseCreditTransactions(mustJSON(t, map[string]any{"transactions": re}))
		if err != nil {
			t.Fatalf("re-encoded transactions refused: %v", err)
		}
		for i := range txs {
			a, b := txs[i], again[i]
			if a.ID != b.ID || a.Type != b.Type || a.Email != b.Email || a.AmountCents != b.AmountCents ||
				a.OrderRef != b.OrderRef || !a.OccurredAt.Equal(b.OccurredAt) {
				t.Fatalf("round trip changed transaction %d: %+v, then %+v", i, a, b)
			}
		}
	})
}

func FuzzParseCreditBalances(f *testing.F) {
	for _, s := range []string{
		`{"balances":[{"email":"a@example.com","balance_cents":500},{"email":"b@example.com","balance_cents":-3}]}`,
		`{"balances":[]}`,
		`{"balances":[{"email":"a@example.com"}]}`,
		`{"balances":[{"email":"a@example.com","balance_cents":"5"}]}`,
		`{"balances":[{"email":"<a@example.com>","balance_cents":5}]}`,
		`{"balances":null}`, `{"balances":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		bs, err := parseCreditBalances(body)
		if err != nil {
			checkBodyErr(t, err)
			return
		}
		if len(bs) > MaxCreditBalances {
			t.Fatalf("%d balances accepted", len(bs))
		}
		for _, b := range bs {
			if !validEmail(b.Email) || b.BalanceCents < -maxCents || b.BalanceCents > maxCents {
				t.Fatalf("balance %+v accepted", b)
			}
		}
		if bs == nil {
			bs = []CreditBalance{}
		}
		again, err := parseCreditBalances(mustJSON(t, map[string]any{"balances": bs}))
		if err != nil {
			t.Fatalf("re-encoded balances refused: %v", err)
		}
		if !reflect.DeepEqual(bs, again) {
			t.Fatalf("round trip changed the balances: %+v, then %+v", bs, again)
		}
	})
}
