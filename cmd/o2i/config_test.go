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
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one naming %s", err, tc.wantErr)
			}
		})
	}
}
