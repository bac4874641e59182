package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
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
}

// Hold kinds: the order waits as a review task, no invoice number is taken.
const (
	HoldContactPhone          = "xrechnung_contact_phone_missing"     // Leitweg-ID, but no telephone on the invoice contact (BR-DE-6)
	HoldRevenueRecognition    = "product_without_revenue_recognition" // accrual accounting, a service without period or product default
	HoldNotInvoiceable        = "order_not_invoiceable"               // the engine rejects the order (for example a rate not allowed at the place of supply)
	TaskValidationFailed      = "invoice_validation_failed"           // a document broke EN 16931 / XRechnung rules; it is never archived
	TaskPaymentAmountMismatch = "payment_amount_mismatch"             // the provider's payment is not the amount due; the invoice is issued
)

// HeldError says why an order was held back as a review task.
type HeldError struct {
	Kind    string
	Details string
}

func (e *HeldError) Error() string { return "order held as task " + e.Kind + ": " + e.Details }

// IssueInvoices creates the documents of an order in ONE transaction: the
// invoice numbers from the project's range (a row-locked counter: gapless,
// never reused, given back by a rollback), the computation, the CII XML and
// its validation by the EN 16931 / XRechnung rules. A document that fails
// validation is recorded with status failed and a review task listing the
// rule ids; it is never archived. The order becomes invoiced, and
// invoice.created / invoice.failed and order.updated go to the outbox.
// Calling it for an order already invoiced returns its documents. An order
// that cannot be invoiced yet returns a *HeldError after recording the task.
func (s *Service) IssueInvoices(ctx context.Context, projectID, orderID string, d IssueDates) (out []Issued, err error) {
	defer apperr.Wrap(&err, "issue invoices of order %s", orderID)
	if d.PaymentDate.IsZero() {
		d.PaymentDate = d.IssueDate
	}
	var held *HeldError
	err = store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, held, err = s.issueTx(ctx, tx, projectID, orderID, d)
		return err
	})
	if err == nil && held != nil {
		return nil, held
	}
	return out, err
}

type lockedOrder struct {
	id, orderNo, status, fulfillment, tracking string
	version                                    int64
	shippedAt, suppliedAt, invoicedAt          *time.Time
	createdAt, updatedAt                       time.Time
	paidCents                                  *int64 // the provider's payment, when matched
	content                                    event.OrderContent
}

