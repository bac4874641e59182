package command

import "testing"

// benchOrderBody is the bench's realistic order (about 1 KB).
var benchOrderBody = []byte(`{"orderNo":"W-1","paymentRef":"pi_W-1","paymentGateway":"stripe","financialStatus":"paid","email":"kunde1@example.com","currency":"EUR","requiresShipping":true,
"billingAddress":{"country_code":"DE","name":"Erika Musterfrau","company_name":"Musterfrau Handels KG","street":"Lindenstraße 12","additional_address_line":"Hinterhaus, 2. OG","postal_code":"50667","city":"Köln"},
"shippingAddress":{"country_code":"DE","name":"Erika Musterfrau","street":"Lindenstraße 12","postal_code":"50667","city":"Köln"},
"items":[{"name":"Bio-Kaffee Espresso 1 kg","quantity":2,"unitGrossCents":1899,"taxRate":7,"sku":"KAF-ESP-1000","productId":"p-1001"},
{"name":"Keramiktasse handgemacht","quantity":1,"unitGrossCents":2490,"taxRate":19,"sku":"TAS-KER-01","productId":"p-2002"},
{"name":"Entkalker 500 ml","quantity":1,"unitGrossCents":799,"taxRate":19,"sku":"ENT-500","productId":"p-3003","discountNetCents":100}],
"shippingGrossCents":490}`)

// BenchmarkParseOrder is the body's decoding and validation alone.
func BenchmarkParseOrder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseOrder(benchOrderBody); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOrderHashes is the normalised content's JSON and its hashes.
func BenchmarkOrderHashes(b *testing.B) {
	c, err := parseOrder(benchOrderBody)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := orderHashes(c); err != nil {
			b.Fatal(err)
		}
	}
}
