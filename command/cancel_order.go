package command

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/store"
)

// CancelOrder: POST /v1/orders/{orderNo}/cancel. The order becomes
// cancelled for good: it is never invoiced, and every document it already
// has gets a cancellation (issued by the invoicer, like a correction). A
// second call is an idempotent 200, with any Idempotency-Key. A cancelled
// order's invoice-relevant content cannot change any more (POST /v1/orders:
// 409 order_cancelled).

const cancelDescription = `Cancels the order: it is never invoiced, and every document it already has (invoice, gift-card document) ` +
	`gets a cancellation (Stornorechnung, type code 381, referencing the original's number and date), issued and archived asynchronously ` +
	`like any invoice and listed in the order's invoices[]. An invoice that credit notes of partial refunds corrected already ` +
	`is cancelled by one more credit note (type credit_note) over what they left, or by none when they credited it all. ` +
	`Cancelling a cancelled order again is 200 with the same data. ` +
	`Unknown orderNo is 404 order_not_found.

` + idempotencyDescription

// cancelOrder marks the order cancelled, with a correction pending when it
// has documents to cancel, and publishes its state.
func (s *Service) cancelOrder(ctx context.Context, projectID, key, reqID, orderNo string) (response, error) {
	fingerprint := sha256.Sum256([]byte(orderNo))
	var resp response
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		resp, err = keyedTx(ctx, tx, projectID, endpointCancel, key, fingerprint[:], func() (response, error) {
			o, err := orders.Lock(ctx, tx, projectID, "order_no", orderNo)
			if errors.Is(err, pgx.ErrNoRows) {
				return response{}, apperr.New(apperr.NotFound, "order_not_found", "no order %q in this project", orderNo)
			}
			if err != nil {
				return response{}, err
			}
			if _, err := cancelTx(ctx, tx, projectID, &o, "order cancelled"); err != nil {
				return response{}, err
			}
			body, err := renderData(reqID, OrderResult{ID: o.ID, OrderNo: o.OrderNo, Status: o.Status})
			if err != nil {
				return response{}, err
			}
			return response{status: http.StatusOK, body: body}, nil
		})
		return err
	})
	return resp, err
}

// cancelTx marks the locked order cancelled in tx, with a correction pending
// when it has documents to cancel, resolves its hold tasks with reason, and
// publishes its state. It returns false when the order was cancelled
// already (nothing changes).
func cancelTx(ctx context.Context, tx pgx.Tx, projectID string, o *orders.Locked, reason string) (bool, error) {
	if o.Status == "cancelled" {
		return false, nil
	}
	var documents bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM invoices WHERE order_id = $1)`, o.ID).Scan(&documents); err != nil {
		return false, err
	}
	err := tx.QueryRow(ctx, `UPDATE orders SET status = 'cancelled', correction_pending = correction_pending OR $2,
			holds = '[]', version = version + 1, updated_at = now()
		WHERE id = $1 RETURNING version, updated_at, correction_pending`, o.ID, documents).
		Scan(&o.Version, &o.UpdatedAt, &o.CorrectionPending)
	if err != nil {
		return false, err
	}
	o.Status, o.Holds = "cancelled", nil
	if err := orders.ResolveTasks(ctx, tx, projectID, orders.HoldKinds, o.OrderNo, reason); err != nil {
		return false, err
	}
	if err := orders.ReleaseHeldTx(ctx, tx, o.ID); err != nil { // a shared task holds it no more
		return false, err
	}
	return true, o.EnqueueState(ctx, tx, projectID, event.OrderUpdated)
}
