package invoicing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/catalog"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/lifecycle"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/tracing"
	"github.com/o2i-service/o2i/render"
)

// IssueDates are the dates of one invoicing run.
type IssueDates struct {
	IssueDate   time.Time // BT-2
	PaymentDate time.Time // date of supply of services sent without a period; zero: IssueDate
}

// Issued is one recorded document.
type Issued struct {
	ID          string
	Number      string
	Status      string // created or failed
	FailedRules []string

	// recorded is what was written, when the document was recorded by this
	// call (not found recorded before): archiving it needs no read back.
	recorded *archivable
}

// Review tasks of an issued invoice: the invoice is issued, and a person
// checks what it relies on.
const (
	TaskPriorYearRevenue = "prior_year_revenue" // accrual accounting, a service period starting in an earlier financial year; the invoice is issued
	TaskVATIDReview      = "vat_id_review"      // the buyer's VAT ID decides a supply abroad and needs confirming (billing.VATIDReview); the invoice is issued
)

// HeldError says why an order was held back as a review task.
type HeldError struct {
	Kind    string
	Details string
	TaskID  string // the task that holds it: its own, or the shared one of a cause of its project or product
}

func (e *HeldError) Error() string { return "order held as task " + e.Kind + ": " + e.Details }

// IssueInvoices creates the documents of an order in ONE transaction: the
// invoice numbers from the project's range (a row-locked counter: gapless,
// never reused, given back by a rollback), the computation, the CII XML and
// its validation by the EN 16931 / XRechnung rules. A document that would
// fail validation rolls everything back (its number is given back: no gap)
// and the order is held with an invoice_validation_failed task listing the
// rule ids, until the reconciler finds the cause fixed. The order becomes
// invoiced, and invoice.created and order.updated go to the outbox.
// Calling it for an order already invoiced returns its documents. An order
// that cannot be invoiced yet returns a *HeldError after recording the task.
//
// Orders of one project that come to be issued while one of its issuing
// transactions runs are issued together in the next (issue_groups.go).
func (s *Service) IssueInvoices(ctx context.Context, projectID, orderID string, d IssueDates) (out []Issued, err error) {
	defer apperr.Wrap(&err, "issue invoices of order %s", orderID)
	ctx, span := tracing.Start(ctx, "issue invoices", trace.SpanKindInternal, tracing.ProjectID.String(projectID))
	defer func() { tracing.End(span, err) }()
	if d.PaymentDate.IsZero() {
		d.PaymentDate = d.IssueDate
	}
	return s.issueGrouped(ctx, projectID, orderID, d)
}

// issueAlone is IssueInvoices in a transaction of its own.
func (s *Service) issueAlone(ctx context.Context, projectID, orderID string, d IssueDates) ([]Issued, error) {
	m := &groupMember{orderID: orderID, dates: d}
	err := s.issueTx(ctx, projectID, []*groupMember{m})
	if !m.locked && errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "order_not_found", "no order %s", orderID)
	}
	var invalid *invalidDocument
	if errors.As(err, &invalid) {
		return nil, s.holdInvalid(ctx, projectID, orderID, m.o.OrderNo, invalid)
	}
	if err != nil {
		return nil, err
	}
	if m.held != nil {
		return nil, m.held
	}
	return m.out, nil
}

// holdInvalid holds the order whose document broke a rule (its issuing
// transaction rolled back: no number taken) as its task, and returns the
// hold.
func (s *Service) holdInvalid(ctx context.Context, projectID, orderID, orderNo string, invalid *invalidDocument) error {
	h := &HeldError{Kind: orders.TaskValidationFailed, Details: invalid.Error()}
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		o, err := orders.Lock(ctx, tx, projectID, "id", orderID)
		if err != nil {
			return err
		}
		h.TaskID, err = orders.HoldTx(ctx, tx, projectID, &o, h.Kind, orderNo, map[string]any{
			"orderNo": orderNo, "document": invalid.kind, "rules": invalid.rules, "findings": invalid.findings,
		})
		return err
	})
	if err != nil {
		return err
	}
	return h
}

// groupMember is one order of an issuing transaction and what became of it.
type groupMember struct {
	orderID string
	dates   IssueDates

	o      orders.Locked
	locked bool // the transaction read the order, locked
	alone  bool // left for a transaction of its own (a correction, or the same order twice)
	plan   *issuePlan
	out    []Issued // the plan's, once the transaction committed
	held   *HeldError
}

