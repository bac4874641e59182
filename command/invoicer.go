package command

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/consume"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/project"
)

// InvoicerGroup is the Kafka consumer group of the invoicer role.
const InvoicerGroup = "o2i-invoicer"

// readyToInvoice decides from an order's state and its project whether the
// order's invoice is due now (spec: States and transitions):
//   - goods (requiresShipping) wait for the fulfilled report; services do not;
//   - store credit that covers everything (sum equals grossTotalCents and
//     financialStatus is paid) needs no incoming payment;
//   - an invoice-first gateway enabled in the project (exact spelling)
//     issues the invoice as an open item without a payment.
//
// Orders paid through the payment provider are invoiced when the payment is
// matched by paymentRef; orders with neither stay without invoice.
func readyToInvoice(o event.Order, gateways func() ([]string, error), paid func() (bool, error)) (bool, error) {
	if o.Status != "created" {
		return false, nil
	}
	if o.RequiresShipping && o.FulfillmentStatus != "fulfilled" {
		return false, nil
	}
	if coveredByCredit(o.OrderContent) {
		return true, nil
	}
	if o.PaymentGateway != "" {
		enabled, err := gateways()
		if err != nil || slices.Contains(enabled, o.PaymentGateway) {
			return err == nil, err
		}
	}
	return paid()
}

func coveredByCredit(c event.OrderContent) bool {
	if len(c.CreditRedemptions) == 0 || c.GrossTotalCents == nil || c.FinancialStatus != "paid" {
		return false
	}
	var sum int64
	for _, r := range c.CreditRedemptions {
		sum += r.AmountCents
	}
	return sum == *c.GrossTotalCents
}

// Invoicer consumes the order events, issues the invoices of orders that
// became due and archives them. Delivery is at least once; IssueInvoices is idempotent.
type Invoicer struct {
	svc      *Service
	archive  *archive.Archive
	brokers  []string
	topic    string
	group    string
	now      func() time.Time
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
		gateways: map[string]cachedGateways{}}
}

// invoiceFirstGateways returns a project's invoice-first gateways, read at
// most every five seconds.
func (iv *Invoicer) invoiceFirstGateways(ctx context.Context, projectID string) ([]string, error) {
	if c, ok := iv.gateways[projectID]; ok && iv.now().Sub(c.at) < 5*time.Second {
		return c.list, nil
	}
	p, err := project.Get(ctx, iv.svc.pool, projectID)
	if err != nil {
		return nil, err
	}
	iv.gateways[projectID] = cachedGateways{p.Settings.InvoiceFirstGateways, iv.now()}
	return p.Settings.InvoiceFirstGateways, nil
}

// Run consumes until ctx ends; a failed event is not committed and comes again.
func (iv *Invoicer) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := iv.consume(ctx)
		if ctx.Err() != nil {
			break
		}
		slog.Error("invoicer: restarting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
	return nil
}

func (iv *Invoicer) consume(ctx context.Context) error {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: iv.brokers, GroupID: iv.group, GroupTopics: []string{iv.topic},
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond, StartOffset: kafka.FirstOffset,
		CommitInterval: 100 * time.Millisecond,                            // handled batches are committed in the background; a crash replays them, and issuing is idempotent
		SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second}) // a crashed member's partitions move on after 10 s
	defer r.Close()
	for {
		// Hand the batch to the committer once every event of it is handled.
		batch, err := consume.FetchBatch(ctx, r, 500)
		if err != nil {
			return err
		}
		for _, m := range batch {
			if err := iv.handle(ctx, m.Value); err != nil {
				return err
			}
		}
		if err := r.CommitMessages(ctx, batch...); err != nil {
			return err
		}
	}
}

// handle issues the order's invoices when they are due. Events it cannot
// read are logged and skipped: the projector keeps them as dead letters.
func (iv *Invoicer) handle(ctx context.Context, raw []byte) error {
	ev, err := event.Decode(raw)
	if err != nil || ev.AggregateType != "order" || ev.Version != 1 {
		return nil
	}
	// Only what the decision needs: the lines and addresses stay undecoded.
	var head struct {
		ID                string                   `json:"id"`
		OrderNo           string                   `json:"orderNo"`
		Status            string                   `json:"status"`
		FulfillmentStatus string                   `json:"fulfillmentStatus"`
		RequiresShipping  bool                     `json:"requiresShipping"`
		PaymentGateway    string                   `json:"paymentGateway"`
		FinancialStatus   string                   `json:"financialStatus"`
		GrossTotalCents   *int64                   `json:"grossTotalCents"`
		CreditRedemptions []event.CreditRedemption `json:"creditRedemptions"`
	}
	if err := ev.DecodeData(&head); err != nil {
		slog.Warn("invoicer: undecodable order event", "eventId", ev.ID, "err", err)
		return nil
	}
	o := event.Order{ID: head.ID, Status: head.Status, FulfillmentStatus: head.FulfillmentStatus, OrderContent: event.OrderContent{
		OrderNo: head.OrderNo, RequiresShipping: head.RequiresShipping, PaymentGateway: head.PaymentGateway,
		FinancialStatus: head.FinancialStatus, GrossTotalCents: head.GrossTotalCents, CreditRedemptions: head.CreditRedemptions}}
	var paidAt *time.Time
	due, err := readyToInvoice(o, func() ([]string, error) { return iv.invoiceFirstGateways(ctx, ev.ProjectID) },
		func() (bool, error) {
			var err error
			paidAt, err = iv.svc.paidAt(ctx, ev.ProjectID, o.ID)
			return paidAt != nil, err
		})
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind == apperr.NotFound {
			return nil // an event of a project that is gone
		}
		return err
	}
	if !due {
		return nil
	}
	dates := IssueDates{IssueDate: iv.now().UTC()}
	if paidAt != nil {
		dates.PaymentDate = paidAt.UTC()
	}
	issued, err := iv.svc.IssueInvoices(ctx, ev.ProjectID, o.ID, dates)
	var held *HeldError
	switch {
	case errors.As(err, &held):
		slog.Info("invoicer: order held as task", "orderNo", o.OrderNo, "task", held.Kind)
		return nil
	case err != nil:
		return err
	}
	for _, d := range issued {
		slog.Info("invoicer: issued", "orderNo", o.OrderNo, "number", d.Number, "status", d.Status)
		if d.Status == "failed" {
			continue // never archived; a review task lists the rules
		}
		// An archive outage fails the batch: it comes again, and issuing
		// is idempotent, so archiving is retried.
		if err := iv.svc.ArchiveInvoice(ctx, iv.archive, ev.ProjectID, d.ID); err != nil {
			return err
		}
	}
	return nil
}
