package command

import (
	"encoding/json"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/leitweg"
	"github.com/o2i-service/o2i/internal/money"
)

// maxItems bounds the lines of one order.
const maxItems = 1000

// parseOrder validates the body of POST /v1/orders and returns the
// normalised order (defaults applied; catalogue bindings still empty). The
// first rule broken is returned as a 422 validation_failed naming its field.
func parseOrder(body []byte) (event.OrderContent, error) {
	o, err := decodeObject(body)
	if err != nil {
		return event.OrderContent{}, err
	}
	var c event.OrderContent
	if c.OrderNo, err = o.str("orderNo", true); err != nil {
		return c, err
	}
	if len(c.OrderNo) > 200 {
		return c, apperr.Field("orderNo", "orderNo must be at most 200 characters")
	}

	ba, ok, err := o.object("billingAddress")
	if err != nil {
		return c, err
	}
	if !ok {
		return c, apperr.Field("billingAddress", "billingAddress is required (at least country_code, needed for VAT determination)")
	}
	if c.BillingAddress, err = parseAddress(ba); err != nil {
		return c, err
	}
	if sa, ok, err := o.object("shippingAddress"); err != nil {
		return c, err
	} else if ok {
		a, err := parseAddress(sa)
		if err != nil {
			return c, err
		}
		c.ShippingAddress = &a
	}

	items, ok, err := o.array("items")
	if err != nil {
		return c, err
	}
	if !ok || len(items) == 0 {
		return c, apperr.Field("items", "items must hold at least one line")
	}
	if len(items) > maxItems {
		return c, apperr.Field("items", "items must hold at most %d lines", maxItems)
	}
	c.Items = make([]event.Item, len(items))
	for i, v := range items {
		path := atIndex("items", i)
		m, isObj := v.(map[string]any)
		if !isObj {
			return c, typeErr(path, "an object", v)
		}
		if c.Items[i], err = parseItem(obj{m: m, path: path}); err != nil {
			return c, err
		}
	}

	if c.PaymentRef, err = o.str("paymentRef", false); err != nil {
		return c, err
	}
	if c.PaymentGateway, err = o.str("paymentGateway", false); err != nil {
		return c, err
	}
	if c.FinancialStatus, err = o.str("financialStatus", false); err != nil {
		return c, err
	}
	if c.Email, err = o.str("email", false); err != nil {
		return c, err
	}
	if c.Email != "" && !validEmail(c.Email) {
		return c, apperr.Field("email", "email must be a valid e-mail address")
	}
	if c.Currency, err = o.str("currency", false); err != nil {
		return c, err
	}
	if c.Currency == "" {
		c.Currency = "EUR"
	} else if !currencyRE.MatchString(c.Currency) {
		return c, apperr.Field("currency", "currency must be an ISO 4217 code of three upper-case letters, for example EUR")
	}
	if c.RequiresShipping, err = o.boolean("requiresShipping", false); err != nil {
		return c, err
	}

	if sp, ok, err := o.object("service_period"); err != nil {
		return c, err
	} else if ok {
		if c.ServicePeriod, err = parseServicePeriod(sp); err != nil {
			return c, err
		}
	}

	if err := parseShipping(o, &c); err != nil {
		return c, err
	}
	if err := parseCredit(o, &c); err != nil {
		return c, err
	}
	return c, nil
}

func parseAddress(a obj) (event.Address, error) {
	var r event.Address
	var err error
	if r.CountryCode, err = a.str("country_code", true); err != nil {
		return r, err
	}
	if !countryRE.MatchString(r.CountryCode) {
		return r, apperr.Field(a.at("country_code"), "%s must be an ISO 3166-1 alpha-2 code of two upper-case letters, for example DE", a.at("country_code"))
	}
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"name", &r.Name}, {"company_name", &r.CompanyName}, {"vat_id", &r.VATID}, {"street", &r.Street},
		{"additional_address_line", &r.AdditionalAddressLine}, {"postal_code", &r.PostalCode}, {"city", &r.City},
		{"leitweg_id", &r.LeitwegID},
	} {
		if *f.dst, err = a.str(f.key, false); err != nil {
			return r, err
		}
	}
	if r.LeitwegID != "" {
		if why := leitweg.Check(r.LeitwegID); why != "" {
			return r, apperr.Field(a.at("leitweg_id"), "%s is not a valid Leitweg-ID: %s", a.at("leitweg_id"), why)
		}
	}
	return r, nil
}

