package readmodel

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEncodeWaiting: the status record carries what the row says the order
// waits for; waitingFor is always the first entry of waitingForAll, also for
// a row whose waiting_for_all an earlier release left behind.
func TestEncodeWaiting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		first   string
		all     []string
		want    string
		wantAll []Waiting
	}{
		{"both, payment first", "payment", []string{"payment", "fulfillment"}, "payment", []Waiting{"payment", "fulfillment"}},
		{"payment only", "payment", []string{"payment"}, "payment", []Waiting{"payment"}},
		{"fulfillment only", "fulfillment", []string{"fulfillment"}, "fulfillment", []Waiting{"fulfillment"}},
		{"nothing", "none", []string{}, "none", []Waiting{}},
		{"nothing, no column value", "", nil, "none", []Waiting{}},
		{"older row: waiting_for alone", "fulfillment", nil, "fulfillment", []Waiting{"fulfillment"}},
		{"older projector set waiting_for after the list", "none", []string{"payment", "fulfillment"}, "none", []Waiting{}},
		{"older projector, another first", "fulfillment", []string{"payment", "fulfillment"}, "fulfillment", []Waiting{"fulfillment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := Encode(Row{OrderNo: "A-1", Status: "created", FulfillmentStatus: "unfulfilled", WaitingFor: tt.first,
				WaitingForAll: tt.all, Invoices: []byte("[]")})
			if err != nil {
				t.Fatal(err)
			}
			var s OrderStatus
			if err := json.Unmarshal(body, &s); err != nil {
				t.Fatal(err)
			}
			if s.WaitingFor != tt.want || !cmp.Equal(s.WaitingForAll, tt.wantAll) {
				t.Errorf("waitingFor %q, waitingForAll %#v; want %q, %#v (body %s)", s.WaitingFor, s.WaitingForAll, tt.want, tt.wantAll, body)
			}
		})
	}
}
