package billing

import (
	"strings"
)

// FieldError is a validation failure of one input field. Field is the JSON
// path of the order input ("items[0].taxRate", "grossTotalCents",
// "billingAddress.leitweg_id"); the HTTP layer maps it to 422
// validation_failed.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// FieldErrors lists every field error of an order, in input order. errors.As
// with a **FieldError target finds the first.
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return "billing: invalid order: " + strings.Join(parts, "; ")
}

// Unwrap returns the individual field errors.
func (es FieldErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
