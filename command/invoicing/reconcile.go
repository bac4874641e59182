package invoicing

import (
	"context"
	"log/slog"
	"time"
)

// The invoicer's reconciler: no order depends on a later event arriving.
// (The retry table has workers of its own: retries.go; the releases of
// causes reported fixed too: releases.go.) Every ReconcileEvery it
//   - sweeps the held orders (ReleaseHolds), the safety net of the
//     releases that follow a cause reported fixed;
//   - archives documents issued but not archived a minute later, and failed
//     documents whose order has no open dead letter (left from an earlier
//     failure) at once, each on its own backoff (archive_repair.go).

// sweepPage is how many tasks one round of the sweep probes, one held order
// of each, not checked for ReconcileEvery.
const sweepPage = 200

// reconcile runs the reconciler every ReconcileEvery until ctx ends.
func (iv *Invoicer) reconcile(ctx context.Context) {
	t := time.NewTicker(iv.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for name, step := range map[string]func(context.Context) error{
			"held orders": iv.ReleaseHolds, "unarchived documents": iv.ArchiveStuck, "backlog metrics": iv.measureBacklog,
		} {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("invoicer: reconciling "+name, "err", err)
			}
		}
	}
}

// ReleaseHolds is the safety net of the releases (releases.go): it
// probes up to sweepPage tasks with one held order each that was not
// checked for ReconcileEvery (the least recently checked of the task),
// tasks least recently probed first, each claimed FOR UPDATE SKIP LOCKED so
// that replicas share the sweep. It never restarts from the beginning: an
// order checked (also one that could not be read, which is skipped, logged
// and counted) goes to the end of the line. A probe whose cause has cleared
// without being reported (the provider key got its rights) is invoiced and
// reports its task's cause fixed, so the task's other orders follow at
// pipeline speed; tasks left holding no order are resolved.
func (iv *Invoicer) ReleaseHolds(ctx context.Context) error {
	held, err := iv.svc.claimHeld(ctx, claimStale, sweepPage, iv.ReconcileEvery)
	if err != nil {
		return err
	}
	for _, h := range held {
		iv.evaluateHeld(ctx, h, true)
	}
	return iv.svc.resolveReleased(ctx, false)
}