func parseItem(it obj) (event.Item, error) {
	var r event.Item
	var err error
	if r.Name, err = it.str("name", true); err != nil {
		return r, err
	}
	q, err := it.decimal("quantity")
	if err != nil {
		return r, err
	}
	if q == nil {
		return r, apperr.Field(it.at("quantity"), "%s is required", it.at("quantity"))
	}
	if q.Sign() <= 0 {
		return r, apperr.Field(it.at("quantity"), "%s must be greater than 0", it.at("quantity"))
	}
	if q.Cmp(maxQty) > 0 {
		return r, apperr.Field(it.at("quantity"), "%s must not exceed %s", it.at("quantity"), maxQty)
	}
	r.Quantity = *q
	if r.UnitNetCents, err = it.cents("unitNetCents", 0); err != nil {
		return r, err
	}
	if r.UnitGrossCents, err = it.cents("unitGrossCents", 0); err != nil {
		return r, err
	}
	if r.UnitNetCents == nil && r.UnitGrossCents == nil {
		return r, apperr.Field(it.at("unitNetCents"), "%s: at least one of unitNetCents and unitGrossCents is required", it.path)
	}
	if r.SKU, err = it.str("sku", false); err != nil {
		return r, err
	}
	if r.TaxRate, err = it.rate("taxRate"); err != nil {
		return r, err
	}
	if r.GiftCard, err = it.boolean("giftCard", false); err != nil {
		return r, err
	}
	if r.DiscountNetCents, err = it.cents("discountNetCents", 0); err != nil {
		return r, err
	}
	// productId is any text; a JSON number is taken as its literal text.
	if v, ok := it.get("productId"); ok {
		switch p := v.(type) {
		case string:
			r.ProductID = p
		case json.Number:
			r.ProductID = p.String()
		default:
			return r, typeErr(it.at("productId"), "a string", v)
		}
	}
	return r, nil
}

func parseServicePeriod(sp obj) (*event.ServicePeriod, error) {
	hasStart, hasEnd := sp.has("start_date"), sp.has("end_date")
	switch {
	case !hasStart && !hasEnd:
		return nil, nil
	case !hasStart:
		return nil, apperr.Field(sp.at("start_date"), "service_period needs both start_date and end_date, or neither")
	case !hasEnd:
		return nil, apperr.Field(sp.at("end_date"), "service_period needs both start_date and end_date, or neither")
	}
	start, err := sp.str("start_date", true)
	if err != nil {
		return nil, err
	}
	end, err := sp.str("end_date", true)
	if err != nil {
		return nil, err
	}
	s, ok := isoDate(start)
	if !ok {
		return nil, apperr.Field(sp.at("start_date"), "%s must be an ISO date YYYY-MM-DD", sp.at("start_date"))
	}
	e, ok := isoDate(end)
	if !ok {
		return nil, apperr.Field(sp.at("end_date"), "%s must be an ISO date YYYY-MM-DD", sp.at("end_date"))
	}
	if e.Before(s) {
		return nil, apperr.Field(sp.at("end_date"), "%s must not be before start_date", sp.at("end_date"))
	}
	return &event.ServicePeriod{StartDate: start, EndDate: end}, nil
}

// parseShipping: shippingGrossCents, or shippingNetCents with shippingTaxRate; not both.
func parseShipping(o obj, c *event.OrderContent) error {
	var err error
	if c.ShippingGrossCents, err = o.cents("shippingGrossCents", 0); err != nil {
		return err
	}
	if c.ShippingNetCents, err = o.cents("shippingNetCents", 0); err != nil {
		return err
	}
	if c.ShippingTaxRate, err = o.rate("shippingTaxRate"); err != nil {
		return err
	}
	switch {
	case c.ShippingGrossCents != nil && c.ShippingNetCents != nil:
		return apperr.Field("shippingNetCents", "send shippingGrossCents or shippingNetCents with shippingTaxRate, not both")
	case c.ShippingNetCents != nil && c.ShippingTaxRate == nil:
		return apperr.Field("shippingTaxRate", "shippingTaxRate is required with shippingNetCents")
	case c.ShippingNetCents == nil && c.ShippingTaxRate != nil:
		return apperr.Field("shippingTaxRate", "shippingTaxRate is only used with shippingNetCents")
	}
	return nil
}

// parseCredit: creditRedemptions of type referral_credit, each amount > 0
// with an externalRef; grossTotalCents required with them and not below their sum.
func parseCredit(o obj, c *event.OrderContent) error {
	var err error
	if c.GrossTotalCents, err = o.cents("grossTotalCents", 0); err != nil {
		return err
	}
	crs, ok, err := o.array("creditRedemptions")
	if err != nil || !ok || len(crs) == 0 {
		return err
	}
	if len(crs) > maxItems {
		return apperr.Field("creditRedemptions", "creditRedemptions must hold at most %d entries", maxItems)
	}
	var sum int64
	c.CreditRedemptions = make([]event.CreditRedemption, len(crs))
	for i, v := range crs {
		path := atIndex("creditRedemptions", i)
		m, isObj := v.(map[string]any)
		if !isObj {
			return typeErr(path, "an object", v)
		}
		cr := obj{m: m, path: path}
		r := &c.CreditRedemptions[i]
		if r.Type, err = cr.str("type", true); err != nil {
			return err
		}
		if r.Type != "referral_credit" {
			return apperr.Field(cr.at("type"), "%s must be referral_credit", cr.at("type"))
		}
		amt, err := cr.cents("amountCents", 1)
		if err != nil {
			return err
		}
		if amt == nil {
			return apperr.Field(cr.at("amountCents"), "%s is required", cr.at("amountCents"))
		}
		r.AmountCents = *amt
		sum += *amt
		if r.ExternalRef, err = cr.str("externalRef", true); err != nil {
			return err
		}
	}
	if c.GrossTotalCents == nil {
		return apperr.Field("grossTotalCents", "grossTotalCents is required when creditRedemptions is sent")
	}
	if money.Cents(sum) > money.Cents(*c.GrossTotalCents) {
		return apperr.Field("creditRedemptions", "the sum of creditRedemptions amountCents (%d) exceeds grossTotalCents (%d)", sum, *c.GrossTotalCents)
	}
	return nil
}
