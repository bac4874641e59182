// Package project holds a project (one seller account): its test mode,
// accounting method, rate limit, seller data and invoice contact, in one place.
// It imports internal/apperr, internal/billing (the seller of its invoices) and pgx.
package project

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
)

// Accounting methods.
const (
	Accrual = "accrual"
	Cash    = "cash"
)

// Settings are the seller data, invoice contact and connection settings the
// invoices need. Empty strings mean "not set".
type Settings struct {
	SellerName           string   `json:"sellerName,omitempty"`
	SellerStreet         string   `json:"sellerStreet,omitempty"`
	SellerPostalCode     string   `json:"sellerPostalCode,omitempty"`
	SellerCity           string   `json:"sellerCity,omitempty"`
	SellerCountry        string   `json:"sellerCountry,omitempty"`
	SellerVATID          string   `json:"sellerVatId,omitempty"`
	SellerTaxNumber      string   `json:"sellerTaxNumber,omitempty"`
	SellerIBAN           string   `json:"sellerIban,omitempty"`
	SellerBIC            string   `json:"sellerBic,omitempty"`
	SellerRegistrationID string   `json:"sellerRegistrationId,omitempty"` // commercial register entry (BT-30)
	ContactName          string   `json:"contactName,omitempty"`
	ContactPhone         string   `json:"contactPhone,omitempty"`
	ContactEmail         string   `json:"contactEmail,omitempty"`
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
	Accounting     string    `json:"accounting"`
	RateLimitRPS   int       `json:"rateLimitRps"`
	RateLimitBurst int       `json:"rateLimitBurst"`
	Settings       Settings  `json:"settings"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
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

// ValidAccounting reports whether a is an accounting method.
func ValidAccounting(a string) bool { return a == Accrual || a == Cash }

// Create inserts a new project; a new project is in test mode unless told otherwise.
func Create(ctx context.Context, pool *pgxpool.Pool, name string, testMode bool, accounting string) (Project, error) {
	if name == "" {
		return Project{}, apperr.Field("name", "name is required")
	}
	if !ValidAccounting(accounting) {
		return Project{}, apperr.Field("accounting", "accounting must be accrual or cash")
	}
	id := uuid.New().String()
	_, err := pool.Exec(ctx, `INSERT INTO projects (id, name, test_mode, accounting) VALUES ($1, $2, $3, $4)`,
		id, name, testMode, accounting)
	if err != nil {
		return Project{}, fmt.Errorf("create project: %w", err)
	}
	return Get(ctx, pool, id)
}

// Get loads a project; apperr NotFound when it does not exist.
func Get(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id string) (Project, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Project{}, apperr.New(apperr.NotFound, "project_not_found", "no project %q", id)
	}
	var p Project
	var raw []byte
	err := q.QueryRow(ctx, `SELECT id::text, name, test_mode, accounting, rate_limit_rps, rate_limit_burst, settings, created_at, updated_at
		FROM projects WHERE id = $1`, id).
		Scan(&p.ID, &p.Name, &p.TestMode, &p.Accounting, &p.RateLimitRPS, &p.RateLimitBurst, &raw, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Project{}, apperr.New(apperr.NotFound, "project_not_found", "no project %q", id)
	}
	if err != nil {
		return Project{}, fmt.Errorf("get project %s: %w", id, err)
	}
	if err := json.Unmarshal(raw, &p.Settings); err != nil {
		return Project{}, fmt.Errorf("project %s settings: %w", id, err)
	}
	return p, nil
}

// Update is a change to a project; nil fields stay as they are.
type Update struct {
	Name           *string
	TestMode       *bool
	Accounting     *string
	RateLimitRPS   *int
	RateLimitBurst *int
	Settings       func(*Settings) // applied to the stored settings
}

// Apply changes a project in one transaction and returns it.
func Apply(ctx context.Context, pool *pgxpool.Pool, id string, u Update) (Project, error) {
	if u.Accounting != nil && !ValidAccounting(*u.Accounting) {
		return Project{}, apperr.Field("accounting", "accounting must be accrual or cash")
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
		if u.Name != nil {
			p.Name = *u.Name
		}
		if u.TestMode != nil {
			p.TestMode = *u.TestMode
		}
		if u.Accounting != nil {
			p.Accounting = *u.Accounting
		}
		if u.RateLimitRPS != nil {
			p.RateLimitRPS = *u.RateLimitRPS
		}
		if u.RateLimitBurst != nil {
			p.RateLimitBurst = *u.RateLimitBurst
		}
		if u.Settings != nil {
			u.Settings(&p.Settings)
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
		out, err = Get(ctx, tx, id)
		return err
	})
	return out, err
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
