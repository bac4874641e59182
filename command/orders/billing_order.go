package orders

import (
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/money"
)

// ProductDefaults are a catalogue product's invoicing defaults.
type ProductDefaults struct {
	TaxRate      *money.Decimal // used when a line sends no taxRate
	PeriodMonths int            // default service period (SaaS); 0: none
}

// BillingOrder maps a stored order to the invoice engine's input.
// products holds the catalogue's defaults per catalogue product.
func BillingOrder(c event.OrderContent, products map[string]ProductDefaults) billing.Order {
	o := billing.Order{
		OrderNo: c.OrderNo, BillingAddress: billingAddress(c.BillingAddress), PaymentRef: c.PaymentRef,
		PaymentGateway: c.PaymentGateway, FinancialStatus: c.FinancialStatus, Email: c.Email, Currency: c.Currency,
		RequiresShipping: c.RequiresShipping, ShippingGrossCents: c.ShippingGrossCents, ShippingNetCents: c.ShippingNetCents,
		ShippingTaxRate: c.ShippingTaxRate, GrossTotalCents: c.GrossTotalCents,
	}
	if c.ShippingAddress != nil {
		a := billingAddress(*c.ShippingAddress)
		o.ShippingAddress = &a
	}
	for _, it := range c.Items {
		bi := billing.Item{
			Name: it.Name, Quantity: it.Quantity, UnitNetCents: it.UnitNetCents, UnitGrossCents: it.UnitGrossCents,
			SKU: it.SKU, TaxRate: it.TaxRate, GiftCard: it.GiftCard, DiscountNetCents: it.DiscountNetCents, ProductID: it.ProductID,
		}
		if d, ok := products[it.CatalogProductID]; ok {
			bi.ProductTaxRate, bi.DefaultPeriodMonths = d.TaxRate, d.PeriodMonths
		}
		o.Items = append(o.Items, bi)
	}
	if p := c.ServicePeriod; p != nil {
		start, err1 := time.Parse(time.DateOnly, p.StartDate)
		end, err2 := time.Parse(time.DateOnly, p.EndDate)
		if err1 == nil && err2 == nil {
			o.ServicePeriod = &billing.Period{Start: start, End: end}
		}
	}
	for _, r := range c.CreditRedemptions {
		o.CreditRedemptions = append(o.CreditRedemptions, billing.CreditRedemption{Type: r.Type, AmountCents: r.AmountCents, ExternalRef: r.ExternalRef})
	}
	return o
}

func billingAddress(a event.Address) billing.Address {
	return billing.Address{
		CountryCode: a.CountryCode, Name: a.Name, CompanyName: a.CompanyName, VATID: a.VATID, Street: a.Street,
		AdditionalAddressLine: a.AdditionalAddressLine, PostalCode: a.PostalCode, City: a.City, LeitwegID: a.LeitwegID,
	}
}
