package event

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

func sampleOrder() Order {
	at := time.Date(2026, 3, 1, 10, 15, 0, 123000, time.UTC)
	rate, q := money.MustParse("19"), money.MustParse("1.5")
	net := int64(1000)
	return Order{
		ID: "0192f5c2-0000-7000-8000-000000000001", ProjectID: "p", Status: "created", Version: 3,
		FulfillmentStatus: "fulfilled", ShippedAt: &at, SuppliedAt: &at, TrackingNumber: "T<1>&", CreatedAt: at, UpdatedAt: at,
		OrderContent: OrderContent{
			OrderNo: "A-1", BillingAddress: Address{CountryCode: "DE", City: "Köln"}, Currency: "EUR",
			Items: []Item{{Name: "Mug \u2028", Quantity: q, UnitNetCents: &net, TaxRate: &rate, CatalogProductID: "c"}},
		},
	}
}

func TestOrderDataEqualsMarshal(t *testing.T) {
	t.Parallel()
	for _, o := range []Order{sampleOrder(), {}} {
		content, err := json.Marshal(o.OrderContent)
		if err != nil {
			t.Fatal(err)
		}
		got, err := OrderData(o, content)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(o)
		if !bytes.Equal(got, want) {
			t.Errorf("OrderData:\n%s\nwant\n%s", got, want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	o := sampleOrder()
	ev, err := New(OrderFulfilled, "p", "order", o.ID, o.OrderNo, o.Version, o.UpdatedAt, o)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Topic != TopicOrders || ev.Version != 1 || ev.PartitionKey() != "p/A-1" {
		t.Errorf("event %+v", ev)
	}
	b, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(ev)
	if !bytes.Equal(b, want) {
		t.Errorf("Encode:\n%s\nwant\n%s", b, want)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var got Order
	if err := json.Unmarshal(back.Data, &got); err != nil {
		t.Fatal(err)
	}
	if back.ID != ev.ID || back.Topic != TopicOrders || got.Items[0].Quantity.String() != "1.5" || !got.SuppliedAt.Equal(*o.SuppliedAt) {
		t.Errorf("round trip: %+v %+v", back, got)
	}
	if _, err := New("no.such", "p", "order", "", "k", 0, time.Now(), nil); err == nil {
		t.Error("unknown type accepted")
	}
	if _, err := Decode([]byte(`{"type":"x"}`)); err == nil {
		t.Error("event without id decoded")
	}
	// One streaming pass: input that breaks off, or turns malformed after
	// the envelope's fields, is still refused.
	for _, bad := range []string{string(b[:len(b)-1]), string(b[:len(b)-1]) + ",}", string(b) + "x"} {
		if _, err := DecodeAs[Order]([]byte(bad)); err == nil {
			t.Errorf("malformed event decoded: …%s", bad[max(0, len(bad)-20):])
		}
	}
}

func TestSpecsUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, s := range Specs {
		if seen[s.Type] || s.Topic == "" || s.Version < 1 {
			t.Errorf("spec %+v", s)
		}
		seen[s.Type] = true
	}
}

// TestDecodeAs: one pass gives the envelope Decode gives and the data
// DecodeData gives; data of another shape, or no id, is an error.
func TestDecodeAs(t *testing.T) {
	t.Parallel()
	o := sampleOrder()
	ev, err := New(OrderFulfilled, "p", "order", o.ID, o.OrderNo, o.Version, o.UpdatedAt, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeAs[Order](b)
	if err != nil {
		t.Fatal(err)
	}
	two, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var data Order
	if err := two.DecodeData(&data); err != nil {
		t.Fatal(err)
	}
	if got.ID != two.ID || got.Type != two.Type || got.Version != two.Version || got.ProjectID != two.ProjectID ||
		got.AggregateType != two.AggregateType || got.AggregateID != two.AggregateID || got.AggregateKey != two.AggregateKey ||
		got.AggregateVersion != two.AggregateVersion || !got.OccurredAt.Equal(two.OccurredAt) {
		t.Errorf("envelope %+v, want %+v", got.header, two)
	}
	if g, w := mustJSON(t, got.Data), mustJSON(t, data); g != w {
		t.Errorf("data:\n%s\nwant\n%s", g, w)
	}
	if _, err := DecodeAs[struct {
		Items string `json:"items"`
	}](b); err == nil {
		t.Error("data of another shape decoded")
	}
	if _, err := DecodeAs[Order]([]byte(`{"type":"order.created","data":{}}`)); err == nil {
		t.Error("event without id decoded")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
