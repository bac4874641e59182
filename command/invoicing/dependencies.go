package invoicing

import (
	"context"
	"errors"
	"time"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/banktransfer"
	"github.com/o2i-service/o2i/internal/breaker"
	"github.com/o2i-service/o2i/internal/consume"
)

// The invoicer's calls to its dependencies outside PostgreSQL: the payment
// provider's API (the payment orders of bank transfers) and the object
// store (archiving). Each call
//   - has its own short timeout (the provider's: the banktransfer client's,
//     O2I_PROVIDER_TIMEOUT, default 5 s per request; the object store's:
//     O2I_ARCHIVE_TIMEOUT, default 10 s per object);
//   - goes through a circuit breaker per dependency and project: after
//     DefaultBreaker.Failures failures in a row (timeouts, refused
//     connections, 5xx; not answers such as missing rights) that project's
//     calls to that dependency are refused at once (*breaker.OpenError) for
//     DefaultBreaker.OpenFor, then one call probes. One project's
//     black-holed provider or unreachable documents never trip another
//     project's calls;
//   - waits outside the consumer's worker (consume.Waiting): while an event
//     waits on a hanging dependency, the worker handles other events.
// A failed event is not tried again inline: it goes to the retry table at
// once (dead_letters.go), is retried there with per-item backoff, and a
// refused one is due when its breaker lets the next call out.

// The dependencies, as breakers name them.
const (
	DependencyProvider = "payment provider"
	DependencyArchive  = "object store"
)

// DefaultArchiveTimeout bounds one object-store call unless configured.
const DefaultArchiveTimeout = 10 * time.Second

// DefaultBreaker opens a (dependency, project) breaker after 5 failures in
// a row, for 30 s.
var DefaultBreaker = breaker.Policy{Failures: 5, OpenFor: 30 * time.Second}

// dependencies are the breakers and bounds of the calls.
type dependencies struct {
	breakers       *breaker.Set
	archiveTimeout time.Duration
	metrics        *metrics
}

func newDependencies() *dependencies {
	return &dependencies{breakers: breaker.NewSet(DefaultBreaker), archiveTimeout: DefaultArchiveTimeout, metrics: newMetrics()}
}

// SetArchiveTimeout bounds each object-store call of the invoicer (d > 0).
func (s *Service) SetArchiveTimeout(d time.Duration) {
	if d > 0 {
		s.deps.archiveTimeout = d
	}
}

// SetBreaker replaces the breakers' policy (their state starts afresh).
func (s *Service) SetBreaker(p breaker.Policy) {
	s.deps.breakers = breaker.NewSet(p)
}

// call makes one call f of dependency dep for a project (see above):
// refused at once while the breaker is open, bounded by timeout (0: f
// bounds itself), waiting outside the consumer's worker. answered tells the
// failures that are answers of the dependency (they do not count). A call
// stopped because its caller stopped counts nothing.
func (s *Service) call(ctx context.Context, dep, projectID string, timeout time.Duration, answered func(error) bool,
	f func(context.Context) error) error {
	key := dep + " of project " + projectID
	set := s.deps.breakers
	ticket, err := set.Allow(key, time.Now())
	if err != nil {
		s.deps.metrics.refused.WithLabelValues(dep).Inc()
		return err
	}
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err = consume.Waiting(ctx, func() error { return f(cctx) })
	if ctx.Err() == nil {
		set.Record(key, ticket, err != nil && !answered(err), time.Now())
	}
	return err
}

// objectStore is one object-store call for a project's document.
func (s *Service) objectStore(ctx context.Context, projectID string, f func(context.Context) error) error {
	return s.call(ctx, DependencyArchive, projectID, s.deps.archiveTimeout, archiveAnswered, f)
}

// provider is one call to the payment provider for a project (the client
// bounds its requests).
func (s *Service) provider(ctx context.Context, projectID string, f func(context.Context) error) error {
	return s.call(ctx, DependencyProvider, projectID, 0, banktransfer.Answered, f)
}

// archiveAnswered: the store refused the object (another document under
// the key, a corrupt one): it is up.
func archiveAnswered(err error) bool {
	return errors.Is(err, archive.ErrConflict) || errors.Is(err, archive.ErrCorrupt)
}
