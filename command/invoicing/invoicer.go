package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/banktransfer"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/consume"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/lifecycle"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/tracing"
)

// InvoicerGroup is the Kafka consumer group of the invoicer role.
const InvoicerGroup = "o2i-invoicer"

// DefaultInvoicerWorkers is the invoicer's Workers unless configured.
const DefaultInvoicerWorkers = 16

// DefaultInvoicerInFlight is the invoicer's MaxInFlight unless configured.
const DefaultInvoicerInFlight = 1000

// decideEvent asks the lifecycle rules about an order event: what it waits
// for, or whether its invoice is due. The project's invoice-first gateways
// and the provider's payment are looked up only when the decision needs
// them. Holds are decided in the issuing transaction, on the locked order.
func decideEvent(o event.Order, gateways func() ([]string, error), paid func() (bool, error)) (lifecycle.Decision, error) {
	f := lifecycle.Facts{Status: o.Status, RequiresShipping: o.RequiresShipping, Fulfilled: o.FulfillmentStatus == "fulfilled",
		CoveredByCredit: coveredByCredit(o.OrderContent)}
	if !slices.Equal(lifecycle.Waits(f), []lifecycle.Waiting{lifecycle.WaitingPayment}) {
		return lifecycle.Decide(f), nil // the payment decides nothing (yet)
	}
	if o.PaymentGateway != "" {
		enabled, err := gateways()
		if err != nil {
			return lifecycle.Decision{}, err
		}
		f.InvoiceFirst = slices.Contains(enabled, o.PaymentGateway) || orders.ProviderTransfer(o.OrderContent)
	}
	if !f.InvoiceFirst {
		var err error
		if f.Paid, err = paid(); err != nil {
			return lifecycle.Decision{}, err
		}
	}
	return lifecycle.Decide(f), nil
}

func coveredByCredit(c event.OrderContent) bool {
	credits := make([]int64, len(c.CreditRedemptions))
	for i, r := range c.CreditRedemptions {
		credits[i] = r.AmountCents
	}
	return lifecycle.CoveredByCredit(c.FinancialStatus, c.GrossTotalCents, credits)
}

// Invoicer consumes the order events, issues the invoices of orders that
// became due and archives them. Delivery is at least once; IssueInvoices is
// idempotent. Events are handled on Workers goroutines as they arrive
// (consume.RunEach): each waits only behind the earlier events of its order,
// never behind a slow event of another order or partition, and each
// partition is committed up to its lowest event not handled yet. Each event
// gets one try (AttemptTimeout; each call to the provider or the object
// store has its own short timeout and a breaker per dependency and project,
// dependencies.go); an event whose try fails goes to the retry table at
// once (dead_letters.go) and the retry workers (retries.go) try it again
// with per-item backoff.
type Invoicer struct {
	svc     *Service
	archive *archive.Archive
	brokers []string
	topic   string
	group   string
	now     func() time.Time

	// Workers is how many events are handled at once (an event waiting on
	// the provider or the object store gives its worker to another
	// meanwhile). An invoice mostly waits (its transactions, three object
	// writes), so more workers than cores keep the cores busy: on 2 cores
	// the drain rate went from 68/s with 4 workers to 133/s with 16 (README).
	Workers int
	// MaxInFlight bounds the events fetched and not handled yet.
	MaxInFlight int
	// AttemptTimeout bounds one try of an event (its database, rendering,
	// provider and object-store calls together).
	AttemptTimeout time.Duration
	// RetriesBeforeTask and TaskAfter: a failing event's review task opens
	// after that many retries or that long since its first failure
	// (permanent failures at once); see dead_letters.go.
	RetriesBeforeTask int
	TaskAfter         time.Duration
	// RetryWorkers items of the retry table are retried at once; with none
	// due the workers look again after RetryPoll.
	RetryWorkers int
	RetryPoll    time.Duration
	// ReconcileEvery is how often the reconciler runs (reconcile.go).
	ReconcileEvery time.Duration
	// Mail, when set, sends the e-mail deliveries beside the consumer.
	Mail *Mailer
	// Transfers creates the payment orders of provider_transfer orders.
	Transfers *banktransfer.Client
	// ReleaseEvery is how often the invoicer looks for held orders whose
	// cause was reported fixed (releases.go).
	ReleaseEvery time.Duration
	// Unreadable counts the held orders the releases and the sweep skipped
	// because their stored content could not be read.
	Unreadable atomic.Int64

	repairScope string // the archive repair's project (tests), or all
	repairLimit int    // documents one repair round claims (tests), or repairPage

	mu       sync.Mutex
	gateways map[string]cachedGateways
}

