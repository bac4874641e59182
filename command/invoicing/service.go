package invoicing

import "github.com/jackc/pgx/v5/pgxpool"

// Service holds what the invoicer's use cases need: issuing, cancelling
// and crediting documents, archiving them, dead letters and the provider's
// payment orders.
type Service struct {
	pool *pgxpool.Pool
	deps *dependencies // breakers and bounds of the provider and object-store calls
	// chains groups the chaining of documents archived at the same time.
	chains chainGroup
}

// New returns the invoicing side over pool.
func New(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, deps: newDependencies()}
}
