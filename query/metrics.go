package query

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// openTasksEvery is how often the open review tasks are counted.
const openTasksEvery = 30 * time.Second

// RegisterMetrics exports o2i_tasks_open, the open review tasks by type,
// counted by Run every 30 s (each api process counts them all: dashboards
// take the largest).
func (s *Service) RegisterMetrics(reg prometheus.Registerer) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "o2i_tasks_open", Help: "Open review tasks by type, of every project (counted every 30 s).",
	}, []string{"type"})
	if err := reg.Register(g); err != nil {
		return err
	}
	s.openTasks = g
	return nil
}

// countOpenTasks samples the open tasks into the gauge until ctx ends.
func (s *Service) countOpenTasks(ctx context.Context) {
	t := time.NewTicker(openTasksEvery)
	defer t.Stop()
	for {
		if err := s.sampleOpenTasks(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("counting open tasks", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleOpenTasks sets the gauge to the open tasks by type now (the
// partial index of open tasks serves the count).
func (s *Service) sampleOpenTasks(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT kind, count(*) FROM tasks WHERE status = 'open' GROUP BY kind`)
	if err != nil {
		return err
	}
	defer rows.Close()
	counts := map[string]float64{}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return err
		}
		counts[kind] = float64(n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.openTasks.Reset()
	for kind, n := range counts {
		s.openTasks.WithLabelValues(kind).Set(n)
	}
	return nil
}
