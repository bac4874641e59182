// Package projection holds the projectors: they consume the order and
// invoice events from Kafka and are the only writers of the read models (the
// PostgreSQL tables order_view and invoice_view and the Redis copies of the
// order status records). Applying is idempotent and order-safe: every write
// is guarded by the aggregate's version, so a redelivered, replayed or stale
// event changes nothing. It imports internal/event, internal/readmodel,
// internal/consume, internal/tracing, pgx, go-redis, kafka-go and the
// OpenTelemetry trace API; never command or query.
package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/lifecycle"
	"github.com/o2i-service/o2i/internal/readmodel"
)

// Tables names the read-model tables a projector writes; a rebuild writes
// into fresh tables and swaps them in.
type Tables struct {
	Orders   string
	Invoices string
}

// Live are the tables the API reads.
var Live = Tables{Orders: "order_view", Invoices: "invoice_view"}

// orderRef names one order's status record.
type orderRef struct{ projectID, orderNo string }

// poisonError marks an event that can never be applied (undecodable, an
// unknown type or schema version); it goes to the dead-letter table.
type poisonError struct{ err error }

func (e poisonError) Error() string { return e.err.Error() }

// orderState is what an order event sets in the order's status record.
type orderState struct {
	orderID           string
	version           int64
	status            string
	fulfillmentStatus string
	waitingFor        string   // decided by resolveWaiting
	waitingForAll     []string // decided by resolveWaiting
	payment           string   // decided by resolveWaiting
	holds             []byte   // JSON [{type, taskId}]
	facts             lifecycle.Facts
	paymentGateway    string
}

// queue adds what ev sets to orders (order events: the order's state,
// written by queueOrders) or invoices (invoice events: the document's row,
// written by queueInvoices), one statement per batch each, and returns the
// order whose status record the event touches.
func queue(orders map[orderRef]orderState, invoices map[[2]string]invoiceRow, ev event.Event) (orderRef, error) {
	switch {
	case isOrderEvent(ev.Type):
		if ev.Version != 1 {
			return orderRef{}, poisonError{fmt.Errorf("%s schema version %d is not supported", ev.Type, ev.Version)}
		}
		var o orderData
		if err := ev.DecodeData(&o); err != nil {
			return orderRef{}, poisonError{fmt.Errorf("decode %s: %w", ev.Type, err)}
		}
		return queueOrder(orders, ev.Type, ev.ProjectID, o)

	case isInvoiceEvent(ev.Type):
		if ev.Version != 1 {
			return orderRef{}, poisonError{fmt.Errorf("%s schema version %d is not supported", ev.Type, ev.Version)}
		}
		var inv event.Invoice
		if err := ev.DecodeData(&inv); err != nil {
			return orderRef{}, poisonError{fmt.Errorf("decode %s: %w", ev.Type, err)}
		}
		return queueInvoice(invoices, ev.Type, ev.ProjectID, inv)
	}
	return orderRef{}, poisonError{fmt.Errorf("unknown event type %q", ev.Type)}
}

// queueMessage is queue for a Kafka message: an event of the orders or
// invoices topic is decoded with its data in one pass (queueDecoded); any
// other message, and one that is not what its topic carries, is decoded
// envelope first, which applies it or names why it cannot be (a
// poisonError).
func queueMessage(orders map[orderRef]orderState, invoices map[[2]string]invoiceRow, topic string, raw []byte) (orderRef, appliedEvent, error) {
	if ref, applied, ok, err := queueDecoded(orders, invoices, topic, raw); ok {
		return ref, applied, err
	}
	ev, err := event.Decode(raw)
	if err != nil {
		return orderRef{}, appliedEvent{}, poisonError{err}
	}
	ref, err := queue(orders, invoices, ev)
	return ref, appliedEvent{ev.Type, ev.OccurredAt}, err
}

