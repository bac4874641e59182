package command

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/store"
)

// RecordFulfillment: POST /v1/fulfillments. The order must exist in the key's
// project (404 order_not_found). status is unfulfilled, partial or fulfilled
// (default fulfilled: the complete shipment is reported). fulfilled sets the
// date of supply to shippedAt, or to the receipt time when shippedAt is
// absent (a repeated fulfilled report without shippedAt keeps the date it
// set); partial and unfulfilled clear it. On an invoiced order that requires
// shipping, a report that moves the date of supply is accepted and corrects
// the invoice: the order goes back to created with a correction pending.
// Every report is kept; a report that changes the order publishes
// order.fulfilled or order.fulfillment_updated.

// Fulfillment statuses.
const (
	Unfulfilled = "unfulfilled"
	Partial     = "partial"
	Fulfilled   = "fulfilled"
)

type fulfillmentInput struct {
	OrderNo        string     `json:"orderNo"`
	Status         string     `json:"status"`
	ShippedAt      *time.Time `json:"shippedAt"`
	TrackingNumber string     `json:"trackingNumber"`
}

func parseFulfillment(body []byte) (fulfillmentInput, error) {
	o, err := decodeObject(body)
	if err != nil {
		return fulfillmentInput{}, err
	}
	var in fulfillmentInput
	if in.OrderNo, err = o.id("orderNo", true); err != nil {
		return in, err
	}
	if in.Status, err = o.text("status", false, maxIDLength); err != nil {
		return in, err
	}
	switch in.Status {
	case "":
		in.Status = Fulfilled
	case Unfulfilled, Partial, Fulfilled:
	default:
		return in, apperr.Field("status", "status must be one of unfulfilled, partial, fulfilled")
	}
	shipped, err := o.str("shippedAt", false)
	if err != nil {
		return in, err
	}
	if shipped != "" {
		t, ok := dateTime(shipped)
		if !ok {
			return in, apperr.Field("shippedAt", "shippedAt must be an ISO 8601 date-time with offset, for example 2026-03-01T10:15:00Z")
		}
		t = t.UTC().Truncate(time.Microsecond)
		in.ShippedAt = &t
	}
	if in.TrackingNumber, err = o.id("trackingNumber", false); err != nil {
		return in, err
	}
	return in, nil
}

func (in fulfillmentInput) fingerprint() []byte {
	b, _ := json.Marshal(in)
	h := sha256.Sum256(b)
	return h[:]
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// recordFulfillment applies the report received at receivedAt.
func (s *Service) recordFulfillment(ctx context.Context, projectID, key, reqID string, in fulfillmentInput, receivedAt time.Time) (response, error) {
	var resp response
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		resp, err = keyedTx(ctx, tx, projectID, endpointFulfillments, key, in.fingerprint(), func() (response, error) {
			return s.fulfillTx(ctx, tx, projectID, reqID, in, receivedAt)
		})
		return err
	})
	if err != nil {
		return response{}, err
	}
	return resp, nil
}

// fulfillTx records the report and changes the order in tx.
func (s *Service) fulfillTx(ctx context.Context, tx pgx.Tx, projectID, reqID string, in fulfillmentInput, receivedAt time.Time) (response, error) {
	o, err := orders.Lock(ctx, tx, projectID, "order_no", in.OrderNo)
	if errors.Is(err, pgx.ErrNoRows) {
		return response{}, apperr.New(apperr.NotFound, "order_not_found", "no order %q in this project", in.OrderNo)
	}
	if err != nil {
		return response{}, err
	}
	row := &o.Row
	shippedAt, tracking := row.ShippedAt, row.TrackingNumber
	if in.ShippedAt != nil {
		shippedAt = in.ShippedAt
	}
	if in.TrackingNumber != "" {
		tracking = &in.TrackingNumber
	}
	var suppliedAt *time.Time
	if in.Status == Fulfilled {
		switch {
		case in.ShippedAt != nil:
			suppliedAt = in.ShippedAt
		case row.FulfillmentStatus == Fulfilled && row.SuppliedAt != nil:
			suppliedAt = row.SuppliedAt
		default:
			t := receivedAt.UTC().Truncate(time.Microsecond)
			suppliedAt = &t
		}
	}
	// The invoice states the date of supply (§14 Abs. 4 Nr. 6 UStG): a
	// report that moves it corrects the invoice (cancelled and issued
	// again with the new date when the order is due).
	status, correcting := row.Status, row.CorrectionPending
	if row.Status == "invoiced" && o.RequiresShipping && !sameTime(suppliedAt, row.SuppliedAt) {
		status, correcting = "created", true
	}
	changed := in.Status != row.FulfillmentStatus || !sameTime(shippedAt, row.ShippedAt) ||
		!sameTime(suppliedAt, row.SuppliedAt) || (tracking != nil && (row.TrackingNumber == nil || *tracking != *row.TrackingNumber))

	if _, err := tx.Exec(ctx, `INSERT INTO fulfillments (id, project_id, order_id, status, shipped_at, tracking_number, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, uuid.Must(uuid.NewV7()).String(), projectID, row.ID, in.Status, in.ShippedAt,
		orders.Nullable(in.TrackingNumber), receivedAt); err != nil {
		return response{}, err
	}
	if changed {
		err := tx.QueryRow(ctx, `UPDATE orders SET fulfillment_status = $2, shipped_at = $3, supplied_at = $4,
  tracking_number = $5, status = $6, correction_pending = $7, version = version + 1, updated_at = now()
WHERE id = $1 RETURNING version, updated_at`, row.ID, in.Status, shippedAt, suppliedAt, tracking, status, correcting).Scan(&row.Version, &row.UpdatedAt)
		if err != nil {
			return response{}, err
		}
		row.FulfillmentStatus, row.ShippedAt, row.SuppliedAt, row.TrackingNumber = in.Status, shippedAt, suppliedAt, tracking
		row.Status, row.CorrectionPending = status, correcting
		typ := event.OrderFulfillmentUpdated
		if in.Status == Fulfilled {
			typ = event.OrderFulfilled
		}
		if err := o.EnqueueState(ctx, tx, projectID, typ); err != nil {
			return response{}, err
		}
	}

	res := FulfillmentResult{OrderNo: in.OrderNo, FulfillmentStatus: row.FulfillmentStatus}
	if row.FulfillmentStatus == Fulfilled && row.SuppliedAt != nil {
		s := row.SuppliedAt.UTC().Format(time.RFC3339Nano)
		res.ShippedAt = &s
	}
	body, err := renderData(reqID, res)
	if err != nil {
		return response{}, err
	}
	return response{status: 200, body: body}, nil
}
