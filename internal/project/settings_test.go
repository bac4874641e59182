package project

import (
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/apperr"
)

// The rules of a settings change, as the command line and the console
// give them: the refused field by its JSON name.
func TestParseChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]string
		field  string // "" = accepted
		check  func(Project) bool
	}{
		{"text trimmed", map[string]string{"sellerName": "  Muster GmbH "}, "", func(p Project) bool { return p.Settings.SellerName == "Muster GmbH" }},
		{"empty clears", map[string]string{"contactPhone": ""}, "", func(p Project) bool { return p.Settings.ContactPhone == "" }},
		{"term in range", map[string]string{"paymentTermDays": "30"}, "", func(p Project) bool { return p.Settings.PaymentTermDays == 30 }},
		{"term too long", map[string]string{"paymentTermDays": "366"}, "paymentTermDays", nil},
		{"term negative", map[string]string{"paymentTermDays": "-1"}, "paymentTermDays", nil},
		{"term not a number", map[string]string{"paymentTermDays": "ten"}, "paymentTermDays", nil},
		{"gateways", map[string]string{"invoiceFirstGateways": " manual, invoice ,,"}, "", func(p Project) bool {
			return strings.Join(p.Settings.InvoiceFirstGateways, "|") == "manual|invoice"
		}},
		{"consultant too small", map[string]string{"datevConsultant": "1000"}, "datevConsultant", nil},
		{"consultant cleared", map[string]string{"datevConsultant": "0"}, "", func(p Project) bool { return p.Settings.DATEVConsultant == 0 }},
		{"client too large", map[string]string{"datevClient": "100000"}, "datevClient", nil},
		{"accounts", map[string]string{"accountOverrides": "revenue19=8400"}, "", func(p Project) bool { return p.Settings.AccountOverrides["revenue19"] == "8400" }},
		{"account of five digits", map[string]string{"accountOverrides": "revenue19=84000"}, "accountOverrides", nil},
		{"account without number", map[string]string{"accountOverrides": "revenue19"}, "accountOverrides", nil},
		{"chart", map[string]string{"chartOfAccounts": "skr04"}, "", func(p Project) bool { return p.Settings.ChartOfAccounts == "SKR04" }},
		{"unknown chart", map[string]string{"chartOfAccounts": "SKR99"}, "chartOfAccounts", nil},
		{"debtors", map[string]string{"debtors": "nobody"}, "debtors", nil},
		{"number pattern", map[string]string{"invoiceNumberPattern": "RE-{NOPE}"}, "invoiceNumberPattern", nil},
		{"bool", map[string]string{"ossRegistered": "maybe"}, "ossRegistered", nil},
		{"test mode", map[string]string{"testMode": "false"}, "", nil},
		{"accounting method", map[string]string{"accounting": "cashflow"}, "accounting", nil},
		{"year without method", map[string]string{"accountingFrom": "2027"}, "accountingFrom", nil},
		{"not a year", map[string]string{"accounting": "cash", "accountingFrom": "27"}, "accountingFrom", nil},
		{"rate limit", map[string]string{"rateLimitRps": "0"}, "rateLimitRps", nil},
		{"name required", map[string]string{"name": " "}, "name", nil},
		{"secret trimmed", map[string]string{"stripeApiKey": " rk_test_x\n"}, "", func(p Project) bool { return p.Settings.StripeAPIKey == "rk_test_x" }},
		{"sender name", map[string]string{"mailFromName": " Muster Handel Rechnungen "}, "", func(p Project) bool { return p.Settings.MailFromName == "Muster Handel Rechnungen" }},
		{"sender name non-ASCII", map[string]string{"mailFromName": "Müller & Söhne, \"Rechnung\""}, "", func(p Project) bool { return p.Settings.MailFromName == `Müller & Söhne, "Rechnung"` }},
		{"sender name cleared", map[string]string{"mailFromName": ""}, "", func(p Project) bool { return p.Settings.MailFromName == "" }},
		{"sender name at the bound", map[string]string{"mailFromName": strings.Repeat("ä", MaxMailFromName)}, "", nil},
		{"sender name too long", map[string]string{"mailFromName": strings.Repeat("a", MaxMailFromName+1)}, "mailFromName", nil},
		{"sender name with CR LF", map[string]string{"mailFromName": "Shop\r\nBcc: victim@example.com"}, "mailFromName", nil},
		{"sender name with LF", map[string]string{"mailFromName": "Shop\nX"}, "mailFromName", nil},
		{"sender name with tab", map[string]string{"mailFromName": "Shop\tX"}, "mailFromName", nil},
		{"sender name with NUL", map[string]string{"mailFromName": "Shop\x00"}, "mailFromName", nil},
		{"sender name with DEL", map[string]string{"mailFromName": "Shop\x7f"}, "mailFromName", nil},
		{"sender name with C1 control", map[string]string{"mailFromName": "Shop\u0085X"}, "mailFromName", nil},
		{"sender name with bidi override", map[string]string{"mailFromName": "Shop\u202eX"}, "mailFromName", nil},
		{"sender name not UTF-8", map[string]string{"mailFromName": "Shop\xff"}, "mailFromName", nil},
		{"reply address", map[string]string{"mailReplyTo": " buchhaltung@example.com "}, "", func(p Project) bool { return p.Settings.MailReplyTo == "buchhaltung@example.com" }},
		{"reply address cleared", map[string]string{"mailReplyTo": ""}, "", nil},
		{"reply address with name", map[string]string{"mailReplyTo": "Buchhaltung <b@example.com>"}, "mailReplyTo", nil},
		{"reply address not one", map[string]string{"mailReplyTo": "buchhaltung"}, "mailReplyTo", nil},
		{"reply address two", map[string]string{"mailReplyTo": "a@example.com, b@example.com"}, "mailReplyTo", nil},
		{"reply address with CR LF", map[string]string{"mailReplyTo": "a@example.com\r\nBcc: b@example.com"}, "mailReplyTo", nil},
		{"reply address too long", map[string]string{"mailReplyTo": strings.Repeat("a", 250) + "@example.com"}, "mailReplyTo", nil},
	} {
		u, err := ParseChanges(tc.values)
		if tc.field != "" {
			if e := apperr.As(err); e == nil || e.Field != tc.field || e.Kind != apperr.Validation {
				t.Errorf("%s: %v, want a validation error naming %s", tc.name, err, tc.field)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.check != nil {
			var p Project
			if u.Settings != nil {
				u.Settings(&p.Settings)
			}
			if !tc.check(p) {
				t.Errorf("%s: not applied: %+v", tc.name, p.Settings)
			}
		}
	}
}

// Every setting's form value reads back as what it is: a stored project
// shown in a form and sent unchanged changes nothing.
func TestValueRoundTrip(t *testing.T) {
	p := Project{Name: "Shop", Accounting: Cash, RateLimitRPS: 5, RateLimitBurst: 10, Settings: Settings{
		SellerName: "Muster", InvoiceFirstGateways: []string{"manual", "invoice"}, PaymentTermDays: 21,
		AccountOverrides: map[string]string{"revenue19": "8400", "payments": "1200"}, DATEVClient: 7, ChartOfAccounts: "SKR04",
		StripeAPIKey: "rk_live_secret", OSSRegistered: true, MailFromName: "Muster Handel", MailReplyTo: "b@example.com"}}
	values := map[string]string{}
	for _, f := range Fields {
		if f.Secret || f.Name == "accountingFrom" {
			if p.Value(f.Name) != "" {
				t.Errorf("%s is shown back", f.Name)
			}
			continue
		}
		values[f.Name] = p.Value(f.Name)
	}
	u, err := ParseChanges(values)
	if err != nil {
		t.Fatal(err)
	}
	var q Project
	q.Settings.StripeAPIKey = p.Settings.StripeAPIKey
	u.Settings(&q.Settings)
	for _, f := range Fields {
		if f.Group == GroupOperator || f.Name == "accounting" || f.Name == "testMode" {
			continue
		}
		if q.Value(f.Name) != p.Value(f.Name) {
			t.Errorf("%s: %q read back as %q", f.Name, p.Value(f.Name), q.Value(f.Name))
		}
	}
	if !p.SecretSet("stripeApiKey") || p.SecretSet("stripeWebhookSecret") {
		t.Error("SecretSet")
	}
}