// queueDecoded is queue for a message of a topic whose events all carry one
// kind of data: envelope and data are decoded in one pass, and the event is
// queued or refused as queue would (err). ok is false when the message is
// not such an event of a known type and schema version 1 (or does not
// decode so), having queued nothing.
func queueDecoded(orders map[orderRef]orderState, invoices map[[2]string]invoiceRow, topic string, raw []byte) (ref orderRef, applied appliedEvent, ok bool, err error) {
	switch topic {
	case event.TopicOrders:
		ev, derr := event.DecodeAs[orderData](raw)
		if derr != nil || ev.Version != 1 || !isOrderEvent(ev.Type) {
			return orderRef{}, appliedEvent{}, false, nil
		}
		ref, err = queueOrder(orders, ev.Type, ev.ProjectID, ev.Data)
		return ref, appliedEvent{ev.Type, ev.OccurredAt}, true, err
	case event.TopicInvoices:
		ev, derr := event.DecodeAs[event.Invoice](raw)
		if derr != nil || ev.Version != 1 || !isInvoiceEvent(ev.Type) {
			return orderRef{}, appliedEvent{}, false, nil
		}
		ref, err = queueInvoice(invoices, ev.Type, ev.ProjectID, ev.Data)
		return ref, appliedEvent{ev.Type, ev.OccurredAt}, true, err
	}
	return orderRef{}, appliedEvent{}, false, nil
}

// appliedEvent is what the projector's metrics need of an applied event.
type appliedEvent struct {
	typ        string
	occurredAt time.Time
}

func isOrderEvent(typ string) bool {
	return typ == event.OrderCreated || typ == event.OrderUpdated || typ == event.OrderFulfilled || typ == event.OrderFulfillmentUpdated
}

func isInvoiceEvent(typ string) bool {
	return typ == event.InvoiceCreated || typ == event.InvoiceArchived || typ == event.InvoiceFailed
}

// orderData is what the status record needs of an order event's data;
// lines and addresses stay undecoded.
type orderData struct {
	ID                string     `json:"id"`
	OrderNo           string     `json:"orderNo"`
	Status            string     `json:"status"`
	Version           int64      `json:"version"`
	FulfillmentStatus string     `json:"fulfillmentStatus"`
	RequiresShipping  bool       `json:"requiresShipping"`
	PaymentGateway    string     `json:"paymentGateway"`
	FinancialStatus   string     `json:"financialStatus"`
	GrossTotalCents   *int64     `json:"grossTotalCents"`
	PaidAt            *time.Time `json:"paidAt"`
	CreditRedemptions []struct {
		AmountCents int64 `json:"amountCents"`
	} `json:"creditRedemptions"`
	Holds []struct {
		Type   string `json:"type"`
		TaskID string `json:"taskId"`
	} `json:"holds"`
}

// queueOrder adds an order event's data to orders.
func queueOrder(orders map[orderRef]orderState, typ, projectID string, o orderData) (orderRef, error) {
	if o.OrderNo == "" || !isUUID(projectID) || !isUUID(o.ID) {
		return orderRef{}, poisonError{fmt.Errorf("%s without orderNo, or with an invalid projectId or id", typ)}
	}
	// The canonical form: one order is one key of the batch's upsert,
	// however its project id was spelt (else: cardinality violation).
	ref := orderRef{canonicalUUID(projectID), o.OrderNo}
	// Of several events of one order in a batch the newest wins, as it
	// would statement by statement (the upsert is version-guarded).
	if cur, ok := orders[ref]; !ok || o.Version > cur.version {
		credits := make([]int64, len(o.CreditRedemptions))
		for i, c := range o.CreditRedemptions {
			credits[i] = c.AmountCents
		}
		st := orderState{orderID: o.ID, version: o.Version, status: o.Status, fulfillmentStatus: o.FulfillmentStatus,
			holds: []byte("[]"), paymentGateway: o.PaymentGateway, facts: lifecycle.Facts{
				Status: o.Status, RequiresShipping: o.RequiresShipping, Fulfilled: o.FulfillmentStatus == "fulfilled",
				Paid: o.PaidAt != nil, CoveredByCredit: lifecycle.CoveredByCredit(o.FinancialStatus, o.GrossTotalCents, credits),
			}}
		if len(o.Holds) > 0 {
			st.holds, _ = json.Marshal(o.Holds)
		}
		orders[ref] = st
	}
	return ref, nil
}