type cachedGateways struct {
	list []string
	at   time.Time
}

// NewInvoicer returns the invoicer role over the service's database; it
// archives what it issues in a.
func NewInvoicer(s *Service, a *archive.Archive, brokers []string) *Invoicer {
	return &Invoicer{svc: s, archive: a, brokers: brokers, topic: event.TopicOrders, group: InvoicerGroup, now: time.Now,
		Workers: DefaultInvoicerWorkers, MaxInFlight: DefaultInvoicerInFlight, AttemptTimeout: time.Minute,
		RetriesBeforeTask: DefaultRetriesBeforeTask, TaskAfter: DefaultTaskAfter, RetryWorkers: DefaultRetryWorkers, RetryPoll: DefaultRetryPoll,
		ReconcileEvery: 15 * time.Second, ReleaseEvery: 500 * time.Millisecond, gateways: map[string]cachedGateways{}}
}

// invoiceFirstGateways returns a project's invoice-first gateways, read at
// most every five seconds.
func (iv *Invoicer) invoiceFirstGateways(ctx context.Context, projectID string) ([]string, error) {
	iv.mu.Lock()
	c, ok := iv.gateways[projectID]
	iv.mu.Unlock()
	if ok && iv.now().Sub(c.at) < 5*time.Second {
		return c.list, nil
	}
	p, err := project.Get(ctx, iv.svc.pool, projectID)
	if err != nil {
		return nil, err
	}
	iv.mu.Lock()
	iv.gateways[projectID] = cachedGateways{p.Settings.InvoiceFirstGateways, iv.now()}
	iv.mu.Unlock()
	return p.Settings.InvoiceFirstGateways, nil
}

// Run consumes until ctx ends (consume.Group.RunEach: an event that could
// not be handled, not even put into the retry table because the database
// is gone, is not committed and comes again), with the retry workers, the
// reconciler and the mailer beside it.
func (iv *Invoicer) Run(ctx context.Context) error {
	go iv.reconcile(ctx)
	go iv.retryLoop(ctx)
	go iv.releaseFixed(ctx)
	if iv.Mail != nil {
		go func() { _ = iv.Mail.Run(ctx) }()
	}
	consume.Group{Name: "invoicer", Brokers: iv.brokers, GroupID: iv.group, Topics: []string{iv.topic},
		Workers: iv.Workers, MaxInFlight: iv.MaxInFlight}.RunEach(ctx, iv.handle)
	return nil
}

// handle handles one event, in a child of the span that published it.
func (iv *Invoicer) handle(ctx context.Context, m kafka.Message) error {
	mctx, span := tracing.Consume(ctx, "invoicer", m)
	err := iv.process(mctx, m.Value)
	tracing.End(span, err)
	return err
}

