package account

import (
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

func TestCheckCode(t *testing.T) {
	const secret = "JBSWY3DPEHPK3PXP"
	now := time.Date(2026, 11, 25, 12, 0, 15, 0, time.UTC)
	step := now.Unix() / totpPeriod
	code := func(at time.Time) string {
		c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name string
		code string
		last int64
		ok   bool
		step int64
	}{
		{"current", code(now), 0, true, step},
		{"with spaces", code(now)[:3] + " " + code(now)[3:], 0, true, step},
		{"step before (drift)", code(now.Add(-30 * time.Second)), 0, true, step - 1},
		{"step after (drift)", code(now.Add(30 * time.Second)), 0, true, step + 1},
		{"two steps old", code(now.Add(-60 * time.Second)), 0, false, 0},
		{"used already", code(now), step, false, 0},
		{"older than the last used", code(now.Add(-30 * time.Second)), step, false, 0},
		{"wrong", "000000", 0, code(now) == "000000", step},
		{"too short", "12345", 0, false, 0},
	} {
		st, ok := checkCode(secret, tc.code, now, tc.last)
		if ok != tc.ok || (ok && st != tc.step) {
			t.Errorf("%s: step %d ok %v, want %d %v", tc.name, st, ok, tc.step, tc.ok)
		}
	}
}

func TestRecoveryCodes(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		c := recoveryCode()
		if len(c) != 11 || c[5] != '-' || seen[c] {
			t.Fatalf("recovery code %q", c)
		}
		seen[c] = true
		if normalizeRecovery(" "+c[:5]+"-"+c[6:]+" ") != c[:5]+c[6:] {
			t.Errorf("normalize %q", c)
		}
	}
}