// queueInvoice adds an invoice event's document to invoices.
func queueInvoice(invoices map[[2]string]invoiceRow, typ, projectID string, inv event.Invoice) (orderRef, error) {
	if inv.OrderNo == "" || !isUUID(projectID) || !isUUID(inv.ID) {
		return orderRef{}, poisonError{fmt.Errorf("%s without orderNo, or with an invalid projectId or id", typ)}
	}
	row := invoiceRow{projectID: canonicalUUID(projectID), inv: inv}
	row.inv.ID = canonicalUUID(inv.ID)
	// Of several events of one document in a batch the newest wins, as
	// it would statement by statement (the upsert is version-guarded).
	key := [2]string{row.projectID, row.inv.ID}
	// A document keeps the place of its first event in the batch: rows
	// are inserted in that order, so invoice_view's seq follows the
	// events (the newest document of an order is the last one inserted).
	cur, ok := invoices[key]
	row.pos = len(invoices)
	if ok {
		row.pos = cur.pos
	}
	if !ok || inv.Version > cur.inv.Version {
		invoices[key] = row
	}
	return orderRef{canonicalUUID(projectID), inv.OrderNo}, nil
}

// invoiceRow is what an invoice event sets in invoice_view: the event's
// document, its project id and id in canonical form (the keys of the
// batch's upsert).
type invoiceRow struct {
	projectID string
	inv       event.Invoice
	pos       int // the place of the document's first event in the batch
}