// process handles one event with one try; one that fails goes to the retry
// table at once (with its review task when the failure can never go away,
// and then the documents whose rendering or archiving failed become failed:
// failed_invoices.go). It fails only when the retry cannot be recorded.
func (iv *Invoicer) process(ctx context.Context, raw []byte) error {
	j, ok := parseOrderEvent(raw)
	if !ok {
		return nil
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.EventID.String(j.eventID), tracing.OrderNo.String(j.order.OrderNo), tracing.ProjectID.String(j.projectID))
	}
	err := iv.attempt(ctx, j)
	if err == nil || ctx.Err() != nil {
		return ctx.Err()
	}
	taskOpen, rerr := iv.svc.recordFailure(ctx, j, err, iv.group, iv.policy())
	if rerr != nil {
		return fmt.Errorf("record the retry of order %s (%v): %w", j.order.OrderNo, err, rerr)
	}
	if taskOpen {
		iv.svc.deps.metrics.failed.WithLabelValues("dead_letter").Inc()
		slog.ErrorContext(ctx, "invoicer: dead letter", "orderNo", j.order.OrderNo, "eventId", j.eventID, "err", err)
	} else {
		iv.svc.deps.metrics.failed.WithLabelValues("retry").Inc()
		slog.WarnContext(ctx, "invoicer: to be retried", "orderNo", j.order.OrderNo, "eventId", j.eventID, "err", err)
	}
	return nil
}

// attempt is one try of invoice, bounded by AttemptTimeout.
func (iv *Invoicer) attempt(ctx context.Context, j orderJob) error {
	if iv.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, iv.AttemptTimeout)
		defer cancel()
	}
	return iv.invoice(ctx, j)
}

// orderJob is what the invoicer reads from an order event.
type orderJob struct {
	eventID, projectID string
	order              event.Order
	raw                []byte
}

// parseOrderEvent reads an order event; other events, and events it cannot
// read, are not the invoicer's (the projector keeps those as dead letters).
func parseOrderEvent(raw []byte) (orderJob, bool) {
	ev, err := event.DecodeAs[orderHead](raw)
	if err != nil {
		// Not an order's data: decode the envelope alone to tell another
		// aggregate's event (skipped) from an undecodable one (logged).
		return parseOtherEvent(raw)
	}
	if ev.AggregateType != "order" || ev.Version != 1 {
		return orderJob{}, false
	}
	head := ev.Data
	if head.ID == "" {
		slog.Warn("invoicer: undecodable order event", "eventId", ev.ID, "err", "no order id")
		return orderJob{}, false
	}
	o := event.Order{ID: head.ID, Status: head.Status, FulfillmentStatus: head.FulfillmentStatus, CorrectionPending: head.CorrectionPending, RefundPendingCents: head.RefundPending, OrderContent: event.OrderContent{
		OrderNo: head.OrderNo, RequiresShipping: head.RequiresShipping, PaymentGateway: head.PaymentGateway,
		FinancialStatus: head.FinancialStatus, GrossTotalCents: head.GrossTotalCents, CreditRedemptions: head.CreditRedemptions}}
	return orderJob{eventID: ev.ID, projectID: ev.ProjectID, order: o, raw: raw}, true
}

// orderHead is what the invoicer's decision needs of an order event's data:
// the lines and addresses stay undecoded.
type orderHead struct {
	ID                string                   `json:"id"`
	OrderNo           string                   `json:"orderNo"`
	Status            string                   `json:"status"`
	FulfillmentStatus string                   `json:"fulfillmentStatus"`
	RequiresShipping  bool                     `json:"requiresShipping"`
	PaymentGateway    string                   `json:"paymentGateway"`
	FinancialStatus   string                   `json:"financialStatus"`
	GrossTotalCents   *int64                   `json:"grossTotalCents"`
	CreditRedemptions []event.CreditRedemption `json:"creditRedemptions"`
	CorrectionPending bool                     `json:"correctionPending"`
	RefundPending     int64                    `json:"refundPendingCents"`
}

// parseOtherEvent handles an event whose data did not decode as an order's:
// another aggregate's event is skipped, an order event is undecodable.
func parseOtherEvent(raw []byte) (orderJob, bool) {
	ev, err := event.Decode(raw)
	if err != nil || ev.AggregateType != "order" || ev.Version != 1 {
		return orderJob{}, false
	}
	var head orderHead
	err = ev.DecodeData(&head)
	slog.Warn("invoicer: undecodable order event", "eventId", ev.ID, "err", err)
	return orderJob{}, false
}

