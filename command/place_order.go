package command

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/catalog"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/store"
)

// PlaceOrder: POST /v1/orders. Orders are idempotent by orderNo: a new orderNo
// creates the order (201), a known one updates it under the same id (200),
// or leaves it unchanged (200, no event). An issued invoice is never changed
// (GoBD): a change of an invoiced order's invoice-relevant content puts it
// back to created with a correction pending, and the invoicer cancels its
// documents and issues new ones when it is due; a change of only
// financialStatus or email is a plain update. A cancelled order's
// invoice-relevant content is final: a change is 409 order_cancelled. A
// paymentRef used by another order of the project is 409
// payment_ref_conflict.
//
// The hot path, a new orderNo, is one statement and one round trip, shared
// with the other new orders arriving meanwhile (create_batch.go): it takes
// the idempotency key's advisory lock, reads a stored response, and inserts
// the order, its order.created outbox row and the idempotency record, all in
// the statement's implicit transaction (the event and the response are built
// beforehand for the new id). When the orderNo exists it does nothing and the
// update path runs: one transaction in two pipelined round trips,
//  1. BEGIN + a statement that takes the lock, reads a stored response and
//     upserts the order;
//  2. the outbox event + the idempotency record + COMMIT.

// orderHashes are SHA-256 over the normalised content, and over its
// invoice-relevant part: the content as if financialStatus and email were
// empty, which is the content JSON without its last members.
func orderHashes(c event.OrderContent) (content []byte, contentHash, invoiceHash []byte, err error) {
	content, err = json.Marshal(c)
	if err != nil {
		return nil, nil, nil, err
	}
	h := sha256.Sum256(content)
	tail, err := event.NonInvoiceTail(c)
	if err != nil {
		return nil, nil, nil, err
	}
	ih := sha256.New()
	if len(tail) == 0 {
		ih.Write(content)
	} else {
		ih.Write(content[:len(content)-len(tail)-2]) // without ",<tail>}"
		ih.Write([]byte{'}'})
	}
	return content, h[:], ih.Sum(nil), nil
}

// bindProducts sets every line's catalogue product.
func (s *Service) bindProducts(ctx context.Context, projectID string, c *event.OrderContent) error {
	lines := make([]catalog.Line, len(c.Items))
	for i, it := range c.Items {
		lines[i] = catalog.Line{ProductID: it.ProductID, SKU: it.SKU, Name: it.Name}
	}
	ids, err := s.catalog.Resolve(ctx, projectID, lines)
	if err != nil {
		return err
	}
	for i := range c.Items {
		c.Items[i].CatalogProductID = ids[i]
	}
	return nil
}

const upsertOrderSQL = `WITH lk AS (SELECT pg_try_advisory_xact_lock($1::bigint) AS ok),
prev AS (
  SELECT request_hash, response_status, response_body FROM idempotency_keys
  WHERE project_id = $2 AND endpoint = $3 AND key = $4),
up AS (
  INSERT INTO orders AS o (id, project_id, order_no, payment_ref, requires_shipping, content, content_hash, invoice_hash)
  SELECT $5, $2, $6, $7, $8, $9, $10, $11 FROM lk WHERE lk.ok AND NOT EXISTS (SELECT 1 FROM prev)
  ON CONFLICT ON CONSTRAINT orders_order_no_key DO UPDATE SET
    payment_ref = EXCLUDED.payment_ref, requires_shipping = EXCLUDED.requires_shipping,
    content = EXCLUDED.content, content_hash = EXCLUDED.content_hash, invoice_hash = EXCLUDED.invoice_hash,
    status = CASE WHEN o.status = 'invoiced' AND o.invoice_hash <> EXCLUDED.invoice_hash THEN 'created' ELSE o.status END,
    correction_pending = o.correction_pending OR (o.status = 'invoiced' AND o.invoice_hash <> EXCLUDED.invoice_hash),
    version = o.version + 1, updated_at = now()
  WHERE o.content_hash <> EXCLUDED.content_hash AND (o.status <> 'cancelled' OR o.invoice_hash = EXCLUDED.invoice_hash)
  RETURNING o.id::text, o.version, o.status, o.fulfillment_status, o.shipped_at, o.supplied_at,
    o.tracking_number, o.created_at, o.updated_at, o.invoiced_at, o.correction_pending, o.refund_pending_cents, o.holds, o.paid_at, (o.xmax = 0) AS inserted)
SELECT lk.ok, prev.request_hash, prev.response_status, prev.response_body,
  up.id, up.version, up.status, up.fulfillment_status, up.shipped_at, up.supplied_at,
  up.tracking_number, up.created_at, up.updated_at, up.invoiced_at, up.correction_pending, up.refund_pending_cents, up.holds, up.paid_at, up.inserted
FROM lk LEFT JOIN prev ON true LEFT JOIN up ON true`

