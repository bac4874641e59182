package project

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
)

// Setting groups: which form of the console changes a setting, and so who
// may change it (internal/account's role × action table names the action
// of each group).
const (
	GroupSeller     = "seller"     // seller data on the invoices
	GroupBank       = "bank"       // the payee account (IBAN, BIC)
	GroupContact    = "contact"    // the invoice contact and the invoice e-mail's sender name and reply address
	GroupAccounting = "accounting" // accounting method and the DATEV export
	GroupPayment    = "payment"    // invoice-first gateways and the payment term
	GroupLive       = "live"       // going live (the project's test mode)
	GroupProvider   = "provider"   // the payment provider's connection (webhook signing secret, API key)
	GroupOperator   = "operator"   // the operator's: name and rate limits (command line only)
)

// Groups lists the groups of the console's settings forms, in page order.
var Groups = []string{GroupSeller, GroupBank, GroupContact, GroupAccounting, GroupPayment, GroupProvider, GroupLive}

// Field is one setting that `o2i project set` and the console's settings
// forms change, named by its JSON name (the form field's name).
type Field struct {
	Name   string // the JSON name: sellerName
	Flag   string // the command line's flag: seller-name
	Group  string
	Kind   string // text, bool, int, list (comma-separated), map (name=number,...), choice, secret
	Secret bool   // write-only: never shown back, never logged, never in the change log
}

// Fields lists the settings in page order.
var Fields = []Field{
	{"sellerName", "seller-name", GroupSeller, "text", false},
	{"sellerStreet", "seller-street", GroupSeller, "text", false},
	{"sellerPostalCode", "seller-postal-code", GroupSeller, "text", false},
	{"sellerCity", "seller-city", GroupSeller, "text", false},
	{"sellerCountry", "seller-country", GroupSeller, "text", false},
	{"sellerVatId", "seller-vat-id", GroupSeller, "text", false},
	{"sellerTaxNumber", "seller-tax-number", GroupSeller, "text", false},
	{"sellerRegistrationId", "seller-registration-id", GroupSeller, "text", false},
	{"invoiceNumberPattern", "invoice-number-pattern", GroupSeller, "text", false},
	{"ossRegistered", "oss-registered", GroupSeller, "bool", false},
	{"sellerIban", "seller-iban", GroupBank, "text", false},
	{"sellerBic", "seller-bic", GroupBank, "text", false},
	{"contactName", "contact-name", GroupContact, "text", false},
	{"contactPhone", "contact-phone", GroupContact, "text", false},
	{"contactEmail", "contact-email", GroupContact, "text", false},
	{"mailFromName", "mail-from-name", GroupContact, "text", false},
	{"mailReplyTo", "mail-reply-to", GroupContact, "text", false},
	{"accounting", "accounting", GroupAccounting, "choice", false},
	{"accountingFrom", "accounting-from", GroupAccounting, "int", false},
	{"chartOfAccounts", "chart-of-accounts", GroupAccounting, "choice", false},
	{"debtors", "debtors", GroupAccounting, "choice", false},
	{"accountOverrides", "accounts", GroupAccounting, "map", false},
	{"datevConsultant", "datev-consultant", GroupAccounting, "int", false},
	{"datevClient", "datev-client", GroupAccounting, "int", false},
	{"invoiceFirstGateways", "invoice-first-gateways", GroupPayment, "list", false},
	{"paymentTermDays", "payment-term-days", GroupPayment, "int", false},
	{"stripeWebhookSecret", "stripe-webhook-secret", GroupProvider, "secret", true},
	{"stripeApiKey", "stripe-api-key", GroupProvider, "secret", true},
	{"testMode", "test-mode", GroupLive, "bool", false},
	{"name", "name", GroupOperator, "text", false},
	{"rateLimitRps", "rate-limit", GroupOperator, "int", false},
	{"rateLimitBurst", "rate-burst", GroupOperator, "int", false},
}

