package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestStripeFake: the fake keeps customers by e-mail, answers payment
// intents with bank-transfer instructions (a valid virtual IBAN), replays a
// repeated Idempotency-Key, refuses a restricted key until it is granted,
// and loses answers on demand after carrying the request out.
func TestStripeFake(t *testing.T) {
	t.Parallel()
	// stripe-mock stands in as an endpoint that accepts every request.
	mock := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"payment_intent"}`)
	}))
	t.Cleanup(mock.Close)
	fake := httptest.NewServer(newStripeFake(mock.URL))
	t.Cleanup(fake.Close)

	call := func(key, method, path, idem string, form url.Values) (int, map[string]any, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, fake.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body, resp.Header
	}
	st, cust, _ := call("sk_test_1", "POST", "/v1/customers", "c1", url.Values{"email": {"a@example.com"}})
	if st != 200 || !strings.HasPrefix(cust["id"].(string), "cus_") {
		t.Fatalf("customer: %d %v", st, cust)
	}
	if _, list, _ := call("sk_test_1", "GET", "/v1/customers?email=a@example.com", "", nil); len(list["data"].([]any)) != 1 {
		t.Errorf("customers by e-mail %v", list)
	}
	pi := url.Values{"amount": {"11900"}, "currency": {"eur"}, "customer": {cust["id"].(string)},
		"payment_method_options[customer_balance][funding_type]":                             {"bank_transfer"},
		"payment_method_options[customer_balance][bank_transfer][type]":                      {"eu_bank_transfer"},
		"payment_method_options[customer_balance][bank_transfer][eu_bank_transfer][country]": {"DE"}}
	st, first, _ := call("sk_test_1", "POST", "/v1/payment_intents", "p1", pi)
	in := first["next_action"].(map[string]any)["display_bank_transfer_instructions"].(map[string]any)
	iban := in["financial_addresses"].([]any)[0].(map[string]any)["iban"].(map[string]any)["iban"].(string)
	if st != 200 || first["amount"] != float64(11900) || in["reference"] == "" || iban != "DE36100100100000000001" {
		t.Errorf("payment intent: %d %v", st, first)
	}
	if _, again, h := call("sk_test_1", "POST", "/v1/payment_intents", "p1", pi); again["id"] != first["id"] || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay %v, want %v", again["id"], first["id"])
	}

	if st, body, _ := call("rk_test_1", "POST", "/v1/customers", "", url.Values{"email": {"b@example.com"}}); st != 403 {
		t.Errorf("restricted key: %d %v", st, body)
	}
	if _, err := http.PostForm(fake.URL+"/_fake/grant", url.Values{"key": {"rk_test_1"}}); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := call("rk_test_1", "POST", "/v1/customers", "", url.Values{"email": {"b@example.com"}}); st != 200 {
		t.Errorf("granted key: %d", st)
	}

	if _, err := http.PostForm(fake.URL+"/_fake/fail", url.Values{"key": {"sk_test_1"}, "path": {"/v1/customers"}}); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := call("sk_test_1", "POST", "/v1/customers", "c2", url.Values{"email": {"c@example.com"}}); st != 500 {
		t.Errorf("ordered failure: %d", st)
	}
	if _, list, _ := call("sk_test_1", "GET", "/v1/customers?email=c@example.com", "", nil); len(list["data"].([]any)) != 1 {
		t.Errorf("the failed request was not carried out: %v", list)
	}
}

// TestVirtualIBAN: valid IBANs (check digits verified independently, ISO 13616 mod 97).
func TestVirtualIBAN(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "DE36100100100000000001", 42: "DE93100100100000000042"} {
		if got := virtualIBAN(n); got != want {
			t.Errorf("virtualIBAN(%d) = %s, want %s", n, got, want)
		}
	}
}
