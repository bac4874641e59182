package invoicing

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the invoicer's failures and retries (RegisterMetrics).
type metrics struct {
	failed    *prometheus.CounterVec // events whose try failed, by outcome: retry, dead_letter
	retried   *prometheus.CounterVec // retries, by outcome: handled, failed
	refused   *prometheus.CounterVec // calls refused by an open breaker, by dependency
	waiting   *prometheus.GaugeVec   // open items of the retry table, by state: retrying, dead_letter
	repairing prometheus.Gauge       // documents the archive repair could not archive yet
}

func newMetrics() *metrics {
	return &metrics{
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2i_invoicer_failed_events_total",
			Help: "Order events whose one try failed, by outcome: retry (to the retry table) or dead_letter (with an invoicing_failed task)."},
			[]string{"outcome"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2i_invoicer_retries_total",
			Help: "Retries of the retry table's items, by outcome: handled or failed."}, []string{"outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "o2i_invoicer_breaker_refusals_total",
			Help: "Calls to a dependency refused at once because its breaker (per dependency and project) is open."}, []string{"dependency"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "o2i_invoicer_retry_items",
			Help: "Open items of the invoicer's retry table, by state: retrying (no task yet) or dead_letter (task open)."}, []string{"state"}),
		repairing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "o2i_invoicer_archive_repairs",
			Help: "Documents the archive repair tried and could not archive yet (each waiting its own backoff)."}),
	}
}

// RegisterMetrics registers the invoicer's metrics on reg.
func (iv *Invoicer) RegisterMetrics(reg prometheus.Registerer) error {
	m := iv.svc.deps.metrics
	cs := []prometheus.Collector{m.failed, m.retried, m.refused, m.waiting, m.repairing, iv.svc.issues.sizes, iv.svc.issues.fallbacks}
	cs = append(append(cs, iv.svc.marks.Collectors()...), iv.svc.sent.Collectors()...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// measureBacklog sets the gauges of the retry table and the archive repair
// (the reconciler calls it every round).
func (iv *Invoicer) measureBacklog(ctx context.Context) error {
	var retrying, dead, repairing float64
	err := iv.svc.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM invoicing_dead_letters WHERE resolved_at IS NULL AND task_opened_at IS NULL),
			(SELECT count(*) FROM invoicing_dead_letters WHERE resolved_at IS NULL AND task_opened_at IS NOT NULL),
			(SELECT count(*) FROM archive_repairs WHERE attempts > 0)`).Scan(&retrying, &dead, &repairing)
	if err != nil {
		return err
	}
	m := iv.svc.deps.metrics
	m.waiting.WithLabelValues("retrying").Set(retrying)
	m.waiting.WithLabelValues("dead_letter").Set(dead)
	m.repairing.Set(repairing)
	return nil
}
