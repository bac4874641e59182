package invoicing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/command/invoicing"
)

// TestIssueOpensVATIDReview: issuing goods to a buyer in France decides by
// the buyer's VAT ID, and a VAT ID that needs confirming opens a
// vat_id_review task naming what the invoice relies on; the invoice is
// issued all the same.
func TestIssueOpensVATIDReview(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, true, nil)
	tests := []struct {
		name, vatID string
		treatment   string
		taxCents    int64
		task        string // part of the task's details; "" for no task
	}{
		{"FR VAT ID of the French buyer", "FR 12 345678901", "intra_eu_goods", 0, ""},
		{"Belgian VAT ID", "BE0123456789", "intra_eu_goods", 0, "BE0123456789 is not of the buyer's country FR"},
		{"German VAT ID", "DE123456789", "distance_de_vat", 190, "German VAT charged"},
		{"no VAT ID (a seller without OSS)", "", "distance_de_vat", 190, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			no := fmt.Sprintf("VR-%d-%s", i, v.project[:8])
			id := v.place(fmt.Sprintf(`{"orderNo":%q,"requiresShipping":true,
				"billingAddress":{"country_code":"FR","company_name":"Client SARL","vat_id":%q,"street":"1 rue","postal_code":"75001","city":"Paris"},
				"items":[{"name":"Tasse","quantity":1,"unitNetCents":1000}]}`, no, tc.vatID))
			docs := v.issue(id)
			if len(docs) != 1 || docs[0].Status != "created" {
				t.Fatalf("documents %+v", docs)
			}
			var treatment string
			var tax int64
			if err := v.pool.QueryRow(context.Background(), `SELECT document->>'Treatment', total_tax_cents FROM invoices WHERE id = $1`,
				docs[0].ID).Scan(&treatment, &tax); err != nil {
				t.Fatal(err)
			}
			if treatment != tc.treatment || tax != tc.taxCents {
				t.Errorf("treatment %s, VAT %d cents; want %s, %d", treatment, tax, tc.treatment, tc.taxCents)
			}
			var raw []byte
			err := v.pool.QueryRow(context.Background(), `SELECT details FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`,
				v.project, invoicing.TaskVATIDReview, no).Scan(&raw)
			switch {
			case tc.task == "" && err == nil:
				t.Errorf("unexpected task: %s", raw)
			case tc.task != "" && err != nil:
				t.Fatalf("no %s task: %v", invoicing.TaskVATIDReview, err)
			case tc.task != "":
				var d map[string]any
				if err := json.Unmarshal(raw, &d); err != nil {
					t.Fatal(err)
				}
				if d["orderNo"] != no || d["number"] != docs[0].Number || d["treatment"] != tc.treatment || d["vatId"] != tc.vatID ||
					!strings.Contains(fmt.Sprint(d["details"]), tc.task) {
					t.Errorf("task details %s, want %q", raw, tc.task)
				}
			}
		})
	}
}
