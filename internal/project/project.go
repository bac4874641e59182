// Package project holds a project (one seller account): its test mode,
// accounting method (a history by fiscal year), rate limit, seller data and
// invoice contact, in one place, and the rules of a change of its settings
// (settings.go), which the command line and the console share. It imports
// internal/apperr, internal/accounting (the accounting methods),
// internal/billing (the seller of its invoices) and pgx.
package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
)

// Accounting methods.
const (
	Accrual = accounting.Accrual
	Cash    = accounting.Cash
)

// Settings are the seller data, invoice contact and connection settings the
// invoices need. Empty strings mean "not set".
type Settings struct {
	SellerName           string `json:"sellerName,omitempty"`
	SellerStreet         string `json:"sellerStreet,omitempty"`
	SellerPostalCode     string `json:"sellerPostalCode,omitempty"`
	SellerCity           string `json:"sellerCity,omitempty"`
	SellerCountry        string `json:"sellerCountry,omitempty"`
	SellerVATID          string `json:"sellerVatId,omitempty"`
	SellerTaxNumber      string `json:"sellerTaxNumber,omitempty"`
	SellerIBAN           string `json:"sellerIban,omitempty"`
	SellerBIC            string `json:"sellerBic,omitempty"`
	SellerRegistrationID string `json:"sellerRegistrationId,omitempty"` // commercial register entry (BT-30)
	ContactName          string `json:"contactName,omitempty"`
	ContactPhone         string `json:"contactPhone,omitempty"`
	ContactEmail         string `json:"contactEmail,omitempty"`
	// MailFromName is the display name of the invoice e-mail's From header
	// (the address stays the service's O2I_MAIL_FROM); MailReplyTo, when
	// set, is its Reply-To instead of ContactEmail.
	MailFromName         string   `json:"mailFromName,omitempty"`
	MailReplyTo          string   `json:"mailReplyTo,omitempty"`
	InvoiceFirstGateways []string `json:"invoiceFirstGateways,omitempty"`
	// PaymentTermDays is the payment term of invoice-first invoices (open
	// items) in days; 0 means DefaultPaymentTermDays.
	PaymentTermDays      int    `json:"paymentTermDays,omitempty"`
	OSSRegistered        bool   `json:"ossRegistered,omitempty"`
	InvoiceNumberPattern string `json:"invoiceNumberPattern,omitempty"` // live numbers; default RE-{YYYY}-{SEQ}
	StripeWebhookSecret  string `json:"stripeWebhookSecret,omitempty"`
	StripeAPIKey         string `json:"stripeApiKey,omitempty"`
	// Accounting export (DATEV): the chart of accounts (SKR03, the default,
	// or SKR04), one collective debtor ("collective", the default) or one per
	// customer ("per_customer"), accounts overriding the chart's standard
	// ones by name (revenue19, payments, ...), and the consultant and client
	// numbers of the DATEV header record.
	ChartOfAccounts  string            `json:"chartOfAccounts,omitempty"`
	Debtors          string            `json:"debtors,omitempty"`
	AccountOverrides map[string]string `json:"accountOverrides,omitempty"`
	DATEVConsultant  int               `json:"datevConsultant,omitempty"`
	DATEVClient      int               `json:"datevClient,omitempty"`
}

// Project is one seller account. Every key, order and invoice belongs to one.
type Project struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	TestMode       bool      `json:"testMode"`
	Accounting     string    `json:"accounting"` // the method of the latest change of AccountingHistory
	RateLimitRPS   int       `json:"rateLimitRps"`
	RateLimitBurst int       `json:"rateLimitBurst"`
	Settings       Settings  `json:"settings"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`

	// AccountingHistory is each change of accounting method with the fiscal
	// year it takes effect from, oldest first; AccountingIn(year) is the
	// method of a year.
	AccountingHistory []accounting.MethodChange `json:"accountingHistory"`
}

// Masked returns a copy with secrets reduced to their first characters, for printing.
func (p Project) Masked() Project {
	p.Settings.StripeWebhookSecret = mask(p.Settings.StripeWebhookSecret)
	p.Settings.StripeAPIKey = mask(p.Settings.StripeAPIKey)
	return p
}

func mask(s string) string {
	if len(s) <= 8 {
		if s == "" {
			return ""
		}
		return "****"
	}
	return s[:8] + "****"
}

// AccountingIn returns the accounting method in force in fiscal year year
// (the calendar year).
func (p Project) AccountingIn(year int) string {
	return accounting.MethodIn(p.AccountingHistory, year)
}

// ValidAccounting reports whether a is an accounting method.
func ValidAccounting(a string) bool { return a == Accrual || a == Cash }