// FieldNamed returns the setting of a JSON name.
func FieldNamed(name string) (Field, bool) {
	for _, f := range Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// FieldsOf lists a group's settings in page order.
func FieldsOf(group string) []Field {
	var out []Field
	for _, f := range Fields {
		if f.Group == group {
			out = append(out, f)
		}
	}
	return out
}

// Value is a setting's current value as a form shows it (and as
// ParseChanges reads it back); a secret's value is "" (never shown back).
func (p Project) Value(name string) string {
	s := p.Settings
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	switch name {
	case "accounting":
		return p.Accounting
	case "accountingFrom":
		return ""
	case "testMode":
		return strconv.FormatBool(p.TestMode)
	case "ossRegistered":
		return strconv.FormatBool(s.OSSRegistered)
	case "name":
		return p.Name
	case "rateLimitRps":
		return strconv.Itoa(p.RateLimitRPS)
	case "rateLimitBurst":
		return strconv.Itoa(p.RateLimitBurst)
	case "paymentTermDays":
		return num(s.PaymentTermDays)
	case "datevConsultant":
		return num(s.DATEVConsultant)
	case "datevClient":
		return num(s.DATEVClient)
	case "invoiceFirstGateways":
		return strings.Join(s.InvoiceFirstGateways, ",")
	case "accountOverrides":
		return formatOverrides(s.AccountOverrides)
	case "stripeWebhookSecret", "stripeApiKey":
		return ""
	}
	if p := textSetting(&s, name); p != nil {
		return *p
	}
	return ""
}

// SecretSet reports whether a secret setting has a value (shown as "set"
// or "not set", never the value).
func (p Project) SecretSet(name string) bool {
	switch name {
	case "stripeWebhookSecret":
		return p.Settings.StripeWebhookSecret != ""
	case "stripeApiKey":
		return p.Settings.StripeAPIKey != ""
	}
	return false
}

// textSetting is the text setting of a JSON name in s (nil: not a text setting).
func textSetting(s *Settings, name string) *string {
	switch name {
	case "sellerName":
		return &s.SellerName
	case "sellerStreet":
		return &s.SellerStreet
	case "sellerPostalCode":
		return &s.SellerPostalCode
	case "sellerCity":
		return &s.SellerCity
	case "sellerCountry":
		return &s.SellerCountry
	case "sellerVatId":
		return &s.SellerVATID
	case "sellerTaxNumber":
		return &s.SellerTaxNumber
	case "sellerIban":
		return &s.SellerIBAN
	case "sellerBic":
		return &s.SellerBIC
	case "sellerRegistrationId":
		return &s.SellerRegistrationID
	case "invoiceNumberPattern":
		return &s.InvoiceNumberPattern
	case "contactName":
		return &s.ContactName
	case "contactPhone":
		return &s.ContactPhone
	case "contactEmail":
		return &s.ContactEmail
	case "mailFromName":
		return &s.MailFromName
	case "mailReplyTo":
		return &s.MailReplyTo
	case "stripeWebhookSecret":
		return &s.StripeWebhookSecret
	case "stripeApiKey":
		return &s.StripeAPIKey
	case "chartOfAccounts":
		return &s.ChartOfAccounts
	case "debtors":
		return &s.Debtors
	}
	return nil
}

// ParseChanges checks settings changes, each a JSON name with its value as
// typed ("" clears a setting), and returns the update that makes them. The
// command line (`o2i project set`) and the console's forms both change
// settings through it, so a refusal is the same apperr validation error
// naming the same field (the JSON name). Pure.
func ParseChanges(values map[string]string) (Update, error) {
	var u Update
	var setters []func(*Settings)
	for _, f := range Fields {
		raw, ok := values[f.Name]
		if !ok {
			continue
		}
		v := strings.TrimSpace(raw)
		switch f.Name {
		case "name":
			if v == "" {
				return Update{}, apperr.Field(f.Name, "name is required")
			}
			u.Name = &v
		case "testMode", "ossRegistered":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Update{}, apperr.Field(f.Name, "true or false, got %q", raw)
			}
			if f.Name == "testMode" {
				u.TestMode = &b
			} else {
				setters = append(setters, func(s *Settings) { s.OSSRegistered = b })
			}
		case "accounting":
			if !ValidAccounting(v) {
				return Update{}, apperr.Field(f.Name, "accounting must be accrual or cash")
			}
			u.Accounting = &v
		case "accountingFrom":
			if v == "" {
				continue
			}
			y, err := strconv.Atoi(v)
			if err != nil || y < 2000 || y > 2999 {
				return Update{}, apperr.Field(f.Name, "a fiscal year YYYY, got %q", raw)
			}
			u.AccountingFrom = &y
		case "rateLimitRps", "rateLimitBurst":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Update{}, apperr.Field(f.Name, "a positive number, got %q", raw)
			}
			if f.Name == "rateLimitRps" {
				u.RateLimitRPS = &n
			} else {
				u.RateLimitBurst = &n
			}
		case "paymentTermDays":
			n, err := number(f.Name, v)
			if err != nil {
				return Update{}, err
			}
			if n < 0 || n > 365 {
				return Update{}, apperr.Field(f.Name, "%d is not from 0 to 365", n)
			}
			setters = append(setters, func(s *Settings) { s.PaymentTermDays = n })
		case "datevConsultant":
			n, err := number(f.Name, v)
			if err != nil {
				return Update{}, err
			}
			if n < 0 || n > 9999999 || (n != 0 && n < 1001) {
				return Update{}, apperr.Field(f.Name, "%d is not from 1001 to 9999999", n)
			}
			setters = append(setters, func(s *Settings) { s.DATEVConsultant = n })
		case "datevClient":
			n, err := number(f.Name, v)
			if err != nil {
				return Update{}, err
			}
			if n < 0 || n > 99999 {
				return Update{}, apperr.Field(f.Name, "%d is not from 1 to 99999", n)
			}
			setters = append(setters, func(s *Settings) { s.DATEVClient = n })
		case "invoiceFirstGateways":
			var gs []string
			for _, g := range strings.Split(v, ",") {
				if g = strings.TrimSpace(g); g != "" {
					gs = append(gs, g)
				}
			}
			setters = append(setters, func(s *Settings) { s.InvoiceFirstGateways = gs })
		case "accountOverrides":
			var overrides map[string]string
			for _, kv := range strings.Split(v, ",") {
				if kv = strings.TrimSpace(kv); kv == "" {
					continue
				}
				name, num, ok := strings.Cut(kv, "=")
				if !ok {
					return Update{}, apperr.Field(f.Name, "%q is not name=number", kv)
				}
				if overrides == nil {
					overrides = map[string]string{}
				}
				overrides[strings.TrimSpace(name)] = strings.TrimSpace(num)
			}
			if _, err := accounting.Standard(accounting.SKR03).With(overrides); err != nil {
				return Update{}, apperr.Field(f.Name, "%v", err)
			}
			setters = append(setters, func(s *Settings) { s.AccountOverrides = overrides })
		case "chartOfAccounts":
			if v != "" {
				c, err := accounting.ParseChart(v)
				if err != nil {
					return Update{}, apperr.Field(f.Name, "%v", err)
				}
				v = string(c)
			}
			setters = append(setters, func(s *Settings) { s.ChartOfAccounts = v })
		case "debtors":
			if v != "" {
				d, err := accounting.ParseDebtors(v)
				if err != nil {
					return Update{}, apperr.Field(f.Name, "%v", err)
				}
				v = d
			}
			setters = append(setters, func(s *Settings) { s.Debtors = v })
		case "mailFromName":
			if err := checkMailFromName(v); err != nil {
				return Update{}, apperr.Field(f.Name, "%v", err)
			}
			setters = append(setters, func(s *Settings) { s.MailFromName = v })
		case "mailReplyTo":
			if err := checkMailAddress(v); err != nil {
				return Update{}, apperr.Field(f.Name, "%v", err)
			}
			setters = append(setters, func(s *Settings) { s.MailReplyTo = v })
		case "invoiceNumberPattern":
			if v != "" {
				if _, err := billing.ParseNumberPattern(v); err != nil {
					return Update{}, apperr.Field(f.Name, "%v", err)
				}
			}
			fallthrough
		default:
			name := f.Name
			if textSetting(&Settings{}, name) == nil {
				return Update{}, fmt.Errorf("setting %s has no rule", name)
			}
			setters = append(setters, func(s *Settings) { *textSetting(s, name) = v })
		}
	}
	if u.AccountingFrom != nil && u.Accounting == nil {
		return Update{}, apperr.Field("accountingFrom", "a fiscal year to change from needs the accounting method")
	}
	if len(setters) > 0 {
		u.Settings = func(s *Settings) {
			for _, set := range setters {
				set(s)
			}
		}
	}
	return u, nil
}

