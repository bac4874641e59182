// Package readmodel is what the projectors (writers) and the query side
// (readers) share about the read models: the order status record, its Redis
// key and the atomic "set if newer" that keeps Redis order-safe.
// It imports go-redis only.
package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// InvoiceRef is one document of an order in the order status record.
type InvoiceRef struct {
	ID     string `json:"id" required:"true" format:"uuid"`
	Number string `json:"number" required:"true"`
	Status string `json:"status" required:"true" enum:"created,archived,failed" description:"archive status of the document: created (being archived), archived, failed (archiving failed after the invoicer's attempts; retried, the invoice metadata at url says why)"`
	URL    string `json:"url" required:"true" description:"path of the invoice metadata resource, /v1/invoices/<invoice uuid>"`
	Type   string `json:"type" required:"true" enum:"invoice,voucher_sale,cancellation,credit_note" description:"invoice; voucher_sale (gift cards, a separate document); cancellation (Stornorechnung of an earlier document of the order); credit_note (Rechnungskorrektur of a partial refund, or the cancellation of what partial refunds left of an invoice when its order is cancelled)"`
}

// OrderStatus is the data of GET /v1/orders/{orderNo}.
type OrderStatus struct {
	OrderNo           string       `json:"orderNo" required:"true"`
	Status            string       `json:"status" required:"true" description:"created (no valid invoice yet: waiting, held, or a correction in progress), invoiced, or cancelled (more values may be added)"`
	FulfillmentStatus string       `json:"fulfillmentStatus" required:"true" enum:"unfulfilled,partial,fulfilled"`
	Invoices          []InvoiceRef `json:"invoices" required:"true" description:"every document of the order, oldest first"`
	WaitingFor        string       `json:"waitingFor" required:"true" enum:"none,payment,fulfillment" description:"the first thing the order waits for before its invoice is due, in process order: the provider's payment (matched by paymentRef), then the fulfilled report of goods; none when it waits for nothing (due, invoiced, cancelled, or held: see holds). waitingForAll lists everything"`
	WaitingForAll     []Waiting    `json:"waitingForAll" required:"true" description:"everything the order waits for before its invoice is due, in process order (payment, then fulfillment): an unpaid order of goods not shipped yet waits for both. Its first entry is waitingFor; empty when waitingFor is none"`
	Holds             []Hold       `json:"holds" required:"true" description:"review tasks that hold the due order back without an invoice number (GET /v1/tasks/{taskId}); empty when none"`
	Payment           string       `json:"payment" required:"true" enum:"pending,open,paid,credit" description:"pending: no payment yet; open: invoiced as an open item of an invoice-first gateway, the payment is due (see the invoice's due date); paid: the provider's payment is matched; credit: store credit pays the whole order"`
}

// Waiting is one thing an order waits for: payment or fulfillment.
type Waiting string

// Enum lists the values, for the OpenAPI document.
func (Waiting) Enum() []any { return []any{"payment", "fulfillment"} }

// Hold is a review task holding an order back.
type Hold struct {
	Type   string `json:"type" required:"true" description:"the task type, e.g. xrechnung_contact_phone_missing, product_without_revenue_recognition, order_not_invoiceable, invoice_validation_failed"`
	TaskID string `json:"taskId" required:"true" format:"uuid"`
}

// Row is an order_view row as the status record is made from it.
type Row struct {
	OrderNo, Status, FulfillmentStatus, WaitingFor, Payment string
	WaitingForAll                                           []string
	Invoices, Holds                                         []byte // JSON arrays
}

// InvoiceURL is the path of an invoice's metadata resource.
func InvoiceURL(id string) string { return "/v1/invoices/" + id }

// OrderKey is the Redis key of an order's status record.
func OrderKey(projectID, orderNo string) string { return "o2i:order:" + projectID + ":" + orderNo }

// setIfNewer stores body under KEYS[1] only when ARGV[1] (the revision) is
// greater than the stored one; it returns 1 when it wrote.
var setIfNewer = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'rev')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'rev', ARGV[1], 'body', ARGV[2])
return 1
`)

// Put queues the order status record (JSON body) at revision rev on the
// pipeline; stale revisions never overwrite newer ones.
func Put(ctx context.Context, p redis.Pipeliner, projectID, orderNo string, rev int64, body []byte) {
	// EVAL rather than EVALSHA: a pipeline cannot fall back after NOSCRIPT
	// (for example after a Redis restart), and the script is short.
	setIfNewer.Eval(ctx, p, []string{OrderKey(projectID, orderNo)}, rev, body)
}

// ErrMiss means Redis holds no record for the order.
var ErrMiss = errors.New("readmodel: not in redis")

// Get returns the stored revision and JSON body of an order's status record.
func Get(ctx context.Context, rdb redis.Cmdable, projectID, orderNo string) (int64, []byte, error) {
	vals, err := rdb.HMGet(ctx, OrderKey(projectID, orderNo), "rev", "body").Result()
	if err != nil {
		return 0, nil, err
	}
	revS, ok1 := vals[0].(string)
	body, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return 0, nil, ErrMiss
	}
	rev, err := strconv.ParseInt(revS, 10, 64)
	if err != nil {
		return 0, nil, ErrMiss
	}
	return rev, []byte(body), nil
}

// Encode renders a status record from an order_view row (invoices is the
// row's JSON array); projectors store exactly these bytes in Redis and the
// query side serves them.
func Encode(r Row) ([]byte, error) {
	s := OrderStatus{OrderNo: r.OrderNo, Status: r.Status, FulfillmentStatus: r.FulfillmentStatus, WaitingFor: r.WaitingFor, Payment: r.Payment}
	if err := json.Unmarshal(r.Invoices, &s.Invoices); err != nil {
		return nil, err
	}
	if s.Invoices == nil {
		s.Invoices = []InvoiceRef{}
	}
	if len(r.Holds) > 0 {
		if err := json.Unmarshal(r.Holds, &s.Holds); err != nil {
			return nil, err
		}
	}
	if s.Holds == nil {
		s.Holds = []Hold{}
	}
	if s.WaitingFor == "" {
		s.WaitingFor = "none"
	}
	// waitingFor is the first entry of waitingForAll, also in a row that a
	// projector of an earlier release wrote (it set waiting_for alone).
	switch {
	case s.WaitingFor == "none":
		s.WaitingForAll = []Waiting{}
	case len(r.WaitingForAll) == 0 || r.WaitingForAll[0] != s.WaitingFor:
		s.WaitingForAll = []Waiting{Waiting(s.WaitingFor)}
	default:
		s.WaitingForAll = make([]Waiting, len(r.WaitingForAll))
		for i, w := range r.WaitingForAll {
			s.WaitingForAll[i] = Waiting(w)
		}
	}
	if s.Payment == "" {
		s.Payment = "pending"
	}
	return json.Marshal(s)
}