// Create inserts a new project; a new project is in test mode unless told
// otherwise. Its accounting method is in force from the year it is created
// (and, having no documents, for any earlier year).
func Create(ctx context.Context, pool *pgxpool.Pool, name string, testMode bool, accounting string) (Project, error) {
	if name == "" {
		return Project{}, apperr.Field("name", "name is required")
	}
	if !ValidAccounting(accounting) {
		return Project{}, apperr.Field("accounting", "accounting must be accrual or cash")
	}
	id := uuid.New().String()
	_, err := pool.Exec(ctx, `WITH p AS (
  INSERT INTO projects (id, name, test_mode, accounting) VALUES ($1, $2, $3, $4) RETURNING id, created_at)
INSERT INTO accounting_methods (project_id, from_year, method)
SELECT id, extract(year FROM created_at AT TIME ZONE 'UTC')::integer, $4 FROM p`,
		id, name, testMode, accounting)
	if err != nil {
		return Project{}, fmt.Errorf("create project: %w", err)
	}
	return Get(ctx, pool, id)
}

// getSQL reads one project ($1) with its accounting history.
const getSQL = `SELECT id::text, name, test_mode, accounting, rate_limit_rps, rate_limit_burst, settings, created_at, updated_at,
		(SELECT jsonb_agg(jsonb_build_object('fromYear', m.from_year, 'method', m.method) ORDER BY m.from_year)
		   FROM accounting_methods m WHERE m.project_id = projects.id)
		FROM projects WHERE id = $1`

// Get loads a project; apperr NotFound when it does not exist.
func Get(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) (Project, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Project{}, NotFound(id)
	}
	return scanProject(q.QueryRow(ctx, getSQL, id), id)
}

// Queue adds the reading of project id to b, for callers that send several
// statements in one round trip: when the batch's results are read, the
// project is stored in dst, and a project that does not exist is apperr
// NotFound, as of Get.
func Queue(b *pgx.Batch, id string, dst *Project) error {
	if _, err := uuid.Parse(id); err != nil {
		return NotFound(id)
	}
	b.Queue(getSQL, id).QueryRow(func(row pgx.Row) error {
		var err error
		*dst, err = scanProject(row, id)
		return err
	})
	return nil
}

// NotFound is the error of a project id that does not exist.
func NotFound(id string) error {
	return apperr.New(apperr.NotFound, "project_not_found", "no project %q", id)
}

func scanProject(row pgx.Row, id string) (Project, error) {
	var p Project
	var raw, methods []byte
	err := row.Scan(&p.ID, &p.Name, &p.TestMode, &p.Accounting, &p.RateLimitRPS, &p.RateLimitBurst, &raw, &p.CreatedAt, &p.UpdatedAt, &methods)
	if errors.Is(err, pgx.ErrNoRows) {
		return Project{}, NotFound(id)
	}
	if err != nil {
		return Project{}, fmt.Errorf("get project %s: %w", id, err)
	}
	if p.Settings, err = DecodeSettings(id, raw); err != nil {
		return Project{}, err
	}
	if methods != nil {
		if err := json.Unmarshal(methods, &p.AccountingHistory); err != nil {
			return Project{}, fmt.Errorf("project %s accounting history: %w", id, err)
		}
	} else { // created by a version without the history: one method throughout
		p.AccountingHistory = []accounting.MethodChange{{From: p.CreatedAt.UTC().Year(), Method: p.Accounting}}
	}
	return p, nil
}

// DecodeSettings reads the settings column of project id.
func DecodeSettings(id string, raw []byte) (Settings, error) {
	var st Settings
	if err := json.Unmarshal(raw, &st); err != nil {
		return Settings{}, fmt.Errorf("project %s settings: %w", id, err)
	}
	return st, nil
}

// Update is a change to a project; nil fields stay as they are.
type Update struct {
	Name           *string
	TestMode       *bool
	Accounting     *string
	RateLimitRPS   *int
	RateLimitBurst *int
	Settings       func(*Settings) // applied to the stored settings

	// AccountingFrom is the fiscal year Accounting takes effect from; nil:
	// the current year, or the next once the current one has documents
	// (see accounting.ChangeYear). A year with documents keeps its method.
	AccountingFrom *int

	// inTx runs in the change's transaction with the project before and
	// after it (see Set).
	inTx func(ctx context.Context, tx pgx.Tx, before, after Project) error
}