// Bounds of the invoice e-mail's sender settings, in characters.
const (
	MaxMailFromName = 80
	MaxMailAddress  = 254 // RFC 5321's bound of a path
)

// checkMailFromName checks the From header's display name: one line of
// printable text (no CR, LF or other control or bidirectional formatting
// characters, which would forge headers or reorder what the reader sees),
// at most MaxMailFromName characters. "" (none) passes. Pure.
func checkMailFromName(v string) error {
	if !utf8.ValidString(v) {
		return errors.New("the sender name is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(v); n > MaxMailFromName {
		return fmt.Errorf("the sender name has %d characters, at most %d are allowed", n, MaxMailFromName)
	}
	return checkPrintable("the sender name", v)
}

// checkMailAddress checks a bare e-mail address (local@domain, no display
// name), at most MaxMailAddress characters. "" (none) passes. Pure.
func checkMailAddress(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > MaxMailAddress {
		return fmt.Errorf("the address has %d characters, at most %d are allowed", len(v), MaxMailAddress)
	}
	if err := checkPrintable("the address", v); err != nil {
		return err
	}
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v || !strings.Contains(v, "@") {
		return fmt.Errorf("%q is not an e-mail address like name@example.com", v)
	}
	return nil
}

// checkPrintable refuses control characters (CR and LF among them) and
// bidirectional formatting characters in what.
func checkPrintable(what, v string) error {
	for _, r := range v {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("%s must not contain control characters (found %U)", what, r)
		}
	}
	return nil
}

// formatOverrides writes account overrides as name=number,... by name.
func formatOverrides(m map[string]string) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = n + "=" + m[n]
	}
	return strings.Join(names, ",")
}

// number reads a whole number of a setting; "" is 0 (clears it).
func number(field, v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, apperr.Field(field, "a whole number, got %q", v)
	}
	return n, nil
}

// Set changes a project's settings, given by JSON name with their values
// as typed: the one way settings change, from the command line and from
// the console alike. inTx, when not nil, runs in the same transaction with
// the project before and after the change (the console records its change
// log entry there), so both commit or neither does.
func Set(ctx context.Context, pool *pgxpool.Pool, id string, values map[string]string, inTx func(ctx context.Context, tx pgx.Tx, before, after Project) error) (Project, error) {
	u, err := ParseChanges(values)
	if err != nil {
		return Project{}, err
	}
	u.inTx = inTx
	return Apply(ctx, pool, id, u)
}