// invoice cancels the order's documents that no longer match it, issues
// its invoices when they are due, and archives what it issued.
func (iv *Invoicer) invoice(ctx context.Context, j orderJob) error {
	o := j.order
	if o.CorrectionPending {
		cancelled, err := iv.svc.CancelSuperseded(ctx, j.projectID, o.ID, iv.now().UTC())
		if err != nil {
			return err
		}
		if err := iv.archiveAll(ctx, j.projectID, cancelled); err != nil {
			return err
		}
	}
	var paidAt *time.Time
	d, err := decideEvent(o, func() ([]string, error) { return iv.invoiceFirstGateways(ctx, j.projectID) },
		func() (bool, error) {
			var err error
			paidAt, err = orders.PaidAt(ctx, iv.svc.pool, j.projectID, o.ID)
			return paidAt != nil, err
		})
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind == apperr.NotFound {
			return nil // an event of a project that is gone
		}
		return err
	}
	if d.Due && orders.ProviderTransfer(o.OrderContent) && o.Status == "created" {
		// The provider's payment order first: the invoice shows its IBAN and reference.
		err := iv.svc.PrepareTransfer(ctx, iv.Transfers, j.projectID, o.ID)
		var held *HeldError
		if errors.As(err, &held) {
			slog.InfoContext(ctx, "invoicer: order held as task", "orderNo", o.OrderNo, "task", held.Kind)
			return nil
		}
		if err != nil {
			return err
		}
	}
	if d.Due {
		dates := IssueDates{IssueDate: iv.now().UTC()}
		if paidAt != nil {
			dates.PaymentDate = paidAt.UTC()
		}
		issued, err := iv.svc.IssueInvoices(ctx, j.projectID, o.ID, dates)
		var held *HeldError
		switch {
		case errors.As(err, &held):
			slog.InfoContext(ctx, "invoicer: order held as task", "orderNo", o.OrderNo, "task", held.Kind)
			return nil
		case err != nil:
			return err
		}
		if err := iv.archiveAll(ctx, j.projectID, issued); err != nil {
			return err
		}
	}
	if o.RefundPendingCents > 0 {
		notes, err := iv.svc.IssueCreditNotes(ctx, j.projectID, o.ID, iv.now().UTC())
		if err != nil {
			return err
		}
		return iv.archiveAll(ctx, j.projectID, notes)
	}
	return nil
}

// archiveAll archives the issued documents that are still to be archived
// (created or failed), each on its own: one failing does not keep the others
// from the archive. A failure sends the event to the retry table (issuing is
// idempotent, so only the archiving is repeated); it names each document
// that failed (*archiveError), so that they become failed once the review
// task opens.
func (iv *Invoicer) archiveAll(ctx context.Context, projectID string, issued []Issued) error {
	var errs []error
	for _, d := range issued {
		if !awaitsArchive(d.Status, d.FailedRules) {
			continue
		}
		if err := iv.svc.ArchiveIssued(ctx, iv.archive, projectID, d); err != nil {
			errs = append(errs, &archiveError{invoiceID: d.ID, err: err})
		}
	}
	return errors.Join(errs...)
}

// permanent reports whether err can never go away by trying again: the
// engine refuses the order, the stored data cannot be read, PostgreSQL
// refuses the values, or the archive holds another document under the key.
// Anything else (a database, object store or network failure) is tried
// again.
func permanent(err error) bool {
	var fe billing.FieldErrors
	var ie *billing.InvariantError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var pgErr *pgconn.PgError
	var invalid *invalidDocument
	switch {
	case errors.As(err, &fe), errors.As(err, &ie), errors.As(err, &syntax), errors.As(err, &typ), errors.As(err, &invalid):
		return true
	case errors.As(err, &pgErr):
		return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")
	}
	return errors.Is(err, archive.ErrConflict) || errors.Is(err, archive.ErrCorrupt) || errors.Is(err, errNotCancellable)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
