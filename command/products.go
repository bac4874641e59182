package command

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/catalog"
)

// ConfigureProduct: PUT /v1/products/{productId}. Sets how a product's
// revenue is recognised (spec: service_period rule 5): {"revenueRecognition":
// {"periodMonths": N}} defers it over N months from the date of supply (a
// SaaS default), {"revenueRecognition": null} recognises it at the date of
// supply. Either releases the product's orders held as
// product_without_revenue_recognition under accrual accounting: the
// invoicer's reconciler invoices them within seconds.

// maxPeriodMonths bounds a product's default service period.
const maxPeriodMonths = 120

const productDescription = `Sets a product's revenue recognition. {"revenueRecognition":{"periodMonths":N}} (1 to 120) defers the revenue over N ` +
	`months (a SaaS default, used when an order sends no service_period); {"revenueRecognition":null} recognises it at the date of supply. ` +
	`Under accrual accounting an order of services without service_period whose products have no revenue recognition is held ` +
	`(task product_without_revenue_recognition, no invoice number); setting it releases the held orders, which are invoiced within seconds. ` +
	`{productId} is the caller's article id of the order lines, or the product's catalogue id from GET /v1/products (how products matched by sku or name, ` +
	`which have no productId, are configured); a product exists once an order line named it, else 404 product_not_found. ` +
	`Repeating the same PUT changes nothing (idempotent by nature; no Idempotency-Key needed).`

// parseProductSettings reads the body of PUT /v1/products/{productId}.
func parseProductSettings(body []byte) (catalog.Settings, error) {
	o, err := decodeObject(body)
	if err != nil {
		return catalog.Settings{}, err
	}
	v, present := o.m["revenueRecognition"]
	if !present {
		return catalog.Settings{}, apperr.Field("revenueRecognition", "revenueRecognition is required: {\"periodMonths\": N} or null")
	}
	if v == nil {
		return RevenueRecognitionSettings(nil)
	}
	rr, _, err := o.object("revenueRecognition")
	if err != nil {
		return catalog.Settings{}, err
	}
	months, err := rr.cents("periodMonths", 1)
	if err != nil {
		return catalog.Settings{}, err
	}
	if months == nil || *months > maxPeriodMonths {
		return catalog.Settings{}, apperr.Field(rr.at("periodMonths"), "%s must be a whole number of months from 1 to %d", rr.at("periodMonths"), maxPeriodMonths)
	}
	n := int(*months)
	return RevenueRecognitionSettings(&n)
}

// RevenueRecognitionSettings are the catalogue settings of a revenue
// recognition: deferred over periodMonths (1 to 120), or at the date of
// supply when periodMonths is nil.
func RevenueRecognitionSettings(periodMonths *int) (catalog.Settings, error) {
	if periodMonths == nil {
		immediate, none := catalog.RecognizeImmediately, 0
		return catalog.Settings{RevenueRecognition: &immediate, DefaultPeriodMonths: &none}, nil
	}
	if *periodMonths < 1 || *periodMonths > maxPeriodMonths {
		return catalog.Settings{}, apperr.Field("revenueRecognition.periodMonths", "revenueRecognition.periodMonths must be a whole number of months from 1 to %d", maxPeriodMonths)
	}
	saas := catalog.RecognizeSaaS
	return catalog.Settings{RevenueRecognition: &saas, DefaultPeriodMonths: periodMonths}, nil
}

// ConfigureProduct stores the settings of the product that ref names
// (PUT /v1/products/{productId} and o2i product set): the caller's productId
// of its order lines, else its catalogue id (GET /v1/products), which is how
// products matched by sku or name are addressed.
func ConfigureProduct(ctx context.Context, pool *pgxpool.Pool, projectID, ref string, settings catalog.Settings) (ProductResult, error) {
	p, err := catalog.FindByProductID(ctx, pool, projectID, ref)
	if apperr.KindOf(err) == apperr.NotFound {
		if byID, gerr := catalog.Get(ctx, pool, projectID, ref); gerr == nil {
			p, err = byID, nil
		}
	}
	if err != nil {
		return ProductResult{}, err
	}
	if p, err = catalog.Configure(ctx, pool, projectID, p.ID, settings); err != nil {
		return ProductResult{}, err
	}
	return ProductOf(p), nil
}

// ProductOf is the API's view of a catalogue product.
func ProductOf(p catalog.Product) ProductResult {
	res := ProductResult{ID: p.ID, ProductID: p.ExternalID, MatchedBy: p.MatchKind, SKU: p.SKU, Name: p.Name}
	if p.RevenueRecognition != "" {
		res.RevenueRecognition = &RevenueRecognition{Mode: p.RevenueRecognition, PeriodMonths: p.DefaultPeriodMonths}
	}
	return res
}