// issueTx issues the orders of members in one transaction, in four steps:
//
//  1. The BEGIN goes out with every order's lock (in the orders' ids'
//     order, so that two transactions never wait for each other's orders)
//     and the project.
//  2. Each order is decided and computed as far as it can be without its
//     numbers (planIssueTx): the reads happen before any range is locked.
//  3. The numbers of all due documents are taken, one statement per range
//     (numberPlansTx); from here the range's row lock is held to the commit.
//  4. The documents are rendered and checked, on several cores at once
//     (checkPlans), and every write goes with the COMMIT (recordPlanTx).
//
// Any error rolls back all of it: no number is taken. A member left alone
// is not touched; the caller issues it on its own.
func (s *Service) issueTx(ctx context.Context, projectID string, members []*groupMember) error {
	members = slices.Clone(members) // sorted for the locks; the caller's order stays
	slices.SortStableFunc(members, func(a, b *groupMember) int { return strings.Compare(a.orderID, b.orderID) })
	var p project.Project
	first := store.TxBatch()
	if len(members) > 1 {
		// An order that another transaction keeps locked fails the group
		// soon instead of holding the others: they are issued alone then.
		first.Queue(`SET LOCAL lock_timeout = '` + groupLockTimeout + `'`)
	}
	for i, m := range members {
		if i > 0 && m.orderID == members[i-1].orderID {
			m.alone = true // after the group: it finds the order invoiced
			continue
		}
		orders.QueueLock(first, projectID, "id", m.orderID, &m.o)
	}
	if err := project.Queue(first, projectID, &p); err != nil {
		return err
	}
	if len(members) > 1 {
		first.Queue(`SET LOCAL lock_timeout TO DEFAULT`)
	}
	err := store.WithTxBatch(ctx, s.pool, first, func(tx pgx.Tx) (*pgx.Batch, error) {
		var write pgx.Batch
		var due []*issuePlan
		for _, m := range members {
			if m.alone {
				continue
			}
			m.locked = true
			if len(members) > 1 && m.o.CorrectionPending {
				m.alone = true // its cancellations take numbers of their own
				continue
			}
			var err error
			if m.plan, err = s.planIssueTx(ctx, tx, projectID, &m.o, p, m.dates, &write); err != nil {
				return nil, err
			}
			if m.plan.prepared != nil {
				due = append(due, m.plan)
			}
		}
		if len(due) > 0 {
			if err := numberPlansTx(ctx, tx, projectID, due); err != nil {
				return nil, err
			}
			if err := checkPlans(due); err != nil {
				return nil, err
			}
			for _, pl := range due {
				if err := recordPlanTx(ctx, tx, projectID, pl, &write); err != nil {
					return nil, err
				}
			}
		}
		return &write, nil
	})
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.plan != nil {
			m.out, m.held = m.plan.out, m.plan.held
		}
	}
	return nil
}

// issuePlan is an order of an issuing transaction: what it came to before
// the numbers are taken, and its documents after.
type issuePlan struct {
	o       *orders.Locked
	content event.OrderContent
	now     time.Time
	out     []Issued      // its documents: cancelled first, recorded before, or issued
	evs     []event.Event // what its cancellations enqueue, with its save
	held    *HeldError

	// Set when its documents are due: computed up to their numbers.
	p        project.Project
	seller   billing.Seller
	d        IssueDates
	order    billing.Order
	pattern  billing.NumberPattern
	prepared *billing.Prepared
	paid     billing.ReceivedPayment
	isPaid   bool

	// Set by numberPlansTx and checkPlans.
	rangeKey string
	first    int64
	numbers  []string
	docs     []billing.Invoice
	checked  []checkedDocument
}