// queueInvoices adds one version-guarded upsert of every document of the
// batch, then one statement that derives the document list of each of
// their orders from the invoice rows (so it is right whatever order the
// invoice events arrive in). Both come before queueOrders' upsert, as the
// statements of each event did.
func queueInvoices(b *pgx.Batch, t Tables, invoices map[[2]string]invoiceRow) {
	if len(invoices) == 0 {
		return
	}
	var projects, ids, numbers, statuses, orderNos, types, formats, issueDates, currencies []string
	var paymentRefs, failureReasons, failureTasks []*string
	var versions, nets, taxes, grosses []int64
	var tests []bool
	var created []time.Time
	var archived []*time.Time
	seen := map[orderRef]bool{}
	var refProjects, refOrders []string
	rows := slices.SortedFunc(maps.Values(invoices), func(a, b invoiceRow) int { return a.pos - b.pos })
	for _, r := range rows {
		inv := r.inv
		var paymentRef, failureReason, failureTask *string
		if inv.PaymentRef != "" {
			paymentRef = &inv.PaymentRef
		}
		// A failed document shows why and its review task; a document that
		// is not failed (any more) shows neither.
		if inv.Status == "failed" && inv.FailureReason != "" {
			failureReason = &inv.FailureReason
		}
		if inv.Status == "failed" && isUUID(inv.TaskID) {
			failureTask = &inv.TaskID
		}
		projects, ids, versions = append(projects, r.projectID), append(ids, inv.ID), append(versions, inv.Version)
		numbers, statuses, orderNos = append(numbers, inv.Number), append(statuses, inv.Status), append(orderNos, inv.OrderNo)
		paymentRefs, types, formats = append(paymentRefs, paymentRef), append(types, inv.Type), append(formats, inv.Format)
		issueDates, currencies = append(issueDates, inv.IssueDate), append(currencies, inv.Currency)
		nets, taxes, grosses = append(nets, inv.TotalNetCents), append(taxes, inv.TotalTaxCents), append(grosses, inv.TotalGrossCents)
		tests, created, archived = append(tests, inv.TestMode), append(created, inv.CreatedAt), append(archived, inv.ArchivedAt)
		failureReasons, failureTasks = append(failureReasons, failureReason), append(failureTasks, failureTask)
		if ref := (orderRef{r.projectID, inv.OrderNo}); !seen[ref] {
			seen[ref] = true
			refProjects, refOrders = append(refProjects, ref.projectID), append(refOrders, ref.orderNo)
		}
	}
	b.Queue(`INSERT INTO `+t.Invoices+` AS v (project_id, id, version, number, status, order_no, payment_ref, type, format,
			issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, test_mode, created_at, archived_at,
			failure_reason, failure_task_id, rev)
		SELECT k.project_id, k.id, k.version, k.number, k.status, k.order_no, k.payment_ref, k.type, k.format,
			k.issue_date::date, k.currency, k.net, k.tax, k.gross, k.test_mode, k.created_at, k.archived_at,
			k.failure_reason, k.failure_task_id::uuid, nextval('read_model_rev')
		FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
				$10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::boolean[], $16::timestamptz[], $17::timestamptz[],
				$18::text[], $19::text[])
			WITH ORDINALITY AS k(project_id, id, version, number, status, order_no, payment_ref, type, format, issue_date, currency, net, tax, gross,
				test_mode, created_at, archived_at, failure_reason, failure_task_id, ord)
		ORDER BY k.ord
		ON CONFLICT (project_id, id) DO UPDATE SET version = EXCLUDED.version, number = EXCLUDED.number,
			status = EXCLUDED.status, payment_ref = EXCLUDED.payment_ref, archived_at = EXCLUDED.archived_at,
			failure_reason = EXCLUDED.failure_reason, failure_task_id = EXCLUDED.failure_task_id, rev = EXCLUDED.rev
		WHERE v.version < EXCLUDED.version`,
		projects, ids, versions, numbers, statuses, orderNos, paymentRefs, types, formats, issueDates, currencies,
		nets, taxes, grosses, tests, created, archived, failureReasons, failureTasks)
	b.Queue(`INSERT INTO `+t.Orders+` AS v (project_id, order_no, invoices, rev, updated_at)
		SELECT k.project_id, k.order_no,
			(SELECT coalesce(jsonb_agg(jsonb_build_object('id', i.id, 'number', i.number, 'status', i.status,
					'url', '/v1/invoices/' || i.id, 'type', i.type) ORDER BY i.created_at, i.seq), '[]'::jsonb)
				FROM `+t.Invoices+` i WHERE i.project_id = k.project_id AND i.order_no = k.order_no),
			nextval('read_model_rev'), now()
		FROM unnest($1::uuid[], $2::text[]) AS k(project_id, order_no)
		ORDER BY k.project_id, k.order_no
		ON CONFLICT (project_id, order_no) DO UPDATE SET invoices = EXCLUDED.invoices, rev = EXCLUDED.rev, updated_at = now()
		WHERE v.invoices IS DISTINCT FROM EXCLUDED.invoices`,
		refProjects, refOrders)
}

// queueOrders adds one version-guarded upsert of every order state of the
// batch. It commutes with the invoice statements: they set other columns,
// and both take a new rev.
func queueOrders(b *pgx.Batch, t Tables, orders map[orderRef]orderState) {
	if len(orders) == 0 {
		return
	}
	var projects, orderNos, ids, statuses, fulfillments, waiting, waitingAll, holds, payments []string
	var versions []int64
	for ref, o := range orders {
		projects, orderNos, ids = append(projects, ref.projectID), append(orderNos, ref.orderNo), append(ids, o.orderID)
		versions, statuses, fulfillments = append(versions, o.version), append(statuses, o.status), append(fulfillments, o.fulfillmentStatus)
		waiting, holds, payments = append(waiting, o.waitingFor), append(holds, string(o.holds)), append(payments, o.payment)
		// One text per order (unnest cannot take an array of arrays): the
		// values are words of the lifecycle rules, never with a comma.
		waitingAll = append(waitingAll, strings.Join(o.waitingForAll, ","))
	}
	b.Queue(`INSERT INTO `+t.Orders+` AS v (project_id, order_no, order_id, order_version, status, fulfillment_status, waiting_for,
			waiting_for_all, holds, payment, rev, updated_at)
		SELECT k.project_id, k.order_no, k.order_id, k.order_version, k.status, k.fulfillment_status, k.waiting_for,
			string_to_array(k.waiting_for_all, ','), k.holds::jsonb, k.payment, nextval('read_model_rev'), now()
		FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
			AS k(project_id, order_no, order_id, order_version, status, fulfillment_status, waiting_for, waiting_for_all, holds, payment)
		ORDER BY k.project_id, k.order_no
		ON CONFLICT (project_id, order_no) DO UPDATE SET order_id = EXCLUDED.order_id, order_version = EXCLUDED.order_version,
			status = EXCLUDED.status, fulfillment_status = EXCLUDED.fulfillment_status, waiting_for = EXCLUDED.waiting_for,
			waiting_for_all = EXCLUDED.waiting_for_all, holds = EXCLUDED.holds, payment = EXCLUDED.payment, rev = EXCLUDED.rev, updated_at = now()
		WHERE v.order_version < EXCLUDED.order_version`,
		projects, orderNos, ids, versions, statuses, fulfillments, waiting, waitingAll, holds, payments)
}

