package main

import (
	"strings"
	"testing"
	"time"
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
		{"trace collector", "O2I_OTLP_ENDPOINT", "http://collector:4318", ""},
		{"trace collector without scheme", "O2I_OTLP_ENDPOINT", "collector:4318", "O2I_OTLP_ENDPOINT"},
		{"invoicer workers zero", "O2I_INVOICER_WORKERS", "0", "O2I_INVOICER_WORKERS"},
		{"invoicer workers word", "O2I_INVOICER_WORKERS", "many", "O2I_INVOICER_WORKERS"},
		{"mail concurrency", "O2I_MAIL_CONCURRENCY", "32", ""},
		{"mail concurrency zero", "O2I_MAIL_CONCURRENCY", "0", "O2I_MAIL_CONCURRENCY"},
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
				if want := map[string]int{"O2I_MAIL_CONCURRENCY": 32}[tc.variable]; want == 0 && c.MailConcurrency != 8 || want > 0 && c.MailConcurrency != want {
					t.Errorf("mail concurrency %d", c.MailConcurrency)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestLoadConfigPublicLimits: the limits of the public routes with a body
// have defaults and are checked at start, naming the variable.
func TestLoadConfigPublicLimits(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(func(string) string { return "" })
	if err != nil || c.PublicBodyTimeout != 5*time.Second || c.PublicBodies != 1024 || c.PublicPerAddr != 16 {
		t.Errorf("defaults: body timeout %v, bodies %d, per address %d (%v); want 5s, 1024, 16", c.PublicBodyTimeout, c.PublicBodies, c.PublicPerAddr, err)
	}
	for _, tc := range []struct{ variable, value string }{
		{"O2I_PUBLIC_BODY_TIMEOUT", "500ms"},
		{"O2I_PUBLIC_BODY_TIMEOUT", "5"},
		{"O2I_PUBLIC_BODIES", "0"},
		{"O2I_PUBLIC_PER_ADDR", "-1"},
		{"O2I_PUBLIC_PER_ADDR", "many"},
	} {
		_, err := loadConfig(func(name string) string {
			if name == tc.variable {
				return tc.value
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), tc.variable) {
			t.Errorf("%s=%s: error %v, want one naming the variable", tc.variable, tc.value, err)
		}
	}
}