// planIssueTx decides what the order o of project p, locked in tx, comes
// to: its documents recorded before (invoiced), its cancellation, a hold
// (recorded in tx), or documents due (the plan's prepared). Writes that
// need no numbers are queued to write, sent with the COMMIT.
func (s *Service) planIssueTx(ctx context.Context, tx pgx.Tx, projectID string, o *orders.Locked, p project.Project, d IssueDates, write *pgx.Batch) (*issuePlan, error) {
	pl := &issuePlan{o: o, now: time.Now().UTC(), p: p, d: d}
	if err := json.Unmarshal(o.Content, &pl.content); err != nil {
		return nil, fmt.Errorf("order content: %w", err)
	}
	content := &pl.content
	var err error
	pl.seller = p.Seller()
	pl.seller.TestMode = o.TestMode // the order's mode, fixed when it was received; not the project's now
	seller := pl.seller

	// Documents that no longer match the order are cancelled first.
	if o.CorrectionPending {
		if pl.out, pl.evs, err = s.cancelDocumentsTx(ctx, tx, projectID, o, content.PaymentRef, seller, d.IssueDate, pl.now); err != nil {
			return nil, err
		}
	}
	switch o.Status {
	case "invoiced":
		pl.out, err = issuedOf(ctx, tx, o.ID)
		return pl, err
	case "cancelled":
		if orders.MayBeHeld(o.Holds) {
			orders.QueueReleaseHeld(write, o.ID)
		}
		return pl, queueSaveOrder(ctx, write, projectID, o, *content, o.Status, pl.now, pl.evs)
	}
	// hold holds the order by the task of h.Kind about subject: its own
	// number (a cause of the order, details naming it) or a shared subject
	// (a cause of the project or a product: one task for all its orders).
	hold := func(h *HeldError, subject string, details map[string]any) (*issuePlan, error) {
		if details == nil {
			details = map[string]any{"orderNo": o.OrderNo, "details": h.Details}
		}
		if len(pl.evs) > 0 {
			if err := saveOrderTx(ctx, tx, projectID, o, *content, o.Status, pl.now, pl.evs); err != nil {
				return nil, err
			}
		}
		var err error
		h.TaskID, err = orders.HoldTx(ctx, tx, projectID, o, h.Kind, subject, details)
		pl.out, pl.held = nil, h
		return pl, err
	}

	// The project's own settings first, before anything is computed: a
	// cause of the project holds the order by the project's one task of it.
	if kind, missing := p.Settings.CauseOf(content.BillingAddress.LeitwegID != ""); kind != "" {
		h := &HeldError{Kind: kind, Details: causeDetails(kind, missing)}
		return hold(h, project.SharedSubject, map[string]any{"cause": kind, "missing": missing, "details": h.Details})
	}

	defaults, unrecognised, err := productSettings(ctx, tx, *content)
	if err != nil {
		return nil, err
	}
	order := orders.BillingOrder(*content, defaults)
	if orders.ProviderTransfer(*content) {
		// The invoice asks for payment to the provider's virtual IBAN with
		// its reference; the invoicer created the payment order before.
		if order.Transfer, err = transferOfTx(ctx, tx, o.ID); err != nil {
			return nil, err
		}
		if order.Transfer == nil {
			return nil, fmt.Errorf("order %s has no bank-transfer order at the payment provider yet", o.OrderNo)
		}
	}

	// Holds: the order waits as a task and takes no number.
	switch lifecycle.HoldOf(lifecycle.Facts{XRechnung: order.BillingAddress.LeitwegID != "", ContactPhone: seller.ContactPhone != "",
		Accrual: p.AccountingIn(d.IssueDate.Year()) == project.Accrual, RequiresShipping: order.RequiresShipping, ServicePeriod: order.ServicePeriod != nil,
		RevenueRecognised: len(unrecognised) == 0}) {
	case orders.HoldContactPhone:
		h := &HeldError{Kind: orders.HoldContactPhone, Details: causeDetails(orders.HoldContactPhone, []string{"contactPhone"})}
		return hold(h, project.SharedSubject, map[string]any{"cause": h.Kind, "missing": []string{"contactPhone"}, "details": h.Details})
	case orders.HoldRevenueRecognition:
		h := &HeldError{Kind: orders.HoldRevenueRecognition,
			Details: "no service_period and no revenue recognition on the product: send the period, or PUT /v1/products/{productId}"}
		if product := unrecognised[0]; product.catalogID != "" {
			// One task per product: setting its recognition releases them all.
			return hold(h, catalog.HoldSubject(product.catalogID), map[string]any{"cause": h.Kind, "productId": product.productID,
				"catalogProductId": product.catalogID, "details": h.Details})
		}
		return hold(h, o.OrderNo, nil)
	}
	if err := billing.Validate(order, seller); err != nil {
		return hold(&HeldError{Kind: orders.HoldNotInvoiceable, Details: err.Error()}, o.OrderNo, nil)
	}

	if pl.pattern, err = billing.PatternFor(seller); err != nil {
		return nil, err
	}
	// What the buyer paid before issue: the invoice says so (BT-113) instead
	// of asking again. A correction carries the payment of the invoice it
	// replaces over. Both are read before the numbers are taken (the order
	// is locked already): the range's row lock is held from numberPlansTx
	// to the commit, so nothing that does not need the numbers runs after it.
	if pl.paid, pl.isPaid, err = appliedPaymentTx(ctx, tx, o, content.PaymentGateway); err != nil {
		return nil, err
	}
	if pl.isPaid {
		order.Payments = []billing.ReceivedPayment{pl.paid}
		// An order invoiced again after its invoice was cancelled is a
		// correction: the new invoice names where the payment comes from.
		// A first invoice (never invoiced before) skips the look-up.
		if o.InvoicedAt != nil {
			if order.CarriedFrom, err = lastCancelledInvoiceTx(ctx, tx, o.ID); err != nil {
				return nil, err
			}
		}
	}
	// The documents' lines, taxes and totals need no number: computed
	// before the numbers are taken. What needs them (the number itself, the
	// CII XML and its validation) follows numberPlansTx.
	if pl.prepared, err = billing.Prepare(order, seller); err != nil {
		return nil, err
	}
	pl.order = order
	return pl, nil
}

