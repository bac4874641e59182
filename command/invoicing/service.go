package invoicing

import (
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Service holds what the invoicer's use cases need: issuing, cancelling
// and crediting documents, archiving them, dead letters and the provider's
// payment orders.
type Service struct {
	pool *pgxpool.Pool
	deps *dependencies // breakers and bounds of the provider and object-store calls
	// chains groups the chaining of documents archived at the same time.
	chains chainGroup
	// mailer is the running mailer of this process, if any: the documents
	// archived here hand it their deliveries (Mailer.Run).
	mailer atomic.Pointer[Mailer]
}

// New returns the invoicing side over pool.
func New(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, deps: newDependencies()}
}
