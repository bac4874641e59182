package main

import (
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// `o2i project set` refuses a setting with the message the console shows
// next to the form field (both come from internal/project's rules), named
// by the command line's flag.
func TestProjectSetMessagesAreTheConsoles(t *testing.T) {
	pid := testenv.Project(t, testenv.Pool(t), true)
	for _, tc := range []struct{ field, value string }{
		{"paymentTermDays", "400"},
		{"datevConsultant", "5"},
		{"datevClient", "100000"},
		{"accountOverrides", "revenue19=84000"},
		{"chartOfAccounts", "SKR99"},
		{"debtors", "nobody"},
		{"invoiceNumberPattern", "RE-{NOPE}"},
		{"accounting", "cashflow"},
		{"mailFromName", "Shop\r\nBcc: victim@example.com"},
		{"mailReplyTo", "Buchhaltung <b@example.com>"},
	} {
		f, ok := project.FieldNamed(tc.field)
		if !ok {
			t.Fatalf("no setting %s", tc.field)
		}
		_, err := project.ParseChanges(map[string]string{tc.field: tc.value})
		want := apperr.As(err)
		if want == nil || want.Field != tc.field {
			t.Fatalf("%s: the rules give %v", tc.field, err)
		}
		_, err = runCmd(t, "project", "set", "--project", pid, "--"+f.Flag, tc.value)
		if err == nil || !strings.HasPrefix(err.Error(), "--"+f.Flag+": "+want.Message) {
			t.Errorf("--%s %s: %v, want --%s: %s", f.Flag, tc.value, err, f.Flag, want.Message)
		}
	}
	// Every flag of a setting is its JSON name's; the values reach the project.
	out, err := runCmd(t, "project", "set", "--project", pid, "--payment-term-days", "21", "--seller-city", " Köln ", "--oss-registered",
		"--mail-from-name", "Müller Rechnungen", "--mail-reply-to", "b@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"paymentTermDays": 21`) || !strings.Contains(out, `"sellerCity": "Köln"`) || !strings.Contains(out, `"ossRegistered": true`) ||
		!strings.Contains(out, `"mailFromName": "Müller Rechnungen"`) || !strings.Contains(out, `"mailReplyTo": "b@example.com"`) {
		t.Errorf("project set: %s", out)
	}
}