func (s *Service) issueTx(ctx context.Context, tx pgx.Tx, projectID, orderID string, d IssueDates) ([]Issued, *HeldError, error) {
	var o lockedOrder
	var raw []byte
	var tracking *string
	err := tx.QueryRow(ctx, `SELECT id::text, order_no, status, fulfillment_status, tracking_number, version, shipped_at, supplied_at,
			invoiced_at, created_at, updated_at, paid_cents, content
		FROM orders WHERE project_id = $1 AND id = $2 FOR UPDATE`, projectID, orderID).
		Scan(&o.id, &o.orderNo, &o.status, &o.fulfillment, &tracking, &o.version, &o.shippedAt, &o.suppliedAt,
			&o.invoicedAt, &o.createdAt, &o.updatedAt, &o.paidCents, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, apperr.New(apperr.NotFound, "order_not_found", "no order %s", orderID)
	}
	if err != nil {
		return nil, nil, err
	}
	if tracking != nil {
		o.tracking = *tracking
	}
	if err := json.Unmarshal(raw, &o.content); err != nil {
		return nil, nil, fmt.Errorf("order content: %w", err)
	}
	if o.status == "invoiced" {
		issued, err := issuedOf(ctx, tx, orderID)
		return issued, nil, err
	}
	p, err := project.Get(ctx, tx, projectID)
	if err != nil {
		return nil, nil, err
	}
	seller := p.Seller()
	rates, recognised, err := productSettings(ctx, tx, o.content)
	if err != nil {
		return nil, nil, err
	}
	order := billingOrder(o.content, rates)

	// Holds: the order waits as a task and takes no number.
	switch {
	case order.BillingAddress.LeitwegID != "" && seller.ContactPhone == "":
		h := &HeldError{HoldContactPhone, "XRechnung needs a telephone number on the invoice contact (BR-DE-6): o2i project set --contact-phone"}
		return nil, h, openTask(ctx, tx, projectID, h.Kind, o.orderNo, map[string]any{"orderNo": o.orderNo, "details": h.Details})
	case p.Accounting == project.Accrual && !order.RequiresShipping && order.ServicePeriod == nil && !recognised:
		h := &HeldError{HoldRevenueRecognition, "no service_period and no revenue recognition on the product"}
		return nil, h, openTask(ctx, tx, projectID, h.Kind, o.orderNo, map[string]any{"orderNo": o.orderNo, "details": h.Details})
	}
	if err := billing.Validate(order, seller); err != nil {
		h := &HeldError{HoldNotInvoiceable, err.Error()}
		return nil, h, openTask(ctx, tx, projectID, h.Kind, o.orderNo, map[string]any{"orderNo": o.orderNo, "details": h.Details})
	}

	pattern, err := billing.PatternFor(seller)
	if err != nil {
		return nil, nil, err
	}
	year := d.IssueDate.Year()
	rangeKey := pattern.RangeKey(year)
	n := billing.Documents(order)
	var first int64
	err = tx.QueryRow(ctx, `INSERT INTO number_ranges (project_id, range_key, next_seq) VALUES ($1, $2, $3 + 1)
		ON CONFLICT (project_id, range_key) DO UPDATE SET next_seq = number_ranges.next_seq + $3
		RETURNING next_seq - $3`, projectID, rangeKey, n).Scan(&first)
	if err != nil {
		return nil, nil, fmt.Errorf("number range %s: %w", rangeKey, err)
	}
	numbers := make([]string, n)
	for i := range numbers {
		if numbers[i], err = pattern.Format(year, int(first)+i); err != nil {
			return nil, nil, err
		}
	}
	supply := d.IssueDate
	if o.suppliedAt != nil {
		supply = *o.suppliedAt
	}
	docs, err := billing.Compute(order, seller, billing.Context{IssueDate: d.IssueDate, SupplyDate: supply, PaymentDate: d.PaymentDate, Numbers: numbers})
	if err != nil {
		return nil, nil, err
	}

	now := time.Now().UTC()
	var evs []event.Event
	var out []Issued
	for i, inv := range docs {
		xml, err := render.CII(inv)
		if err != nil {
			return nil, nil, err
		}
		// The XML is what is archived: its check covers the structure and
		// every rule (the same rules einvoice.Check applies to the value).
		findings := einvoice.CheckXML(xml)
		doc := Issued{ID: uuid.NewString(), Number: inv.Number, Status: "created"}
		if !einvoice.Valid(findings) {
			doc.Status = "failed"
			doc.FailedRules = einvoice.RuleIDs(errorsOnly(findings))
		}
		kind := string(inv.Kind)
		if inv.Kind == billing.KindCancellation {
			kind = "cancellation"
		}
		var paymentRef *string
		if o.content.PaymentRef != "" {
			paymentRef = &o.content.PaymentRef
		}
		_, err = tx.Exec(ctx, `INSERT INTO invoices (id, project_id, order_id, order_no, payment_ref, number, range_key, seq, type, type_code,
				format, status, issue_date, currency, total_net_cents, total_tax_cents, total_gross_cents, due_cents, test_mode,
				oss_report, ec_sales_list, failed_rules, xml, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`,
			doc.ID, projectID, orderID, o.orderNo, paymentRef, inv.Number, rangeKey, first+int64(i), kind, string(inv.TypeCode),
			string(inv.Format), doc.Status, inv.IssueDate, inv.Currency, int64(inv.Totals.TaxBasisCents), int64(inv.Totals.TaxCents),
			int64(inv.Totals.GrandCents), int64(inv.Totals.DueCents), inv.Test, inv.OSSReport, inv.ECSalesList,
			append([]string{}, doc.FailedRules...), xml, now)
		if err != nil {
			return nil, nil, fmt.Errorf("record invoice %s: %w", inv.Number, err)
		}
		data := event.Invoice{ID: doc.ID, ProjectID: projectID, OrderID: orderID, OrderNo: o.orderNo, PaymentRef: o.content.PaymentRef,
			Number: inv.Number, Status: doc.Status, Version: 1, Type: kind, Format: string(inv.Format),
			IssueDate: inv.IssueDate.Format(time.DateOnly), Currency: inv.Currency, TotalNetCents: int64(inv.Totals.TaxBasisCents),
			TotalTaxCents: int64(inv.Totals.TaxCents), TotalGrossCents: int64(inv.Totals.GrandCents), TestMode: inv.Test,
			CreatedAt: now, FailedRules: doc.FailedRules}
		typ := event.InvoiceCreated
		if doc.Status == "failed" {
			typ = event.InvoiceFailed
			if err := openTask(ctx, tx, projectID, TaskValidationFailed, inv.Number, map[string]any{
				"orderNo": o.orderNo, "invoiceId": doc.ID, "number": inv.Number, "rules": doc.FailedRules, "findings": findingTexts(findings),
			}); err != nil {
				return nil, nil, err
			}
		}
		ev, err := event.New(typ, projectID, "invoice", doc.ID, o.orderNo, 1, now, data)
		if err != nil {
			return nil, nil, err
		}
		evs = append(evs, ev)
		out = append(out, doc)
	}

	// A provider payment that is not the amount due is issued anyway (the
	// invoice shows the sale) and goes to clarification.
	if o.paidCents != nil {
		var due int64
		for _, inv := range docs {
			due += int64(inv.Totals.DueCents)
		}
		if due != *o.paidCents {
			if err := openTask(ctx, tx, projectID, TaskPaymentAmountMismatch, o.orderNo, map[string]any{
				"orderNo": o.orderNo, "paidCents": *o.paidCents, "dueCents": due,
			}); err != nil {
				return nil, nil, err
			}
		}
	}

	// The order is invoiced: its invoice-relevant content is frozen.
	err = tx.QueryRow(ctx, `UPDATE orders SET status = 'invoiced', version = version + 1, invoiced_at = $2, updated_at = $2
		WHERE id = $1 RETURNING version`, orderID, now).Scan(&o.version)
	if err != nil {
		return nil, nil, err
	}
	state := event.Order{ID: o.id, ProjectID: projectID, Status: "invoiced", Version: o.version, FulfillmentStatus: o.fulfillment,
		ShippedAt: o.shippedAt, SuppliedAt: o.suppliedAt, TrackingNumber: o.tracking, CreatedAt: o.createdAt, UpdatedAt: now,
		InvoicedAt: &now, OrderContent: o.content}
	ev, err := event.New(event.OrderUpdated, projectID, "order", o.id, o.orderNo, o.version, now, state)
	if err != nil {
		return nil, nil, err
	}
	evs = append(evs, ev)
	return out, nil, outbox.Enqueue(ctx, tx, evs...)
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

// productSettings returns the catalogue's default VAT rates of the order's
// products and whether every line's product has a revenue recognition set.
func productSettings(ctx context.Context, tx pgx.Tx, c event.OrderContent) (map[string]money.Decimal, bool, error) {
	ids := make([]string, 0, len(c.Items))
	for _, it := range c.Items {
		if it.CatalogProductID != "" {
			ids = append(ids, it.CatalogProductID)
		}
	}
	rows, err := tx.Query(ctx, `SELECT id::text, default_tax_rate::text, revenue_recognition FROM products WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	rates := map[string]money.Decimal{}
	recognised := len(ids) == len(c.Items)
	seen := 0
	for rows.Next() {
		var id string
		var rate, rec *string
		if err := rows.Scan(&id, &rate, &rec); err != nil {
			return nil, false, err
		}
		seen++
		if rate != nil {
			r, err := money.ParseDecimal(*rate)
			if err != nil {
				return nil, false, err
			}
			rates[id] = r
		}
		if rec == nil {
			recognised = false
		}
	}
	return rates, recognised && seen == len(ids), rows.Err()
}

// openTask records a review task unless the same one is open already.
func openTask(ctx context.Context, tx pgx.Tx, projectID, kind, subject string, details map[string]any) error {
	raw, err := json.Marshal(details)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details)
		SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (
			SELECT 1 FROM tasks WHERE project_id = $2 AND kind = $3 AND subject = $4 AND status = 'open')`,
		uuid.NewString(), projectID, kind, subject, raw)
	return err
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
