package command

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/catalog"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

// Review tasks a person acts on: POST /v1/tasks/{id}/recheck evaluates the
// orders a hold holds again now (its cause reported fixed: the invoicer's
// workers release them), POST /v1/tasks/{id}/dismiss resolves an
// informational task. Both are scoped to the key's project (another
// project's task is 404) and idempotent: a resolved task is answered as it
// is.

const recheckDescription = `Evaluates the orders a hold holds again now, for example after the payment provider's key got its rights ` +
	`or after a fix the service cannot see. When the project's settings or the product still show the cause (seller data, the contact's ` +
	`phone, the product's revenue recognition) it is 409 cause_not_fixed naming what is missing; otherwise the cause is reported fixed and ` +
	`202 answers the task: the invoicer evaluates each held order within seconds (invoiced, or held again) and resolves the task once it ` +
	`holds none. A task that holds nothing (informational) is 409 task_not_a_hold; a resolved task is 200 as it is (nothing to do). Idempotent.`

const dismissDescription = `Resolves an informational task (for example payment_amount_mismatch, vat_id_review, prior_year_revenue) ` +
	`with the resolution "dismissed". A hold (a task that holds orders back) is 409 task_is_a_hold: it is resolved by fixing its cause ` +
	`(or POST /v1/tasks/{id}/recheck). A resolved task is 200 as it is. Idempotent.`

// taskState is a task as recheck and dismiss see it.
type taskState struct {
	id, kind, subject, status string
}

// lockTaskTx locks the project's task id; 404 task_not_found for an unknown
// id, another project's task, or an id that is no UUID.
func lockTaskTx(ctx context.Context, tx pgx.Tx, projectID, id string) (taskState, error) {
	notFound := apperr.New(apperr.NotFound, "task_not_found", "no task %q", id)
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return taskState{}, notFound
	}
	t := taskState{id: u.String()}
	err = tx.QueryRow(ctx, `SELECT kind, subject, status FROM tasks WHERE project_id = $1 AND id = $2 FOR UPDATE`, projectID, t.id).
		Scan(&t.kind, &t.subject, &t.status)
	if errors.Is(err, pgx.ErrNoRows) {
		return taskState{}, notFound
	}
	return t, err
}

// taskResultTx reads the task's answer.
func taskResultTx(ctx context.Context, tx pgx.Tx, id string) (TaskResult, error) {
	var r TaskResult
	err := tx.QueryRow(ctx, `SELECT id::text, kind, status, resolution,
		(SELECT count(*) FROM held_orders h WHERE h.task_id = t.id AND h.released_at IS NULL) FROM tasks t WHERE id = $1`, id).
		Scan(&r.ID, &r.Type, &r.Status, &r.Resolution, &r.HeldOrders)
	return r, err
}

// decideRecheck decides a recheck of a task of kind in status whose cause
// still misses what missing names (empty: fixed, or not to be seen from
// the settings): enqueue reports the cause fixed.
func decideRecheck(kind, status string, missing []string) (enqueue bool, err error) {
	switch {
	case status == "resolved":
		return false, nil
	case !orders.IsHold(kind):
		return false, apperr.New(apperr.Conflict, "task_not_a_hold",
			"a %s task holds no order back: nothing to recheck (POST /v1/tasks/{id}/dismiss resolves it)", kind)
	case len(missing) > 0:
		return false, apperr.New(apperr.Conflict, "cause_not_fixed",
			"the cause of this %s task is not fixed yet: %s missing", kind, strings.Join(missing, ", "))
	}
	return true, nil
}

// causeMissingTx returns what the task's cause still misses, as far as
// the project's settings or the product show it.
func causeMissingTx(ctx context.Context, tx pgx.Tx, projectID string, t taskState) ([]string, error) {
	switch {
	case t.subject == project.SharedSubject && (t.kind == project.CauseSellerData || t.kind == project.CauseContactPhone):
		p, err := project.Get(ctx, tx, projectID)
		if err != nil {
			return nil, err
		}
		if t.kind == project.CauseSellerData {
			return p.Settings.MissingSellerData(false), nil
		}
		if p.Settings.ContactPhone == "" {
			return []string{"contactPhone"}, nil
		}
	case t.kind == orders.HoldRevenueRecognition && strings.HasPrefix(t.subject, catalog.HoldSubject("")):
		var name string
		var set bool
		err := tx.QueryRow(ctx, `SELECT coalesce(external_id, id::text), revenue_recognition IS NOT NULL FROM products
			WHERE project_id = $1 AND id::text = $2`, projectID, strings.TrimPrefix(t.subject, catalog.HoldSubject(""))).Scan(&name, &set)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		if err == nil && !set {
			return []string{"the revenue recognition of product " + name + " (PUT /v1/products/{productId})"}, nil
		}
	}
	return nil, nil
}

// RecheckTask reports the cause of the project's hold task id fixed (its
// held orders are evaluated again) unless the settings still show it; it
// returns the task and whether a re-evaluation was enqueued.
func (s *Service) RecheckTask(ctx context.Context, projectID, id string) (res TaskResult, enqueued bool, err error) {
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := lockTaskTx(ctx, tx, projectID, id)
		if err != nil {
			return err
		}
		var missing []string
		if t.status == "open" {
			if missing, err = causeMissingTx(ctx, tx, projectID, t); err != nil {
				return err
			}
		}
		if enqueued, err = decideRecheck(t.kind, t.status, missing); err != nil {
			return err
		}
		if enqueued {
			if err := orders.ReportFixedTx(ctx, tx, projectID, t.id, "recheck requested"); err != nil {
				return err
			}
		}
		res, err = taskResultTx(ctx, tx, t.id)
		return err
	})
	return res, enqueued, err
}

// DismissTask resolves the project's informational task id as dismissed;
// a hold is refused, a resolved task answered as it is.
func (s *Service) DismissTask(ctx context.Context, projectID, id string) (res TaskResult, err error) {
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := lockTaskTx(ctx, tx, projectID, id)
		if err != nil {
			return err
		}
		if t.status == "open" {
			if orders.IsHold(t.kind) {
				return apperr.New(apperr.Conflict, "task_is_a_hold",
					"a %s task holds orders back and is resolved when its cause is fixed (POST /v1/tasks/{id}/recheck), not dismissed", t.kind)
			}
			if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'resolved', resolved_at = now(), resolution = 'dismissed'
				WHERE id = $1 AND status = 'open'`, t.id); err != nil {
				return err
			}
		}
		res, err = taskResultTx(ctx, tx, t.id)
		return err
	})
	return res, err
}
