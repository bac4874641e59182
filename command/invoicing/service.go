package invoicing

import (
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/store"
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
	// marks and sent commit the archived marks and the sent records of
	// concurrent documents together (store.Group): each one statement that
	// depends on no other.
	marks, sent *store.Group
	// issues groups the issuing of a project's orders (issue_groups.go).
	issues *issueGroups
}

// groupStatements and groupTimeout bound a pipeline of marks or sent
// records: its statements and its time.
const (
	groupStatements = 32
	groupTimeout    = 10 * time.Second
)

// New returns the invoicing side over pool.
func New(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool, deps: newDependencies(), issues: newIssueGroups(),
		marks: store.NewGroup(pool, "archived_mark", groupStatements, groupTimeout),
		sent:  store.NewGroup(pool, "mail_sent", groupStatements, groupTimeout)}
}
