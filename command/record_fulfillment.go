package command

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
// shipping, a report that would move the date of supply is 409
// order_already_invoiced. Every report is kept; a report that changes the
// order publishes order.fulfilled or order.fulfillment_updated.

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
	if in.OrderNo, err = o.str("orderNo", true); err != nil {
		return in, err
	}
	if in.Status, err = o.str("status", false); err != nil {
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
	if in.TrackingNumber, err = o.str("trackingNumber", false); err != nil {
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
	fp := in.fingerprint()
	var resp response
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, lockKey(projectID, endpointFulfillments, key)).Scan(&locked); err != nil {
			return err
		}
		if !locked {
			return errInProgress()
		}
		var prevHash, prevBody []byte
		var prevStatus int16
		err := tx.QueryRow(ctx, `SELECT request_hash, response_status, response_body FROM idempotency_keys
WHERE project_id = $1 AND endpoint = $2 AND key = $3`, projectID, endpointFulfillments, key).Scan(&prevHash, &prevStatus, &prevBody)
		switch {
		case err == nil:
			if string(prevHash) != string(fp) {
				return errKeyReused()
			}
			resp = response{status: int(prevStatus), body: prevBody, replayed: true}
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}

		o, err := lockOrder(ctx, tx, projectID, "order_no", in.OrderNo)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.New(apperr.NotFound, "order_not_found", "no order %q in this project", in.OrderNo)
		}
		if err != nil {
			return err
		}
		row, requiresShipping := &o.orderRow, o.requiresShipping

		shippedAt, tracking := row.shippedAt, row.trackingNumber
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
			case row.fulfillmentStatus == Fulfilled && row.suppliedAt != nil:
				suppliedAt = row.suppliedAt
			default:
				t := receivedAt.UTC().Truncate(time.Microsecond)
				suppliedAt = &t
			}
		}
		if row.status == "invoiced" && requiresShipping && !sameTime(suppliedAt, row.suppliedAt) {
			return apperr.New(apperr.Conflict, "order_already_invoiced",
				"order %s is invoiced; its date of supply cannot change", in.OrderNo)
		}
		changed := in.Status != row.fulfillmentStatus || !sameTime(shippedAt, row.shippedAt) ||
			!sameTime(suppliedAt, row.suppliedAt) || (tracking != nil && (row.trackingNumber == nil || *tracking != *row.trackingNumber))

		if _, err := tx.Exec(ctx, `INSERT INTO fulfillments (id, project_id, order_id, status, shipped_at, tracking_number, received_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, uuid.Must(uuid.NewV7()).String(), projectID, row.id, in.Status, in.ShippedAt,
			nullable(in.TrackingNumber), receivedAt); err != nil {
			return err
		}
		if changed {
			err := tx.QueryRow(ctx, `UPDATE orders SET fulfillment_status = $2, shipped_at = $3, supplied_at = $4,
  tracking_number = $5, version = version + 1, updated_at = now()
WHERE id = $1 RETURNING version, updated_at`, row.id, in.Status, shippedAt, suppliedAt, tracking).Scan(&row.version, &row.updatedAt)
			if err != nil {
				return err
			}
			row.fulfillmentStatus, row.shippedAt, row.suppliedAt, row.trackingNumber = in.Status, shippedAt, suppliedAt, tracking
			typ := event.OrderFulfillmentUpdated
			if in.Status == Fulfilled {
				typ = event.OrderFulfilled
			}
			if err := o.enqueueState(ctx, tx, projectID, typ); err != nil {
				return err
			}
		}

		res := FulfillmentResult{OrderNo: in.OrderNo, FulfillmentStatus: row.fulfillmentStatus}
		if row.fulfillmentStatus == Fulfilled && row.suppliedAt != nil {
			s := row.suppliedAt.UTC().Format(time.RFC3339Nano)
			res.ShippedAt = &s
		}
		body, err := renderData(reqID, res)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertIdempotencySQL, projectID, endpointFulfillments, key, fp, 200, body); err != nil {
			return err
		}
		resp = response{status: 200, body: body}
		return nil
	})
	if err != nil {
		return response{}, err
	}
	return resp, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
