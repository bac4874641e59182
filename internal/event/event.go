// Package event is the versioned contract of what the service publishes to
// Kafka: the envelope every message carries and the payloads of each event
// type. It is public to consumers, so it imports only the standard library,
// internal/money (exact decimals), uuid and the JSON v2 module with its
// implementation of encoding/json's semantics (go-json-experiment/json and
// json/v1: every consumer decodes every event); never billing or the
// store. That module mirrors the standard library's encoding/json/v2 and decodes the
// same values as encoding/json, in one pass and several times faster.
//
// Compatibility rule: within one schema version fields are only added, never
// renamed, removed or retyped; anything else is a new version, and producers
// publish the new version only after consumers understand it.
package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/google/uuid"
)

// Topics. All events of one aggregate go to one topic, keyed by
// PartitionKey, so they stay in order on one partition.
const (
	TopicOrders   = "o2i.orders"
	TopicInvoices = "o2i.invoices"
	TopicPayments = "o2i.payments"
)

// Event types of the order aggregate. Each carries the full Order after the
// change as its data.
const (
	OrderCreated            = "order.created"             // a new orderNo was accepted
	OrderUpdated            = "order.updated"             // an existing order's content changed
	OrderFulfilled          = "order.fulfilled"           // fulfillment status fulfilled; suppliedAt is set
	OrderFulfillmentUpdated = "order.fulfillment_updated" // fulfillment status unfulfilled or partial
)

// Event types of store credit (topic o2i.payments).
const (
	CreditTransactionRecorded = "credit.transaction_recorded" // data: CreditTransaction
)

// Spec describes one event type: where it goes and its current schema version.
type Spec struct {
	Type    string
	Topic   string
	Version int
}

// Specs lists every event type the service publishes (docs/events.md lists the same).
var Specs = []Spec{
	{OrderCreated, TopicOrders, 1},
	{OrderUpdated, TopicOrders, 1},
	{OrderFulfilled, TopicOrders, 1},
	{OrderFulfillmentUpdated, TopicOrders, 1},
	{CreditTransactionRecorded, TopicPayments, 1},
	{InvoiceCreated, TopicInvoices, 1},
	{InvoiceArchived, TopicInvoices, 1},
	{InvoiceFailed, TopicInvoices, 1},
}

// Lookup returns the spec of an event type.
func Lookup(typ string) (Spec, bool) {
	for _, s := range Specs {
		if s.Type == typ {
			return s, true
		}
	}
	return Spec{}, false
}

// Event is the envelope of every message. The Kafka message value is the
// JSON of Event; its key is PartitionKey.
type Event struct {
	ID               string          `json:"eventId"`          // UUID, unique per event: consumers deduplicate by it
	Type             string          `json:"type"`             // for example order.created
	Version          int             `json:"version"`          // schema version of Data for Type
	ProjectID        string          `json:"projectId"`        // UUID of the project (seller account)
	AggregateType    string          `json:"aggregateType"`    // "order", "credit"
	AggregateID      string          `json:"aggregateId"`      // internal UUID of the aggregate ("" when it has none)
	AggregateKey     string          `json:"aggregateKey"`     // the caller's key: orderNo, credit transaction id
	AggregateVersion int64           `json:"aggregateVersion"` // the aggregate's version after the change; 0 when unversioned
	OccurredAt       time.Time       `json:"occurredAt"`       // when the change was committed (UTC, RFC 3339)
	Data             json.RawMessage `json:"data"`             // the payload of Type in Version
	Topic            string          `json:"-"`                // the Kafka topic, from the type's Spec
}

// PartitionKey is the Kafka message key: project and aggregate key, so that
// every event of one order lands on one partition in order.
func (e Event) PartitionKey() string { return e.ProjectID + "/" + e.AggregateKey }

