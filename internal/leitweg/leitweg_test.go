package leitweg

import "testing"

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want bool
	}{
		{"04011000-1234512345-06", true},
		{"991-33333TEST-33", true},
		{"04011000-900X999-08", true},
		{"992-90009-96", true},
		{"04011000-1234512345-07", false}, // wrong check digits
		{"991-33333TEST-34", false},
		{"992-90009-69", false},
		{"04011000-1234512345", false}, // no check digits
		{"0-12345-06", false},          // coarse address too short
		{"1234567890123-06", false},    // coarse address too long
		{"991-33333test-33", false},    // lower case
		{"991--33", false},
		{"", false},
		{" 992-90009-96", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			if got := Valid(tt.id); got != tt.want {
				t.Errorf("Valid(%q) = %v, want %v (%s)", tt.id, got, tt.want, Check(tt.id))
			}
		})
	}
}

func TestCheckDigits(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"04011000-1234512345": "06",
		"991-33333TEST":       "33",
		"04011000-900X999":    "08",
		"992-90009":           "96",
	} {
		if got := CheckDigits(body); got != want {
			t.Errorf("CheckDigits(%q) = %s, want %s", body, got, want)
		}
		if !Valid(body + "-" + CheckDigits(body)) {
			t.Errorf("%s-%s not valid", body, CheckDigits(body))
		}
	}
}