// numberPlansTx takes the numbers of the due plans' documents, one
// statement per number range, in the ranges' order (two transactions lock
// the rows of the ranges they share in one order); each plan's numbers are
// consecutive. It completes each plan's documents with their numbers.
func numberPlansTx(ctx context.Context, tx pgx.Tx, projectID string, plans []*issuePlan) error {
	byRange := map[string][]*issuePlan{}
	for _, pl := range plans {
		pl.rangeKey = pl.pattern.RangeKey(pl.d.IssueDate.Year())
		byRange[pl.rangeKey] = append(byRange[pl.rangeKey], pl)
	}
	for _, key := range slices.Sorted(maps.Keys(byRange)) {
		n := 0
		for _, pl := range byRange[key] {
			n += pl.prepared.Documents()
		}
		first, err := reserveNumbers(ctx, tx, projectID, key, n)
		if err != nil {
			return err
		}
		for _, pl := range byRange[key] {
			pl.first = first
			if pl.numbers, err = formatNumbers(pl.pattern, pl.d.IssueDate.Year(), first, pl.prepared.Documents()); err != nil {
				return err
			}
			first += int64(len(pl.numbers))
			supply := pl.d.IssueDate
			if pl.o.SuppliedAt != nil {
				supply = *pl.o.SuppliedAt
			}
			if pl.docs, err = pl.prepared.Number(billing.Context{IssueDate: pl.d.IssueDate, SupplyDate: supply,
				PaymentDate: pl.d.PaymentDate, Numbers: pl.numbers}); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPlans renders and checks every document of plans (checkDocument),
// on up to GOMAXPROCS goroutines: the range's lock waits for it. It returns
// the first error in the plans' order.
func checkPlans(plans []*issuePlan) error {
	type job struct {
		pl *issuePlan
		i  int
	}
	var jobs []job
	for _, pl := range plans {
		pl.checked = make([]checkedDocument, len(pl.docs))
		for i := range pl.docs {
			jobs = append(jobs, job{pl, i})
		}
	}
	errs := make([]error, len(jobs))
	check := func(k int) {
		j := jobs[k]
		j.pl.checked[j.i], errs[k] = checkDocument(j.pl.docs[j.i])
	}
	if len(jobs) == 1 {
		check(0)
	} else {
		var g errgroup.Group
		g.SetLimit(runtime.GOMAXPROCS(0))
		for k := range jobs {
			g.Go(func() error { check(k); return nil })
		}
		_ = g.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// recordPlanTx records the numbered and checked documents of pl, opens the
// review tasks they need and saves the order as invoiced; what it writes
// goes to write, sent with the COMMIT.
func recordPlanTx(ctx context.Context, tx pgx.Tx, projectID string, pl *issuePlan, write *pgx.Batch) error {
	o, order, docs, now := pl.o, pl.order, pl.docs, pl.now
	for i, inv := range docs {
		doc, ev, err := queueChecked(write, projectID, o.ID, o.OrderNo, pl.content.PaymentRef, inv, pl.checked[i], pl.rangeKey, pl.first+int64(i), "", now)
		if err != nil {
			return err
		}
		pl.evs = append(pl.evs, ev)
		pl.out = append(pl.out, doc)
	}

	// A provider payment that is not the amount payable is issued anyway
	// (the invoice shows the sale and what was received: the rest as due,
	// a surplus never as a negative amount due) and goes to clarification.
	if pl.isPaid {
		var due, applied int64
		for _, inv := range docs {
			due += int64(inv.Totals.DueCents)
			applied += int64(inv.Totals.PaidCents)
		}
		if due != 0 || applied != int64(pl.paid.Cents) {
			if err := orders.OpenTask(ctx, tx, projectID, orders.TaskPaymentAmountMismatch, o.OrderNo, map[string]any{
				"orderNo": o.OrderNo, "paidCents": int64(pl.paid.Cents), "dueCents": due, "surplusCents": int64(pl.paid.Cents) - applied,
			}); err != nil {
				return err
			}
		}
	}
	// Revenue of an earlier (usually closed) financial year under accrual
	// accounting: the invoice is issued, and the accountant is told (spec:
	// service_period rule 4; the financial year is the calendar year, its
	// method the one in force in the invoice's year).
	if sp := order.ServicePeriod; sp != nil && pl.p.AccountingIn(pl.d.IssueDate.Year()) == project.Accrual && sp.Start.Year() < pl.d.IssueDate.Year() {
		if err := orders.OpenTask(ctx, tx, projectID, TaskPriorYearRevenue, o.OrderNo, map[string]any{
			"orderNo": o.OrderNo, "numbers": pl.numbers, "servicePeriodStart": sp.Start.Format(time.DateOnly),
			"financialYear": sp.Start.Year(), "details": "assign the revenue to the prior financial year",
		}); err != nil {
			return err
		}
	}
	// A VAT ID that decides the treatment of a supply abroad and needs a
	// person to confirm it (not the buyer's country, not valid, ...): the
	// invoice is issued as determined, and the accountant is told what it
	// relies on. Gift cards alone are not taxed at sale: no VAT ID matters.
	for _, inv := range docs {
		if inv.Kind != billing.KindInvoice {
			continue
		}
		if why := billing.VATIDReview(order); why != "" {
			details := map[string]any{"orderNo": o.OrderNo, "number": inv.Number, "treatment": inv.Treatment,
				"vatId": order.BillingAddress.VATID, "country": order.BillingAddress.CountryCode, "details": why}
			if sa := order.ShippingAddress; sa != nil {
				details["shippingCountry"] = sa.CountryCode
			}
			if err := orders.OpenTask(ctx, tx, projectID, TaskVATIDReview, o.OrderNo, details); err != nil {
				return err
			}
		}
	}
	// Whatever held the order has cleared: its own hold tasks are resolved,
	// a shared one once it holds no order any more. An order that no task
	// holds (o.Holds, kept by every hold) has nothing to release.
	if orders.MayBeHeld(o.Holds) {
		orders.QueueReleaseHeld(write, o.ID)
		orders.QueueResolveTasks(write, projectID, orders.HoldKinds, o.OrderNo, "released: invoiced as "+strings.Join(pl.numbers, ", "))
	}
	// The order is invoiced: its invoice-relevant content is frozen until a
	// correction.
	return queueSaveOrder(ctx, write, projectID, o, pl.content, "invoiced", now, pl.evs)
}

// takeNumbers takes n consecutive numbers of pattern's range for year from
// the project's row-locked counter (gapless; a rollback gives them back).
func takeNumbers(ctx context.Context, tx pgx.Tx, projectID string, pattern billing.NumberPattern, year, n int) (rangeKey string, first int64, numbers []string, err error) {
	rangeKey = pattern.RangeKey(year)
	if first, err = reserveNumbers(ctx, tx, projectID, rangeKey, n); err != nil {
		return "", 0, nil, err
	}
	numbers, err = formatNumbers(pattern, year, first, n)
	return rangeKey, first, numbers, err
}

// reserveNumbers takes n consecutive sequence numbers of the range from the
// project's counter and returns the first; the counter's row stays locked
// until the transaction ends.
func reserveNumbers(ctx context.Context, tx pgx.Tx, projectID, rangeKey string, n int) (first int64, err error) {
	err = tx.QueryRow(ctx, `INSERT INTO number_ranges (project_id, range_key, next_seq) VALUES ($1, $2, $3 + 1)
		ON CONFLICT (project_id, range_key) DO UPDATE SET next_seq = number_ranges.next_seq + $3
		RETURNING next_seq - $3`, projectID, rangeKey, n).Scan(&first)
	if err != nil {
		return 0, fmt.Errorf("number range %s: %w", rangeKey, err)
	}
	return first, nil
}

// formatNumbers writes the n numbers of pattern for year from first on.
func formatNumbers(pattern billing.NumberPattern, year int, first int64, n int) ([]string, error) {
	numbers := make([]string, n)
	for i := range numbers {
		var err error
		if numbers[i], err = pattern.Format(year, int(first)+i); err != nil {
			return nil, err
		}
	}
	return numbers, nil
}

// recordDocumentTx renders inv as CII XML, checks it by every EN 16931 /
// XRechnung rule and records it (with the value it was rendered from) as
// number seq of rangeKey; cancels is the id of the document it cancels, or
// empty. A document that breaks a rule is not recorded: it returns an
// *invalidDocument, whose rollback gives the number back. It returns the
// document and its invoice.created event.
func recordDocumentTx(ctx context.Context, tx pgx.Tx, projectID, orderID, orderNo, paymentRef string, inv billing.Invoice,
	rangeKey string, seq int64, cancels string, now time.Time) (Issued, event.Event, error) {
	chk, err := checkDocument(inv)
	if err != nil {
		return Issued{}, event.Event{}, err
	}
	var b pgx.Batch
	doc, ev, err := queueChecked(&b, projectID, orderID, orderNo, paymentRef, inv, chk, rangeKey, seq, cancels, now)
	if err != nil {
		return Issued{}, event.Event{}, err
	}
	return doc, ev, tx.SendBatch(ctx, &b).Close()
}

// checkedDocument is a document rendered as CII XML that keeps every rule,
// with the value it was rendered from as JSON.
type checkedDocument struct {
	xml, document []byte
	// read is the XML as its check read it: its PDF is laid out from it
	// (nil for a small-amount invoice, whose XML is not checked).
	read *einvoice.Document
}

// checkDocument renders inv as CII XML and checks it. The XML is what is
// archived: its check covers the structure and every rule (the same rules
// einvoice.Check applies to the value). A document that breaks a rule
// returns an *invalidDocument: the error rolls the transaction back, so its
// number is given back and the range keeps no gap. A small-amount invoice
// (§ 33 UStDV) is no e-invoice: its XML is only the source of its PDF,
// never archived or served, and its buyer need not be named; its
// computation's invariants hold all the same.
func checkDocument(inv billing.Invoice) (checkedDocument, error) {
	xml, err := render.CII(inv)
	if err != nil {
		return checkedDocument{}, err
	}
	document, err := json.Marshal(inv)
	if err != nil {
		return checkedDocument{}, err
	}
	findings := []einvoice.Finding(nil)
	var read *einvoice.Document
	if inv.Format != billing.FormatSmallAmount {
		read, findings = einvoice.CheckAndReadCII(xml)
	}
	if !einvoice.Valid(findings) {
		return checkedDocument{}, &invalidDocument{number: inv.Number, kind: string(inv.Kind),
			rules: einvoice.RuleIDs(errorsOnly(findings)), findings: findingTexts(findings)}
	}
	return checkedDocument{xml: xml, document: document, read: read}, nil
}

// queueChecked adds the insert of the checked document inv (chk) to b, sent
// by the caller in its transaction, and returns the document and its
// invoice.created event.
func queueChecked(b *pgx.Batch, projectID, orderID, orderNo, paymentRef string, inv billing.Invoice, chk checkedDocument,
	rangeKey string, seq int64, cancels string, now time.Time) (Issued, event.Event, error) {
	xml, document := chk.xml, chk.document
	doc := Issued{ID: uuid.NewString(), Number: inv.Number, Status: "created"}
	kind := string(inv.Kind)
	if inv.Kind == billing.KindCancellation {
		kind = "cancellation"
	}
	// The document awaits its archive from here: its archive_pending row
	// (migration 00220) goes in the same statement.
	b.Queue(`WITH doc AS (
			INSERT INTO invoices (id, project_id, order_id, order_no, payment_ref, number, range_key, seq, type, type_code,
				format, status, issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, due_cents, test_mode,
				oss_report, ec_sales_list, failed_rules, xml, document, cancels, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26))
		INSERT INTO archive_pending (invoice_id, project_id, range_key, seq, created_at) VALUES ($1, $2, $7, $8, $26)`,
		doc.ID, projectID, orderID, orderNo, orders.Nullable(paymentRef), inv.Number, rangeKey, seq, kind, string(inv.TypeCode),
		string(inv.Format), doc.Status, inv.IssueDate, inv.Currency, int64(inv.Totals.TaxBasisCents), int64(inv.Totals.TaxCents),
		int64(inv.Totals.GrandCents), int64(inv.Totals.DueCents), inv.Test, inv.OSSReport, inv.ECSalesList,
		append([]string{}, doc.FailedRules...), xml, document, orders.Nullable(cancels), now)
	data := event.Invoice{ID: doc.ID, ProjectID: projectID, OrderID: orderID, OrderNo: orderNo, PaymentRef: paymentRef,
		Number: inv.Number, Status: doc.Status, Version: 1, Type: kind, Format: string(inv.Format),
		IssueDate: inv.IssueDate.Format(time.DateOnly), Currency: inv.Currency, TotalNetCents: int64(inv.Totals.TaxBasisCents),
		TotalTaxCents: int64(inv.Totals.TaxCents), TotalGrossCents: int64(inv.Totals.GrandCents), TestMode: inv.Test,
		CreatedAt: now, FailedRules: doc.FailedRules}
	ev, err := event.New(event.InvoiceCreated, projectID, "invoice", doc.ID, orderNo, 1, now, data)
	// As the database gives it back: the issue date without time, times in µs.
	data.CreatedAt = now.Truncate(time.Microsecond)
	doc.recorded = &archivable{inv: data, xml: xml, read: chk.read, rangeKey: rangeKey, first: true,
		issue: time.Date(inv.IssueDate.Year(), inv.IssueDate.Month(), inv.IssueDate.Day(), 0, 0, 0, 0, time.UTC)}
	return doc, ev, err
}

// invalidDocument: a computed document breaks EN 16931 / XRechnung rules.
// It is never recorded or archived and takes no number; the order is held
// with an invoice_validation_failed task until the cause (usually seller
// data) is fixed, when the reconciler issues it.
type invalidDocument struct {
	number, kind string
	rules        []string
	findings     []string
}

func (e *invalidDocument) Error() string {
	return fmt.Sprintf("the %s would break the rules %s", e.kind, strings.Join(e.rules, ", "))
}

// saveOrderTx stores the order's new status after invoicing or cancelling
// (no correction pending any more) and enqueues evs with its order.updated.
func saveOrderTx(ctx context.Context, tx pgx.Tx, projectID string, o *orders.Locked, c event.OrderContent, status string, now time.Time, evs []event.Event) error {
	var b pgx.Batch
	if err := queueSaveOrder(ctx, &b, projectID, o, c, status, now, evs); err != nil {
		return err
	}
	return tx.SendBatch(ctx, &b).Close()
}

// queueSaveOrder is saveOrderTx with its statements added to b, to be sent
// in the transaction that locked o. The order's new version and times are
// known before the update (the row is locked: version + 1, updated_at now);
// the statement checks the version it stored (assert_true: inside
// PostgreSQL, so that a mismatch fails the transaction even when the COMMIT
// goes out in the same batch), so the order.updated event always carries
// the stored state.
func queueSaveOrder(ctx context.Context, b *pgx.Batch, projectID string, o *orders.Locked, c event.OrderContent, status string, now time.Time, evs []event.Event) error {
	version, at := o.Version+1, now.Truncate(time.Microsecond) // as the database stores it
	b.Queue(`WITH saved AS (
			UPDATE orders SET status = $2, correction_pending = false, version = version + 1, updated_at = $3,
				invoiced_at = CASE WHEN $2 = 'invoiced' THEN $3 ELSE invoiced_at END, holds = '[]'
			WHERE id = $1 RETURNING version)
		SELECT assert_true(count(*) = 1 AND min(version) = $4,
			format('save order %s: version %s stored, %s expected', $5::text, coalesce(min(version)::text, 'no row'), $4))
		FROM saved`, o.ID, status, at, version, o.OrderNo)
	o.Version, o.UpdatedAt = version, at
	if status == "invoiced" {
		o.InvoicedAt = &at
	}
	o.Status, o.CorrectionPending, o.Holds = status, false, nil
	ev, err := event.New(event.OrderUpdated, projectID, "order", o.ID, o.OrderNo, o.Version, now, o.State(projectID, c))
	if err != nil {
		return err
	}
	return outbox.Queue(ctx, b, append(evs, ev)...)
}

func errorsOnly(fs []einvoice.Finding) []einvoice.Finding {
	var out []einvoice.Finding
	for _, f := range fs {
		if f.Severity == einvoice.Error {
			out = append(out, f)
		}
	}
	return out
}

func findingTexts(fs []einvoice.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// unrecognisedProduct is a product of an order line without a revenue
// recognition: its catalogue id (empty for a line bound to none) and the
// caller's article id.
type unrecognisedProduct struct{ catalogID, productID string }

// productSettings returns the catalogue's defaults of the order's products
// (VAT rate, service period) and the lines' products that have no revenue
// recognition set (none: every line's product has one).
func productSettings(ctx context.Context, tx pgx.Tx, c event.OrderContent) (map[string]orders.ProductDefaults, []unrecognisedProduct, error) {
	ids := make([]string, 0, len(c.Items))
	var unrecognised []unrecognisedProduct
	for _, it := range c.Items {
		if it.CatalogProductID != "" {
			ids = append(ids, it.CatalogProductID)
		} else {
			unrecognised = append(unrecognised, unrecognisedProduct{productID: it.ProductID})
		}
	}
	if len(ids) == 0 { // no line bound to the catalogue: nothing to read
		return map[string]orders.ProductDefaults{}, unrecognised, nil
	}
	rows, err := tx.Query(ctx, `SELECT id::text, coalesce(external_id, ''), default_tax_rate::text, revenue_recognition, default_period_months
		FROM products WHERE id = ANY($1::uuid[]) ORDER BY id`, ids)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	defaults := map[string]orders.ProductDefaults{}
	for rows.Next() {
		var id, external string
		var rate, rec *string
		var months *int
		if err := rows.Scan(&id, &external, &rate, &rec, &months); err != nil {
			return nil, nil, err
		}
		var d orders.ProductDefaults
		if rate != nil {
			r, err := money.ParseDecimal(*rate)
			if err != nil {
				return nil, nil, err
			}
			d.TaxRate = &r
		}
		if rec == nil {
			unrecognised = append(unrecognised, unrecognisedProduct{catalogID: id, productID: external})
		} else if *rec == catalog.RecognizeSaaS && months != nil {
			d.PeriodMonths = *months
		}
		defaults[id] = d
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if _, ok := defaults[id]; !ok { // a line bound to a product that is gone
			unrecognised = append(unrecognised, unrecognisedProduct{})
			break
		}
	}
	return defaults, unrecognised, nil
}

// causeDetails says what a cause of the project misses and how it is
// fixed.
func causeDetails(kind string, missing []string) string {
	if kind == orders.HoldContactPhone {
		return "XRechnung needs a telephone number on the invoice contact (BR-DE-6): o2i project set --contact-phone; " +
			"the held orders are invoiced then"
	}
	return "the project's seller data lacks " + strings.Join(missing, ", ") +
		": o2i project set with them; the held orders are invoiced then"
}

func issuedOf(ctx context.Context, tx pgx.Tx, orderID string) ([]Issued, error) {
	rows, err := tx.Query(ctx, `SELECT id::text, number, status, failed_rules FROM invoices WHERE order_id = $1 ORDER BY created_at, seq`, orderID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Issued, error) {
		var i Issued
		err := r.Scan(&i.ID, &i.Number, &i.Status, &i.FailedRules)
		return i, err
	})
}
