package projection

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/event"
)

// TestQueueDecodedAgreesWithQueue: the one-pass decoding of a topic's events
// queues exactly what decoding the envelope and then the data does, and
// leaves to that path every message that is not what its topic carries.
func TestQueueDecodedAgreesWithQueue(t *testing.T) {
	t.Parallel()
	project := "0192F5C2-0000-7000-8000-00000000000A" // spelt in capitals: both paths canonicalise it
	paid := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	gross := int64(2380)
	order := event.Order{ID: "0192f5c2-0000-7000-8000-000000000001", ProjectID: project, Status: "created", Version: 3,
		FulfillmentStatus: "fulfilled", PaidAt: &paid, Holds: []event.Hold{{Type: "vat_id_review", TaskID: "t-1"}},
		OrderContent: event.OrderContent{OrderNo: "A-1", RequiresShipping: true, PaymentGateway: "stripe", FinancialStatus: "paid",
			GrossTotalCents: &gross, CreditRedemptions: []event.CreditRedemption{{AmountCents: 500}}}}
	inv := event.Invoice{ID: "0192F5C2-0000-7000-8000-0000000000B1", ProjectID: project, OrderID: order.ID, OrderNo: "A-1",
		Number: "RE-1", Status: "archived", Version: 2, Type: "invoice", Format: "zugferd", IssueDate: "2026-03-01", Currency: "EUR",
		TotalGrossCents: 2380, CreatedAt: paid}
	encode := func(typ, aggType string, data any) []byte {
		ev, err := event.New(typ, project, aggType, "", "A-1", 1, paid, data)
		if err != nil {
			t.Fatal(err)
		}
		b, err := event.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name, topic string
		raw         []byte
		oneP        bool // taken by the one-pass path
	}{
		{"order event", event.TopicOrders, encode(event.OrderFulfilled, "order", order), true},
		{"invoice event", event.TopicInvoices, encode(event.InvoiceArchived, "invoice", inv), true},
		{"order data of the wrong shape", event.TopicOrders, []byte(`{"eventId":"e","type":"order.created","version":1,"projectId":"p","data":{"id":5}}`), false},
		{"an invoice event on the orders topic", event.TopicOrders, encode(event.InvoiceCreated, "invoice", inv), false},
		{"schema version 2", event.TopicOrders, []byte(`{"eventId":"e","type":"order.created","version":2,"projectId":"p","data":{}}`), false},
		{"order without orderNo (refused by both paths alike)", event.TopicOrders, encode(event.OrderCreated, "order", event.Order{ID: order.ID}), true},
		{"credit event", event.TopicPayments, encode(event.CreditTransactionRecorded, "credit", map[string]any{"id": "c"}), false},
	} {
		orders1, invoices1 := map[orderRef]orderState{}, map[[2]string]invoiceRow{}
		ref1, applied, ok, err1 := queueDecoded(orders1, invoices1, c.topic, c.raw)
		if ok != c.oneP {
			t.Errorf("%s: one-pass %v, want %v", c.name, ok, c.oneP)
			continue
		}
		orders2, invoices2 := map[orderRef]orderState{}, map[[2]string]invoiceRow{}
		ev, err := event.Decode(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		ref2, err := queue(orders2, invoices2, ev)
		if !ok {
			if len(orders1)+len(invoices1) != 0 {
				t.Errorf("%s: the one-pass path queued something it gave up on", c.name)
			}
			continue
		}
		var poison1, poison2 poisonError
		if fmt.Sprint(err1) != fmt.Sprint(err) || errors.As(err1, &poison1) != errors.As(err, &poison2) {
			t.Errorf("%s: one-pass error %v, two passes %v", c.name, err1, err)
		}
		if ref1 != ref2 || !reflect.DeepEqual(orders1, orders2) || !reflect.DeepEqual(invoices1, invoices2) {
			t.Errorf("%s: one-pass %v %+v %+v, two passes %v %+v %+v (%v)", c.name, ref1, orders1, invoices1, ref2, orders2, invoices2, err)
		}
		if applied.typ != ev.Type || !applied.occurredAt.Equal(ev.OccurredAt) {
			t.Errorf("%s: applied %+v, want %s at %s", c.name, applied, ev.Type, ev.OccurredAt)
		}
	}
}
