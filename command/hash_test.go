package command

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/o2i-service/o2i/internal/event"
)

// TestInvoiceHashIgnoresOnlyNonInvoiceFields: the invoice hash equals the
// hash of the content with financialStatus and email cleared.
func TestInvoiceHashIgnoresOnlyNonInvoiceFields(t *testing.T) {
	t.Parallel()
	base := event.OrderContent{OrderNo: "1", BillingAddress: event.Address{CountryCode: "DE"}, Currency: "EUR",
		Items: []event.Item{{Name: "x", CatalogProductID: "p"}}}
	for _, fs := range []string{"", "paid"} {
		for _, email := range []string{"", "a@example.com"} {
			c := base
			c.FinancialStatus, c.Email = fs, email
			content, _, ih, err := orderHashes(c)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(c)
			if !bytes.Equal(content, want) {
				t.Fatalf("content %s", content)
			}
			plain, _ := json.Marshal(base)
			wantIH := sha256.Sum256(plain)
			if !bytes.Equal(ih, wantIH[:]) {
				t.Errorf("financialStatus %q email %q: invoice hash differs from the plain content's", fs, email)
			}
		}
	}
	c := base
	c.Currency = "USD"
	_, _, ih, _ := orderHashes(c)
	_, _, ih0, _ := orderHashes(base)
	if bytes.Equal(ih, ih0) {
		t.Error("a currency change kept the invoice hash")
	}
}