const insertIdempotencySQL = `INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status, response_body)
VALUES ($1, $2, $3, $4, $5, $6)`

// errRetry asks placeOrder to run the transaction again: a concurrent request
// with the same key committed between our snapshot and our lock.
var errRetry = errors.New("retry")

// placeOrder stores the order and returns the response to send. A new
// orderNo is created in a batch with other new orders (create_batch.go);
// when its batch fails, alone on the one-statement path.
func (s *Service) placeOrder(ctx context.Context, projectID, key, reqID string, c event.OrderContent) (response, error) {
	if err := s.bindProducts(ctx, projectID, &c); err != nil {
		return response{}, err
	}
	content, contentHash, invoiceHash, err := orderHashes(c)
	if err != nil {
		return response{}, err
	}
	a, err := newCreateArgs(ctx, projectID, key, reqID, c, content, contentHash, invoiceHash)
	if err != nil {
		return response{}, err
	}
	r, err := s.creates.create(ctx, a)
	if err != nil {
		return response{}, err
	}
	if !r.fallback {
		resp, done, err := a.answer(r)
		if err != nil || done {
			return resp, err
		}
	}
	conn, err := store.Acquire(ctx, s.pool)
	if err != nil {
		return response{}, err
	}
	defer conn.Release()
	if r.fallback {
		resp, done, err := s.createOrder(ctx, conn, a)
		if err != nil && !errors.Is(err, errRetry) {
			return response{}, err
		}
		if done {
			return resp, nil
		}
	}
	for attempt := 0; ; attempt++ {
		resp, err := s.placeOrderTx(ctx, conn, projectID, key, reqID, c, content, contentHash, invoiceHash)
		if err == nil {
			return resp, nil
		}
		rollback(ctx, conn)
		if errors.Is(err, errRetry) && attempt < 3 {
			continue
		}
		if errors.Is(err, errRetry) {
			return response{}, errInProgress()
		}
		return response{}, err
	}
}

// rollback ends an open transaction on conn; a connection it cannot clean
// is closed (the pool then discards it).
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = conn.Conn().Close(rctx)
	}
}

const createOrderSQL = `WITH lk AS (SELECT pg_try_advisory_xact_lock($1::bigint) AS ok),
prev AS (
  SELECT request_hash, response_status, response_body FROM idempotency_keys
  WHERE project_id = $2 AND endpoint = $3 AND key = $4),
ins AS (
  INSERT INTO orders (id, project_id, order_no, payment_ref, requires_shipping, content, content_hash, invoice_hash, created_at, updated_at)
  SELECT $5, $2, $6, $7, $8, $9, $10, $11, $12, $12 FROM lk WHERE lk.ok AND NOT EXISTS (SELECT 1 FROM prev)
  ON CONFLICT ON CONSTRAINT orders_order_no_key DO NOTHING
  RETURNING id),
ob AS (
  INSERT INTO outbox (` + outbox.Columns + `) SELECT $13, $14, $15, $16, $17, $18, $20, $21 FROM ins),
idem AS (
  INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status, response_body)
  SELECT $2, $3, $4, $10, 201, $19 FROM ins)
SELECT lk.ok, prev.request_hash, prev.response_status, prev.response_body, EXISTS (SELECT 1 FROM ins)
FROM lk LEFT JOIN prev ON true`

// createArgs is everything the creation of a new order writes: the order
// row, its order.created event and its 201 response, built beforehand for
// a fresh id.
type createArgs struct {
	lockKey          int64
	projectID, key   string
	id, orderNo      string
	paymentRef       *string
	requiresShipping bool
	content          []byte
	contentHash      []byte
	invoiceHash      []byte
	at               time.Time
	event            outbox.Row
	body             []byte
}

