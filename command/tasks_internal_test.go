package command

import (
	"testing"

	"github.com/o2i-service/o2i/internal/apperr"
)

// TestDecideRecheck: a recheck of a resolved task does nothing, of a task
// that holds nothing is refused, of a hold whose cause the settings still
// show is refused naming what is missing, else it reports the cause fixed.
func TestDecideRecheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kind, status string
		missing            []string
		enqueue            bool
		code               string
	}{
		{"resolved hold", "seller_data_incomplete", "resolved", nil, false, ""},
		{"resolved informational task", "payment_amount_mismatch", "resolved", nil, false, ""},
		{"informational task", "payment_amount_mismatch", "open", nil, false, "task_not_a_hold"},
		{"seller data still missing", "seller_data_incomplete", "open", []string{"sellerName"}, false, "cause_not_fixed"},
		{"seller data set", "seller_data_incomplete", "open", nil, true, ""},
		{"phone set", "xrechnung_contact_phone_missing", "open", nil, true, ""},
		{"provider rights: only trying tells", "provider_rights_missing", "open", nil, true, ""},
		{"product recognition still missing", "product_without_revenue_recognition", "open", []string{"the revenue recognition of product p"}, false, "cause_not_fixed"},
		{"a cause of the order", "order_not_invoiceable", "open", nil, true, ""},
		{"a document breaking the rules", "invoice_validation_failed", "open", nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			enqueue, err := decideRecheck(tt.kind, tt.status, tt.missing)
			code := ""
			if e, ok := err.(*apperr.Error); ok {
				code = e.Code
			} else if err != nil {
				t.Fatal(err)
			}
			if enqueue != tt.enqueue || code != tt.code {
				t.Errorf("decideRecheck = %v %q, want %v %q", enqueue, code, tt.enqueue, tt.code)
			}
		})
	}
}
