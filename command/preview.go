package command

import (
	"errors"
	"fmt"
	"time"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/render"
)

// engineError turns the invoice engine's field errors into the 422 the API
// answers (the first one, with its exact field path).
func engineError(err error) error {
	var fe billing.FieldErrors
	if errors.As(err, &fe) && len(fe) > 0 {
		return apperr.Field(fe[0].Field, "%s", fe[0].Message)
	}
	return err
}

// Preview computes the documents an order body would produce, with exactly
// the validation of POST /v1/orders, and renders their CII XML: numbered
// PREVIEW-<year>-0 (one number per document), issued on day, supplied on day
// (goods) or paid on day (services without period). Nothing is stored.
func Preview(body []byte, seller billing.Seller, day time.Time) ([]render.Document, error) {
	c, err := parseOrder(body)
	if err != nil {
		return nil, err
	}
	o := orders.BillingOrder(c, nil)
	if err := billing.Validate(o, seller); err != nil {
		return nil, engineError(err)
	}
	seller.TestMode = false // PREVIEW numbers are of no range
	numbers := make([]string, billing.Documents(o))
	for i := range numbers {
		numbers[i] = fmt.Sprintf("PREVIEW-%d-%d", day.Year(), i)
	}
	docs, err := render.Preview(o, seller, billing.Context{IssueDate: day, SupplyDate: day, PaymentDate: day, Numbers: numbers})
	if err != nil {
		return nil, engineError(err)
	}
	return docs, nil
}
