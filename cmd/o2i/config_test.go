package main

import (
	"strings"
	"testing"
)

// TestLoadConfigOutbound: the SMTP relay, the sender and the payment
// provider's base URL are checked at start, naming the variable.
func TestLoadConfigOutbound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, variable, value, wantErr string
	}{
		{"defaults", "", "", ""},
		{"relay with credentials", "O2I_SMTP_URL", "smtp://user:secret@smtp.example.com:587", ""},
		{"relay scheme", "O2I_SMTP_URL", "http://smtp.example.com", "O2I_SMTP_URL"},
		{"sender", "O2I_MAIL_FROM", "no address", "O2I_MAIL_FROM"},
		{"provider base URL", "O2I_STRIPE_API_BASE", "api.stripe.com", "O2I_STRIPE_API_BASE"},
		{"invoicer workers", "O2I_INVOICER_WORKERS", "24", ""},
		{"invoicer workers zero", "O2I_INVOICER_WORKERS", "0", "O2I_INVOICER_WORKERS"},
		{"invoicer workers word", "O2I_INVOICER_WORKERS", "many", "O2I_INVOICER_WORKERS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := loadConfig(func(name string) string {
				if name == tc.variable {
					return tc.value
				}
				return ""
			})
			if tc.wantErr == "" {
				if err != nil || c.SMTPURL == "" || c.StripeAPIBase == "" {
					t.Errorf("config %+v, %v", c, err)
				}
				if want := map[string]int{"O2I_INVOICER_WORKERS": 24}[tc.variable]; want == 0 && c.InvoicerWorkers != 16 || want > 0 && c.InvoicerWorkers != want {
					t.Errorf("invoicer workers %d", c.InvoicerWorkers)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one naming %s", err, tc.wantErr)
			}
		})
	}
}
