package command

import (
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/catalog"
)

// Service holds what the write use cases need.
type Service struct {
	pool      *pgxpool.Pool
	catalog   *catalog.Catalog
	creates   *createBatcher
	sellers   sellerCache
	lastSweep atomic.Int64 // unix nanoseconds of the last idempotency sweep started here
}

// New returns the write side over pool.
func New(pool *pgxpool.Pool) *Service {
	s := &Service{pool: pool, catalog: catalog.New(pool), creates: newCreateBatcher(pool)}
	s.lastSweep.Store(time.Now().Add(-sweepEvery + time.Minute).UnixNano()) // first sweep a minute after start
	return s
}

// RegisterMetrics exports the write side's metrics (the group commit of new
// orders) to reg.
func (s *Service) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.creates.sizes, s.creates.fallbackCount, s.creates.stallRunners} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
