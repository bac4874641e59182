package command

import (
	"encoding/json"
	"strings"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/leitweg"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/vatid"
)

// The size of one order. Every order.* event carries the whole order (its
// content, event.Order), and the relay must publish it as one Kafka message:
// the broker takes at most 1 MiB. Worst case, counted as encoding/json writes
// the content (a character takes up to 6 bytes there: <, > and & become
// \u003c, control characters \u00XX):
//
//   - one line: name 500, sku 200 and productId 200 characters → at most
//     5,400 bytes of text, plus about 400 bytes of keys, numbers (quantity
//     ≤ 20 digits, three amounts ≤ 14 digits, a rate), giftCard and the
//     catalogue product's UUID: ≈ 5.8 KB;
//   - everything else: two addresses of ≤ 1,648 characters (≈ 20 KB), the
//     top-level texts (≈ 6.3 KB), ≤ 100 credit redemptions of ≈ 1.3 KB
//     (≈ 130 KB), the event's head with trackingNumber (≈ 2 KB) and its
//     envelope (≈ 0.5 KB): ≈ 160 KB.
//
// So the per-field limits alone allow 1,000 lines × 5.8 KB ≈ 5.8 MB, and the
// 1 MiB body limit does not help either (the encoding can be up to six times
// the body, and absent fields such as giftCard are written too). Therefore
// the encoded content itself is bounded as well: at most maxOrderJSONBytes
// (512 KiB), which makes an order event at most ≈ 515 KiB, half of the
// broker's limit, whatever the caller sends. 1,000 lines with names of
// about 300 plain characters still fit.
const (
	maxItems             = 1000
	maxCreditRedemptions = 100
	maxOrderJSONBytes    = 512 << 10
)