func newCreateArgs(ctx context.Context, projectID, key, reqID string, c event.OrderContent, content, contentHash, invoiceHash []byte) (createArgs, error) {
	var paymentRef *string
	if c.PaymentRef != "" {
		paymentRef = &c.PaymentRef
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	row := orders.Row{ID: uuid.Must(uuid.NewV7()).String(), Version: 1, Status: "created", FulfillmentStatus: Unfulfilled, CreatedAt: now, UpdatedAt: now}
	data, err := event.OrderData(row.State(projectID, c), content)
	if err != nil {
		return createArgs{}, err
	}
	ev, err := event.New(event.OrderCreated, projectID, "order", row.ID, c.OrderNo, 1, now, data)
	if err != nil {
		return createArgs{}, err
	}
	ob, err := outbox.RowOf(ctx, ev)
	if err != nil {
		return createArgs{}, err
	}
	body, err := renderData(reqID, OrderResult{ID: row.ID, OrderNo: c.OrderNo, Status: row.Status})
	if err != nil {
		return createArgs{}, err
	}
	return createArgs{
		lockKey: lockKey(projectID, endpointOrders, key), projectID: projectID, key: key,
		id: row.ID, orderNo: c.OrderNo, paymentRef: paymentRef, requiresShipping: c.RequiresShipping,
		content: content, contentHash: contentHash, invoiceHash: invoiceHash, at: now, event: ob, body: body,
	}, nil
}

// uniqueKeys are what no two orders of one batch may share.
func (a createArgs) uniqueKeys() []string {
	ks := []string{"key\x00" + a.projectID + "\x00" + a.key, "orderNo\x00" + a.projectID + "\x00" + a.orderNo}
	if a.paymentRef != nil {
		ks = append(ks, "paymentRef\x00"+a.projectID+"\x00"+*a.paymentRef)
	}
	return ks
}

// answer turns the statement's result into the response. done is false
// when the orderNo exists (nothing was written): the update path decides.
func (a createArgs) answer(r createResult) (response, bool, error) {
	switch {
	case !r.locked:
		return response{}, false, errInProgress()
	case r.prevStatus != nil:
		if string(r.prevHash) != string(a.contentHash) {
			return response{}, false, errKeyReused()
		}
		return response{status: int(*r.prevStatus), body: r.prevBody, replayed: true}, true, nil
	case r.inserted:
		return response{status: 201, body: a.body}, true, nil
	}
	return response{}, false, nil
}

// createOrder is the one-statement path for one new orderNo, for orders
// whose batch failed: it answers the errors a batch cannot attribute.
func (s *Service) createOrder(ctx context.Context, conn *pgxpool.Conn, a createArgs) (response, bool, error) {
	var r createResult
	err := conn.QueryRow(ctx, createOrderSQL, a.lockKey, a.projectID, endpointOrders, a.key,
		a.id, a.orderNo, a.paymentRef, a.requiresShipping, a.content, a.contentHash, a.invoiceHash, a.at,
		a.event.ProjectID, a.event.Topic, a.event.Key, a.event.EventID, a.event.Type, a.event.Payload, a.body,
		outbox.Null(a.event.Traceparent), outbox.Null(a.event.Tracestate)).
		Scan(&r.locked, &r.prevHash, &r.prevStatus, &r.prevBody, &r.inserted)
	switch {
	case store.IsUniqueViolation(err, "orders_payment_ref_key"):
		// ON CONFLICT covers only the orderNo: a concurrent delivery of the
		// same order can trip the paymentRef index first. Then it is this
		// very order, and the update path answers for it.
		var same bool
		if qerr := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orders WHERE project_id = $1 AND order_no = $2 AND payment_ref = $3)`,
			a.projectID, a.orderNo, a.paymentRef).Scan(&same); qerr == nil && same {
			return response{}, false, nil
		}
		return response{}, false, apperr.New(apperr.Conflict, "payment_ref_conflict", "another order of this project has paymentRef %q", *a.paymentRef)
	case store.IsUniqueViolation(err, "idempotency_keys_pkey"):
		return response{}, false, errRetry // a request with this key committed meanwhile
	case err != nil:
		return response{}, false, fmt.Errorf("place order %s: %w", a.orderNo, err)
	}
	return a.answer(r)
}

func (s *Service) placeOrderTx(ctx context.Context, conn *pgxpool.Conn, projectID, key, reqID string,
	c event.OrderContent, content, contentHash, invoiceHash []byte) (response, error) {
	var paymentRef *string
	if c.PaymentRef != "" {
		paymentRef = &c.PaymentRef
	}
	newID := uuid.Must(uuid.NewV7()).String()

	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(upsertOrderSQL, lockKey(projectID, endpointOrders, key), projectID, endpointOrders, key,
		newID, c.OrderNo, paymentRef, c.RequiresShipping, content, contentHash, invoiceHash)
	br := conn.SendBatch(ctx, b)
	var (
		locked     bool
		prevHash   []byte
		prevStatus *int16
		prevBody   []byte
		row        orders.Row
		id         *string
		version    *int64
		status     *string
		fstatus    *string
		createdAt  *time.Time
		updatedAt  *time.Time
		correcting *bool
		refunding  *int64
		inserted   *bool
	)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&locked, &prevHash, &prevStatus, &prevBody,
			&id, &version, &status, &fstatus, &row.ShippedAt, &row.SuppliedAt,
			&row.TrackingNumber, &createdAt, &updatedAt, &row.InvoicedAt, &correcting, &refunding, &row.Holds, &row.PaidAt, &inserted)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if store.IsUniqueViolation(err, "orders_payment_ref_key") {
			return response{}, apperr.New(apperr.Conflict, "payment_ref_conflict", "another order of this project has paymentRef %q", c.PaymentRef)
		}
		return response{}, fmt.Errorf("place order %s: %w", c.OrderNo, err)
	}
	switch {
	case !locked:
		return response{}, errInProgress()
	case prevStatus != nil:
		rollback(ctx, conn)
		if string(prevHash) != string(contentHash) {
			return response{}, errKeyReused()
		}
		return response{status: int(*prevStatus), body: prevBody, replayed: true}, nil
	}

	var ev *event.Event
	var httpStatus int
	if id != nil {
		row.ID, row.Version, row.Status, row.FulfillmentStatus = *id, *version, *status, *fstatus
		row.CreatedAt, row.UpdatedAt, row.CorrectionPending, row.RefundPending = *createdAt, *updatedAt, *correcting, *refunding
		typ, st := event.OrderUpdated, 200
		if *inserted {
			typ, st = event.OrderCreated, 201
		}
		data, err := event.OrderData(row.State(projectID, c), content)
		if err != nil {
			return response{}, err
		}
		e, err := event.New(typ, projectID, "order", row.ID, c.OrderNo, row.Version, row.UpdatedAt, data)
		if err != nil {
			return response{}, err
		}
		ev, httpStatus = &e, st
	} else {
		// Not changed: unchanged content, or a cancelled order whose
		// invoice-relevant content would change. The upsert holds the row lock.
		var sameContent, sameInvoice bool
		err := conn.QueryRow(ctx, `SELECT id::text, status, content_hash = $3, invoice_hash = $4
FROM orders WHERE project_id = $1 AND order_no = $2`, projectID, c.OrderNo, contentHash, invoiceHash).
			Scan(&row.ID, &row.Status, &sameContent, &sameInvoice)
		if err != nil {
			return response{}, fmt.Errorf("place order %s: read unchanged order: %w", c.OrderNo, err)
		}
		if !sameContent {
			return response{}, apperr.New(apperr.Conflict, "order_cancelled",
				"order %s is cancelled; its invoice-relevant content cannot change any more", c.OrderNo)
		}
		httpStatus = 200
	}

	body, err := renderData(reqID, OrderResult{ID: row.ID, OrderNo: c.OrderNo, Status: row.Status})
	if err != nil {
		return response{}, err
	}
	b = &pgx.Batch{}
	if ev != nil {
		if err := outbox.Queue(ctx, b, *ev); err != nil {
			return response{}, err
		}
	}
	b.Queue(insertIdempotencySQL, projectID, endpointOrders, key, contentHash, httpStatus, body)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		if store.IsUniqueViolation(err, "idempotency_keys_pkey") {
			return response{}, errRetry
		}
		return response{}, fmt.Errorf("place order %s: commit: %w", c.OrderNo, err)
	}
	return response{status: httpStatus, body: body}, nil
}