// New returns an event of a registered type with a fresh id, the type's
// topic and schema version, and data encoded as JSON (a json.RawMessage is
// taken as it is: it must be valid, compact JSON).
func New(typ, projectID, aggType, aggID, aggKey string, aggVersion int64, at time.Time, data any) (Event, error) {
	spec, ok := Lookup(typ)
	if !ok {
		return Event{}, fmt.Errorf("event: unknown type %q", typ)
	}
	raw, isRaw := data.(json.RawMessage)
	if !isRaw {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return Event{}, fmt.Errorf("event: encode %s data: %w", typ, err)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Event{}, err
	}
	return Event{
		ID: id.String(), Type: typ, Version: spec.Version, ProjectID: projectID,
		AggregateType: aggType, AggregateID: aggID, AggregateKey: aggKey, AggregateVersion: aggVersion,
		OccurredAt: at.UTC(), Data: raw, Topic: spec.Topic,
	}, nil
}

// header is Event without Data: Encode appends the data as it is instead of
// letting encoding/json re-validate and compact it.
type header struct {
	ID               string    `json:"eventId"`
	Type             string    `json:"type"`
	Version          int       `json:"version"`
	ProjectID        string    `json:"projectId"`
	AggregateType    string    `json:"aggregateType"`
	AggregateID      string    `json:"aggregateId"`
	AggregateKey     string    `json:"aggregateKey"`
	AggregateVersion int64     `json:"aggregateVersion"`
	OccurredAt       time.Time `json:"occurredAt"`
}

// Encode returns the JSON of the envelope (the same bytes as json.Marshal).
func Encode(e Event) ([]byte, error) {
	if e.ID == "" || e.Type == "" || e.ProjectID == "" {
		return nil, errors.New("event: id, type and projectId are required")
	}
	h, err := json.Marshal(header{e.ID, e.Type, e.Version, e.ProjectID, e.AggregateType, e.AggregateID, e.AggregateKey, e.AggregateVersion, e.OccurredAt})
	if err != nil {
		return nil, err
	}
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	out := make([]byte, 0, len(h)+len(data)+9)
	out = append(out, h[:len(h)-1]...)
	out = append(out, `,"data":`...)
	out = append(out, data...)
	return append(out, '}'), nil
}

// DecodeData decodes e.Data into v, as encoding/json.Unmarshal would, several
// times faster (consumers decode every event).
func (e Event) DecodeData(v any) error { return jsonv1.Unmarshal(e.Data, v) }

// Decode reads an envelope; Data stays raw for the consumer to decode by
// Type and Version. Topic is filled in from the type's spec when known.
func Decode(b []byte) (Event, error) {
	var e Event
	if err := jsonv1.Unmarshal(b, &e); err != nil {
		return Event{}, fmt.Errorf("event: decode: %w", err)
	}
	if e.ID == "" || e.Type == "" {
		return Event{}, errRequired
	}
	if s, ok := Lookup(e.Type); ok {
		e.Topic = s.Topic
	}
	return e, nil
}

// Envelope is an event whose data a consumer decodes in the same pass as
// the envelope, into the type it expects (a topic's events all carry one
// kind of data): half the work of Decode and DecodeData.
type Envelope[T any] struct {
	header   // the envelope's fields, as in Event
	Data   T `json:"data"`
}

// DecodeAs reads an envelope and its data as T in one streaming pass. It
// fails where Decode does, and where the data does not decode as T: a
// consumer that may meet other data falls back to Decode to tell the two
// apart. Its options (decodeAsOptions) are encoding/json's semantics
// without the check of the whole input before decoding, which read every
// event twice; only its errors' types differ from Decode's.
func DecodeAs[T any](b []byte) (Envelope[T], error) {
	var e Envelope[T]
	if err := jsonv2.Unmarshal(b, &e, decodeAsOptions); err != nil {
		return Envelope[T]{}, fmt.Errorf("event: decode: %w", err)
	}
	if e.ID == "" || e.Type == "" {
		return Envelope[T]{}, errRequired
	}
	return e, nil
}

var decodeAsOptions = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

var errRequired = errors.New("event: decode: eventId and type are required")