// Apply changes a project in one transaction and returns it. A change of
// accounting method is recorded in its history from its fiscal year on; a
// year with live documents is refused (apperr validation error naming
// accountingFrom), so exports of earlier years stay as they were.
func Apply(ctx context.Context, pool *pgxpool.Pool, id string, u Update) (Project, error) {
	if u.Accounting != nil && !ValidAccounting(*u.Accounting) {
		return Project{}, apperr.Field("accounting", "accounting must be accrual or cash")
	}
	if u.AccountingFrom != nil && u.Accounting == nil {
		return Project{}, apperr.Field("accountingFrom", "a fiscal year to change from needs the accounting method")
	}
	if u.RateLimitRPS != nil && *u.RateLimitRPS <= 0 {
		return Project{}, apperr.Field("rateLimitRps", "rate limit must be positive")
	}
	if u.RateLimitBurst != nil && *u.RateLimitBurst <= 0 {
		return Project{}, apperr.Field("rateLimitBurst", "burst must be positive")
	}
	var out Project
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := uuid.Parse(id); err != nil {
			return apperr.New(apperr.NotFound, "project_not_found", "no project %q", id)
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM projects WHERE id = $1 FOR UPDATE`, id); err != nil {
			return err
		}
		p, err := Get(ctx, tx, id)
		if err != nil {
			return err
		}
		before := p // a copy the change cannot reach into
		before.Settings.InvoiceFirstGateways = slices.Clone(p.Settings.InvoiceFirstGateways)
		before.Settings.AccountOverrides = maps.Clone(p.Settings.AccountOverrides)
		if u.Name != nil {
			p.Name = *u.Name
		}
		if u.TestMode != nil {
			p.TestMode = *u.TestMode
		}
		if u.Accounting != nil {
			if err := changeAccountingTx(ctx, tx, &p, *u.Accounting, u.AccountingFrom, time.Now().UTC().Year()); err != nil {
				return err
			}
		}
		if u.RateLimitRPS != nil {
			p.RateLimitRPS = *u.RateLimitRPS
		}
		if u.RateLimitBurst != nil {
			p.RateLimitBurst = *u.RateLimitBurst
		}
		settingsBefore := p.Settings
		settingsBefore.InvoiceFirstGateways = slices.Clone(settingsBefore.InvoiceFirstGateways)
		settingsBefore.AccountOverrides = maps.Clone(settingsBefore.AccountOverrides)
		if u.Settings != nil {
			u.Settings(&p.Settings)
		}
		// A cause the change fixed is reported in the same transaction:
		// the invoicer then releases the orders it holds.
		if err := reportFixedTx(ctx, tx, id, FixedCauses(settingsBefore, p.Settings)); err != nil {
			return err
		}
		raw, err := json.Marshal(p.Settings)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE projects SET name = $2, test_mode = $3, accounting = $4, rate_limit_rps = $5,
			rate_limit_burst = $6, settings = $7, updated_at = now() WHERE id = $1`,
			id, p.Name, p.TestMode, p.Accounting, p.RateLimitRPS, p.RateLimitBurst, raw)
		if err != nil {
			return err
		}
		if out, err = Get(ctx, tx, id); err != nil {
			return err
		}
		if u.inTx != nil {
			return u.inTx(ctx, tx, before, out)
		}
		return nil
	})
	return out, err
}

// changeAccountingTx records method from fiscal year from (nil: the
// default) in p's history, stored anew, and sets p.Accounting to the method
// of the latest change. current is the current fiscal year. A project
// without live documents changing from this year or an earlier one has no
// year to keep: its history starts afresh.
func changeAccountingTx(ctx context.Context, tx pgx.Tx, p *Project, method string, from *int, current int) error {
	var last *time.Time
	if err := tx.QueryRow(ctx, `SELECT max(issue_date) FROM invoices WHERE project_id = $1 AND NOT test_mode AND status <> 'failed'`,
		p.ID).Scan(&last); err != nil {
		return err
	}
	lastYear, fromYear := 0, 0
	if last != nil {
		lastYear = last.Year()
	}
	if from != nil {
		fromYear = *from
	}
	year, err := accounting.ChangeYear(fromYear, current, lastYear)
	if err != nil {
		if fromYear != 0 && slices.Equal(accounting.WithChange(p.AccountingHistory, fromYear, method), p.AccountingHistory) {
			return nil // it changes nothing: a repeated command stays harmless
		}
		return apperr.Field("accountingFrom", "%v", err)
	}
	history := accounting.WithChange(p.AccountingHistory, year, method)
	if lastYear == 0 && year <= current { // no live documents, none to come before year: nothing to keep
		history = []accounting.MethodChange{{From: year, Method: method}}
	}
	if slices.Equal(history, p.AccountingHistory) {
		return nil
	}
	p.AccountingHistory = history
	p.Accounting = history[len(history)-1].Method
	if _, err := tx.Exec(ctx, `DELETE FROM accounting_methods WHERE project_id = $1`, p.ID); err != nil {
		return err
	}
	for _, c := range p.AccountingHistory {
		if _, err := tx.Exec(ctx, `INSERT INTO accounting_methods (project_id, from_year, method) VALUES ($1, $2, $3)`,
			p.ID, c.From, c.Method); err != nil {
			return err
		}
	}
	return nil
}

// Seller returns the seller data of the invoices of p.
func (p Project) Seller() billing.Seller {
	s := p.Settings
	return billing.Seller{
		Name: s.SellerName, Street: s.SellerStreet, PostalCode: s.SellerPostalCode, City: s.SellerCity,
		Country: s.SellerCountry, VATID: s.SellerVATID, TaxNumber: s.SellerTaxNumber, RegistrationID: s.SellerRegistrationID,
		IBAN: s.SellerIBAN, BIC: s.SellerBIC, ContactName: s.ContactName, ContactPhone: s.ContactPhone,
		ContactEmail: s.ContactEmail, OSSRegistered: s.OSSRegistered, TestMode: p.TestMode,
		NumberPattern: s.InvoiceNumberPattern, InvoiceFirstGateways: s.InvoiceFirstGateways, PaymentTermDays: s.PaymentTermDays,
	}
}