// statusRow is an order_view row as the status record needs it.
type statusRow struct {
	ref  orderRef
	rev  int64
	body []byte
}

// loadStatus reads the status records of refs from table.
func loadStatus(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, table string, refs []orderRef) ([]statusRow, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	sql, projects, orders := statusQuery(table, refs)
	rows, err := q.Query(ctx, sql, projects, orders)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanStatus)
}

// queueLoadStatus adds loadStatus to b: the records are stored in dst when
// the batch's results are read, after the batch's writes before it.
func queueLoadStatus(b *pgx.Batch, table string, refs []orderRef, dst *[]statusRow) {
	if len(refs) == 0 {
		return
	}
	sql, projects, orders := statusQuery(table, refs)
	b.Queue(sql, projects, orders).Query(func(rows pgx.Rows) error {
		var err error
		*dst, err = pgx.CollectRows(rows, scanStatus)
		return err
	})
}

func statusQuery(table string, refs []orderRef) (sql string, projects, orders []string) {
	projects = make([]string, len(refs))
	orders = make([]string, len(refs))
	for i, r := range refs {
		projects[i], orders[i] = r.projectID, r.orderNo
	}
	return `SELECT v.project_id::text, v.order_no, v.rev, v.status, v.fulfillment_status, v.invoices, v.waiting_for,
		v.waiting_for_all, v.holds, v.payment
		FROM unnest($1::uuid[], $2::text[]) AS k(project_id, order_no)
		JOIN ` + table + ` v ON v.project_id = k.project_id AND v.order_no = k.order_no`, projects, orders
}

func scanStatus(row pgx.CollectableRow) (statusRow, error) {
	var r statusRow
	m := readmodel.Row{OrderNo: r.ref.orderNo}
	if err := row.Scan(&r.ref.projectID, &r.ref.orderNo, &r.rev, &m.Status, &m.FulfillmentStatus, &m.Invoices, &m.WaitingFor,
		&m.WaitingForAll, &m.Holds, &m.Payment); err != nil {
		return r, err
	}
	m.OrderNo = r.ref.orderNo
	var err error
	r.body, err = readmodel.Encode(m)
	return r, err
}

// putRedis copies status records to Redis in one pipeline; a record never
// replaces a newer one.
func putRedis(ctx context.Context, rdb *redis.Client, rows []statusRow) error {
	if len(rows) == 0 {
		return nil
	}
	p := rdb.Pipeline()
	changes := make([]readmodel.Change, 0, len(rows))
	for _, r := range rows {
		readmodel.Put(ctx, p, r.ref.projectID, r.ref.orderNo, r.rev, r.body)
		changes = append(changes, readmodel.Change{ProjectID: r.ref.projectID, OrderNo: r.ref.orderNo, Rev: r.rev})
	}
	readmodel.PublishChanges(ctx, p, changes)
	_, err := p.Exec(ctx)
	return err
}

// canonicalUUID returns a valid UUID s in its canonical (lower-case) form.
func canonicalUUID(s string) string {
	u, err := uuid.Parse(s)
	if err != nil {
		return s
	}
	return u.String()
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}