// parseOrder validates the body of POST /v1/orders and returns the
// normalised order (defaults applied; catalogue bindings still empty). The
// first rule broken is returned as a 422 validation_failed naming its field.
func parseOrder(body []byte) (event.OrderContent, error) {
	o, err := decodeObject(body)
	if err != nil {
		return event.OrderContent{}, err
	}
	var c event.OrderContent
	if c.OrderNo, err = o.id("orderNo", true); err != nil {
		return c, err
	}

	ba, ok, err := o.object("billingAddress")
	if err != nil {
		return c, err
	}
	if !ok {
		// The country is what is missing first: it decides the VAT (spec: Address).
		return c, apperr.Field("billingAddress.country_code", "billingAddress.country_code is required: send billingAddress with at least country_code, needed for VAT determination")
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

	if c.PaymentRef, err = o.id("paymentRef", false); err != nil {
		return c, err
	}
	if c.PaymentGateway, err = o.id("paymentGateway", false); err != nil {
		return c, err
	}
	if c.FinancialStatus, err = o.text("financialStatus", false, maxIDLength); err != nil {
		return c, err
	}
	if c.Email, err = o.text("email", false, maxEmailLength); err != nil {
		return c, err
	}
	if c.Email != "" && !validEmail(c.Email) {
		return c, apperr.Field("email", "email must be a valid e-mail address")
	}
	if c.PaymentGateway == orders.GatewayProviderTransfer && c.Email == "" {
		return c, apperr.Field("email", "an order paid by bank transfer through the payment provider (paymentGateway provider_transfer) needs the customer's email")
	}
	if c.Currency, err = o.text("currency", false, maxCurrencyLength); err != nil {
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
	return c, checkOrderSize(&c)
}

// checkOrderSize refuses an order whose content encodes to more than
// maxOrderJSONBytes (see there). A cheap upper bound settles almost every
// order; only a large one is encoded to measure it.
func checkOrderSize(c *event.OrderContent) error {
	const perItem, perRedemption, rest = 400, 100, 2000 // bytes of keys, numbers and punctuation, generously
	n := rest + len(c.Items)*perItem + len(c.CreditRedemptions)*perRedemption
	texts := func(ss ...string) {
		for _, s := range ss {
			n += 6 * len(s) // no byte encodes to more than 6
		}
	}
	for _, a := range []*event.Address{&c.BillingAddress, c.ShippingAddress} {
		if a != nil {
			texts(a.CountryCode, a.Name, a.CompanyName, a.VATID, a.Street, a.AdditionalAddressLine, a.PostalCode, a.City, a.LeitwegID)
		}
	}
	for i := range c.Items {
		texts(c.Items[i].Name, c.Items[i].SKU, c.Items[i].ProductID)
	}
	for i := range c.CreditRedemptions {
		texts(c.CreditRedemptions[i].Type, c.CreditRedemptions[i].ExternalRef)
	}
	texts(c.OrderNo, c.PaymentRef, c.PaymentGateway, c.Currency, c.FinancialStatus, c.Email)
	if n <= maxOrderJSONBytes {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	size := len(b) + len(c.Items)*36 // each line's catalogue product UUID, bound later
	if size <= maxOrderJSONBytes {
		return nil
	}
	// The lines are what can make an order this large: everything else
	// together stays below about 160 KB.
	return apperr.Field("items", "the order is too large: it encodes to %d bytes, at most %d are accepted; send fewer or shorter lines", size, maxOrderJSONBytes)
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
		max int
	}{
		{"name", &r.Name, maxLineLength}, {"company_name", &r.CompanyName, maxLineLength},
		{"vat_id", &r.VATID, maxVATIDLength}, {"street", &r.Street, maxLineLength},
		{"additional_address_line", &r.AdditionalAddressLine, maxLineLength},
		{"postal_code", &r.PostalCode, maxPostalLength}, {"city", &r.City, maxLineLength},
		{"leitweg_id", &r.LeitwegID, maxLeitwegLength},
	} {
		if *f.dst, err = a.text(f.key, false, f.max); err != nil {
			return r, err
		}
	}
	if r.LeitwegID != "" {
		if why := leitweg.Check(r.LeitwegID); why != "" {
			return r, apperr.Field(a.at("leitweg_id"), "%s is not a valid Leitweg-ID: %s", a.at("leitweg_id"), why)
		}
	}
	return r, checkVATID(a.at("vat_id"), r.CountryCode, r.VATID)
}

// checkVATID refuses a VAT id that cannot be one: on an address in an EU
// member state it must be a VAT id of a member state (EL for Greece) or of
// Northern Ireland (XI), by the issuing state's syntax, and so must any
// value with Northern Ireland's prefix XI. Spaces, dots and hyphens do not
// count (the value is stored as sent; the invoice shows it normalised). On
// an address outside the EU the value is the buyer's identifier there (a
// Swiss UID, a UK VAT number), kept as sent: it appears on the invoice and
// never zero-rates a sale. A value of only spaces, dots and hyphens is no
// VAT id.
func checkVATID(path, country, raw string) error {
	n := vatid.Normalize(raw)
	if n == "" || !vatid.IsMemberState(country) && !strings.HasPrefix(n, "XI") {
		return nil
	}
	if _, err := vatid.Parse(n); err != nil {
		return apperr.Field(path, "%s %q %v", path, raw, err)
	}
	return nil
}

func parseItem(it obj) (event.Item, error) {
	var r event.Item
	var err error
	if r.Name, err = it.text("name", true, maxItemNameLength); err != nil {
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
	// The line amount is bounded like every amount (see maxCents), so that
	// no product or sum of the order can overflow.
	for _, p := range []struct {
		key   string
		price *int64
	}{{"unitNetCents", r.UnitNetCents}, {"unitGrossCents", r.UnitGrossCents}} {
		if p.price == nil {
			continue
		}
		if amt, err := money.Mul(r.Quantity, money.Cents(*p.price)); err != nil || amt > maxCents {
			return r, apperr.Field(it.at("quantity"), "%s × %s (the line amount) must not exceed %d cents",
				it.at("quantity"), it.at(p.key), int64(maxCents))
		}
	}
	if r.SKU, err = it.id("sku", false); err != nil {
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
	if err := it.maxLen("productId", r.ProductID, maxIDLength); err != nil {
		return r, err
	}
	return r, it.checkIdentifier("productId", r.ProductID)
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
	if len(crs) > maxCreditRedemptions {
		return apperr.Field("creditRedemptions", "creditRedemptions must hold at most %d entries", maxCreditRedemptions)
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
		if r.Type, err = cr.text("type", true, maxIDLength); err != nil {
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
		if r.ExternalRef, err = cr.id("externalRef", true); err != nil {
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
