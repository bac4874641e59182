package billing

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/money"
)

// Names of the generated lines.
const (
	ShippingLineName = "Versandkosten"
	unitPiece        = "C62" // UN/ECE Rec 20: one
	priceMaxScale    = 6     // decimals of a derived unit net price
)

// Documents returns how many documents Compute makes of o, which is how many
// invoice numbers Context.Numbers must hold: one for the taxed invoice (when
// o has a line that is not a gift card, or shipping), one for the sale of
// gift cards (when o has gift-card lines).
func Documents(o Order) int {
	taxed, vouchers := false, false
	for _, it := range o.Items {
		if it.GiftCard {
			vouchers = true
		} else {
			taxed = true
		}
	}
	if hasShipping(&o) {
		taxed = true
	}
	n := 0
	if taxed {
		n++
	}
	if vouchers {
		n++
	}
	return n
}

func hasShipping(o *Order) bool {
	return (o.ShippingGrossCents != nil && *o.ShippingGrossCents != 0) ||
		(o.ShippingNetCents != nil && *o.ShippingNetCents != 0)
}

// Validate checks the rules of an order that need the engine: the VAT rates
// allowed at the place of supply (items[i].taxRate, shippingTaxRate), the
// agreement of grossTotalCents with the computed amount payable (no
// tolerance), credit redemptions not exceeding it, a formally valid
// Leitweg-ID, and what a legally valid invoice needs from the order. It
// computes the documents as Compute would (with placeholder numbers) and
// checks their Invariants, so an order it accepts is one the engine can
// bill. It returns nil or FieldErrors: an amount the engine cannot bill
// (out of range, or an invariant that does not hold) is a FieldError on the
// input it comes from.
func Validate(o Order, s Seller) error {
	pr, err := prepare(&o, &s)
	if err == nil {
		_, err = pr.number(&Context{Numbers: validationNumbers(&s)})
	}
	if err == nil {
		return nil
	}
	var fe FieldErrors
	if errors.As(err, &fe) {
		return fe
	}
	field, msg := "items", err.Error()
	var ie *InvariantError
	if errors.As(err, &ie) {
		field, msg = ie.Field, ie.Error()
	}
	return FieldErrors{{Field: field, Message: "cannot be invoiced: " + msg}}
}

// validationNumbers stand in for invoice numbers when an order is only
// validated: one per document, from the seller's range.
func validationNumbers(s *Seller) []string {
	if s.TestMode {
		return []string{"TEST-0000-VALIDATE-1", "TEST-0000-VALIDATE-2"}
	}
	return []string{"VALIDATE-1", "VALIDATE-2"}
}

// Compute turns an order into its documents: the taxed invoice first, then
// the gift-card document (see Documents). Every document is complete: lines,
// VAT breakdown, totals, format, type and report flags. It returns
// FieldErrors when the order is invalid, and a plain error when ctx lacks
// invoice numbers or a number is from the wrong range (test or live).
func Compute(o Order, s Seller, ctx Context) ([]Invoice, error) {
	pr, err := prepare(&o, &s)
	if err != nil {
		return nil, err
	}
	return pr.number(&ctx)
}

// Prepared is an order computed as far as it can be without the numbers
// and dates of its documents: their lines, VAT breakdown and totals, the
// checks of the amount payable and the credit redeemed, and whether it is a
// small-amount invoice. Number completes it. Compute is Prepare and Number;
// an invoicer prepares the documents before it takes their numbers, so
// that the number range's lock is held only for what needs the numbers.
type Prepared struct {
	o         Order
	s         Seller
	plans     []*docPlan
	invs      []Invoice // lines, VAT breakdown and totals of each document
	credit    money.Cents
	small     bool
	cur, dest string
}

// Prepare computes the documents of o up to their numbers and dates
// (Prepared). It returns FieldErrors when the order is invalid.
func Prepare(o Order, s Seller) (*Prepared, error) { return prepare(&o, &s) }

// Documents is how many documents the order makes, which is how many
// invoice numbers Number needs (see Documents).
func (pr *Prepared) Documents() int { return len(pr.invs) }

// Number completes the prepared documents with ctx (their numbers and
// dates) as Compute does: parties, dates, payment and settlement, notes,
// report flags and the Invariants of each. It does not change pr.
func (pr *Prepared) Number(ctx Context) ([]Invoice, error) { return pr.number(&ctx) }

// draft is a line under construction.
type draft struct {
	Line
	grossTarget money.Cents // gross-priced: the paid gross of the line after discount
}

type docPlan struct {
	kind      Kind
	treatment Treatment
	lines     []draft
}

// prepare does Prepare's work.
func prepare(o *Order, s *Seller) (*Prepared, error) {
	var errs FieldErrors
	fail := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	// A buyer without full name and address can still get a small-amount
	// invoice; whether the order is one is known once it is computed.
	var incomplete FieldErrors
	validateParties(o, fail, func(field, format string, args ...any) {
		incomplete = append(incomplete, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	})
	if len(o.Items) == 0 {
		fail("items", "at least one item is required")
	}
	cur := o.Currency
	if cur == "" {
		cur = "EUR"
	}
	if len(cur) != 3 || strings.ToUpper(cur) != cur {
		fail("currency", "must be an ISO 4217 code such as EUR")
	}
	if p := o.ServicePeriod; p != nil && dateOf(p.End).Before(dateOf(p.Start)) {
		fail("service_period.end_date", "must not be before start_date")
	}

	treat := Determine(*o, *s)
	dest := placeCountry(o)
	main := docPlan{kind: KindInvoice, treatment: treat}
	vouchers := docPlan{kind: KindVoucherSale, treatment: TreatVoucherSale}
	for i := range o.Items {
		it := &o.Items[i]
		t := treat
		if it.GiftCard {
			t = TreatVoucherSale
		}
		d, ok := itemDraft(it, i, t, dest, o.RequiresShipping, fail)
		if !ok {
			continue
		}
		if it.GiftCard {
			vouchers.lines = append(vouchers.lines, d)
		} else {
			main.lines = append(main.lines, d)
		}
	}
	addShipping(o, &main, dest, fail)
	if len(errs) > 0 {
		return nil, errs
	}

	var plans []*docPlan
	if len(main.lines) > 0 {
		plans = append(plans, &main)
	}
	if len(vouchers.lines) > 0 {
		plans = append(plans, &vouchers)
	}
	invs := make([]Invoice, len(plans))
	for d, p := range plans {
		if err := settle(p, &invs[d]); err != nil {
			return nil, err
		}
	}

	// Payments: store credit is paid amount, applied to the documents in order.
	var payable, credit money.Cents
	for d := range invs {
		payable += invs[d].Totals.GrandCents + invs[d].Totals.RoundingCents
	}
	for i, c := range o.CreditRedemptions {
		if c.AmountCents <= 0 {
			fail(fmt.Sprintf("creditRedemptions[%d].amountCents", i), "must be positive")
		}
		credit += money.Cents(c.AmountCents)
	}
	switch {
	case o.GrossTotalCents == nil && len(o.CreditRedemptions) > 0:
		fail("grossTotalCents", "is required when creditRedemptions are sent")
	case o.GrossTotalCents != nil && money.Cents(*o.GrossTotalCents) != payable:
		fail("grossTotalCents", "is %s but the order's computed gross total is %s", money.Cents(*o.GrossTotalCents), payable)
	case credit > payable:
		fail("creditRedemptions", "redeemed credit %s exceeds the gross total %s", credit, payable)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	small := len(incomplete) > 0
	if small {
		if why := SmallAmountRefused(o, treat, payable, len(invs)); why != "" {
			for _, fe := range incomplete {
				fe.Message += " (" + why + ")"
			}
			return nil, incomplete
		}
	}
	return &Prepared{o: *o, s: *s, plans: plans, invs: invs, credit: credit, small: small, cur: cur, dest: dest}, nil
}

// number does Number's work.
func (pr *Prepared) number(ctx *Context) ([]Invoice, error) {
	o, s, cur, dest, small := &pr.o, &pr.s, pr.cur, pr.dest, pr.small
	if len(ctx.Numbers) < len(pr.invs) {
		return nil, fmt.Errorf("billing: order %s needs %d invoice numbers, got %d", o.OrderNo, len(pr.invs), len(ctx.Numbers))
	}
	// Each call completes copies: the lines get their periods here.
	invs := make([]Invoice, len(pr.invs))
	for d := range invs {
		invs[d] = pr.invs[d]
		invs[d].Lines = slices.Clone(pr.invs[d].Lines)
		invs[d].VAT = slices.Clone(pr.invs[d].VAT)
	}

	xr := strings.TrimSpace(o.BillingAddress.LeitwegID) != ""
	left := pr.credit
	payments := appliedPayments(o.Payments)
	for d, p := range pr.plans {
		inv := &invs[d]
		num := ctx.Numbers[d]
		if isTest := strings.HasPrefix(num, "TEST-"); isTest != s.TestMode {
			return nil, fmt.Errorf("billing: invoice number %q is not from the %s range", num, map[bool]string{true: "test", false: "live"}[s.TestMode])
		}
		inv.Number = num
		inv.Kind = p.kind
		inv.TypeCode = TypeInvoice
		inv.Format = FormatZUGFeRD
		if small {
			inv.Format = FormatSmallAmount
		}
		if xr {
			inv.Format = FormatXRechnung
			inv.BuyerReference = strings.ToUpper(strings.TrimSpace(o.BillingAddress.LeitwegID))
		}
		inv.Test = s.TestMode
		inv.IssueDate = dateOf(ctx.IssueDate)
		inv.Currency = cur
		inv.OrderNo = o.OrderNo
		inv.Treatment = p.treatment
		inv.Goods = o.RequiresShipping
		notSubject := p.treatment == TreatNotSubject || p.treatment == TreatVoucherSale
		inv.Seller = sellerParty(s, notSubject)
		inv.Buyer = buyerParty(o, notSubject, xr)
		// Deliver-to (BG-15): the shipping address of goods, else the buyer's
		// address as the place where the service is received. Factur-X wants
		// its country (BT-80) when there is no delivery date (BR-FX-EN-04).
		inv.ShipTo = shipTo(o)
		setDates(inv, o, ctx, p.kind)

		// Store credit first, then the provider's payments, document by
		// document; an overpayment stays with the payment (the caller
		// opens a task), BT-115 never goes below zero.
		payable := inv.Totals.GrandCents + inv.Totals.RoundingCents
		creditHere := min(left, payable)
		left -= creditHere
		var paidHere []ReceivedPayment
		paidHere, payments = takePayments(payments, payable-creditHere)
		settled, err := SettleInvoice(InvoiceSettlement{
			PayableCents: payable, CreditCents: creditHere, CreditRefs: creditRefs(o), Paid: paidHere,
			OpenItem: o.Transfer != nil || o.PaymentGateway != "" && slices.Contains(s.InvoiceFirstGateways, o.PaymentGateway),
			Transfer: o.Transfer, CarriedFrom: o.CarriedFrom, Gateway: o.PaymentGateway, SellerIBAN: s.IBAN, SellerBIC: s.BIC,
			Reference: firstNonEmpty(o.PaymentRef, num), OrderNo: o.OrderNo, Currency: cur,
			IssueDate: inv.IssueDate, TermDays: s.PaymentTermDays,
		})
		if err != nil {
			return nil, fmt.Errorf("billing: order %s: %w", o.OrderNo, err)
		}
		inv.Totals.PrepaidCents = settled.PrepaidCents
		inv.Totals.PaidCents = settled.PaidCents
		inv.Totals.DueCents = settled.DueCents
		inv.Payment = settled.Means
		inv.Notes = notes(o, inv, dest)

		if !s.TestMode {
			inv.OSSReport = p.treatment == TreatOSS
			inv.ECSalesList = p.treatment == TreatIntraEU || p.treatment == TreatReverseCharge
		}
		if p.treatment == TreatOSS {
			inv.Destination = dest
		}
		if err := Invariants(inv); err != nil {
			return nil, fmt.Errorf("billing: order %s: %w", o.OrderNo, err)
		}
	}
	return invs, nil
}

// validateParties checks the buyer's data; what only a full invoice needs
// (name and address) goes to incomplete, which a small-amount invoice does
// without (SmallAmount).
func validateParties(o *Order, fail, incomplete func(string, string, ...any)) {
	b := &o.BillingAddress
	if len(b.CountryCode) != 2 || strings.ToUpper(b.CountryCode) != b.CountryCode {
		fail("billingAddress.country_code", "must be an ISO 3166-1 alpha-2 code")
	}
	if strings.TrimSpace(b.DisplayName()) == "" {
		incomplete("billingAddress.name", "name or company_name is required for an invoice")
	}
	if strings.TrimSpace(b.Street) == "" {
		incomplete("billingAddress.street", "is required for an invoice")
	}
	if strings.TrimSpace(b.PostalCode) == "" {
		incomplete("billingAddress.postal_code", "is required for an invoice")
	}
	if strings.TrimSpace(b.City) == "" {
		incomplete("billingAddress.city", "is required for an invoice")
	}
	if id := strings.TrimSpace(b.LeitwegID); id != "" && !ValidLeitwegID(id) {
		fail("billingAddress.leitweg_id", "is not a valid Leitweg-ID (format or check digits)")
	}
	if sa := o.ShippingAddress; sa != nil && sa.CountryCode != "" &&
		(len(sa.CountryCode) != 2 || strings.ToUpper(sa.CountryCode) != sa.CountryCode) {
		fail("shippingAddress.country_code", "must be an ISO 3166-1 alpha-2 code")
	}
}

// itemDraft prices one item. Net-priced: net = quantity x unit net price -
// discount. Gross-priced: the paid gross (quantity x unit gross price minus
// the discount grossed up at the line's rate) is kept for settle, which
// derives the net.
func itemDraft(it *Item, i int, t Treatment, dest string, goods bool, fail func(string, string, ...any)) (draft, bool) {
	source := "items[" + strconv.Itoa(i) + "]"
	f := func(name string) string { return source + "." + name }
	ok := true
	if strings.TrimSpace(it.Name) == "" {
		fail(f("name"), "is required")
		ok = false
	}
	if it.Quantity.Sign() <= 0 {
		fail(f("quantity"), "must be greater than 0")
		ok = false
	}
	if it.UnitNetCents == nil && it.UnitGrossCents == nil {
		fail(f("unitNetCents"), "unitNetCents or unitGrossCents is required")
		ok = false
	}
	if (it.UnitNetCents != nil && *it.UnitNetCents < 0) || (it.UnitGrossCents != nil && *it.UnitGrossCents < 0) {
		fail(f("unitNetCents"), "unit prices must not be negative")
		ok = false
	}
	var disc money.Cents
	if it.DiscountNetCents != nil {
		disc = money.Cents(*it.DiscountNetCents)
		if disc < 0 {
			fail(f("discountNetCents"), "must not be negative")
			ok = false
		}
	}
	sent := it.TaxRate
	field := f("taxRate")
	if sent == nil {
		sent = it.ProductTaxRate
	}
	cat, rate, ferr := taxOf(t, dest, sent, field)
	if ferr != nil {
		fail(ferr.Field, "%s", ferr.Message)
		ok = false
	}
	if !ok {
		return draft{}, false
	}
	kind := LineService
	switch {
	case it.GiftCard:
		kind = LineVoucher
	case goods:
		kind = LineGoods
	}
	d := draft{Line: Line{
		Kind: kind, Name: it.Name, SKU: it.SKU, ProductID: it.ProductID,
		Quantity: it.Quantity, UnitCode: unitPiece,
		DiscountCents: disc, Category: cat, Rate: rate, source: source,
	}}
	if it.UnitGrossCents != nil {
		base, err := money.Mul(it.Quantity, money.Cents(*it.UnitGrossCents))
		if err != nil {
			fail(f("quantity"), "amount out of range")
			return draft{}, false
		}
		discTax, err := money.Percent(disc, rate)
		if err != nil {
			fail(f("discountNetCents"), "amount out of range")
			return draft{}, false
		}
		d.GrossPriced = true
		d.grossTarget = base - disc - discTax
		if d.grossTarget < 0 {
			fail(f("discountNetCents"), "discount exceeds the line amount")
			return draft{}, false
		}
		return d, true
	}
	base, err := money.Mul(it.Quantity, money.Cents(*it.UnitNetCents))
	if err != nil {
		fail(f("quantity"), "amount out of range")
		return draft{}, false
	}
	if disc > base {
		fail(f("discountNetCents"), "discount exceeds the line amount")
		return draft{}, false
	}
	d.UnitNetPrice = money.CentsDecimal(money.Cents(*it.UnitNetCents))
	d.NetCents = base - disc
	return d, true
}

type groupKey struct {
	cat  Category
	rate string
}

func keyOf(l *Line) groupKey { return groupKey{l.Category, l.Rate.String()} }

// addShipping adds the shipping lines to the taxed document. Shipping is an
// ancillary service and follows the goods: with one VAT group it takes that
// group's category and rate; with several, the paid gross shipping is split
// by the gross amounts of the goods per group (largest remainder, so the
// parts sum exactly to what was paid) and each part is netted at its rate.
// Shipping sent as net with a rate is taken as given (under a zero-rated
// treatment its category and 0 % follow the treatment).
func addShipping(o *Order, p *docPlan, dest string, fail func(string, string, ...any)) {
	if o.ShippingGrossCents != nil && o.ShippingNetCents != nil {
		fail("shippingNetCents", "send either shippingGrossCents or shippingNetCents with shippingTaxRate, not both")
		return
	}
	if o.ShippingNetCents != nil {
		net := money.Cents(*o.ShippingNetCents)
		if net < 0 {
			fail("shippingNetCents", "must not be negative")
			return
		}
		if o.ShippingTaxRate == nil {
			fail("shippingTaxRate", "is required with shippingNetCents")
			return
		}
		if net == 0 {
			return
		}
		cat, rate, ferr := taxOf(p.treatment, dest, o.ShippingTaxRate, "shippingTaxRate")
		if ferr != nil {
			fail(ferr.Field, "%s", ferr.Message)
			return
		}
		p.lines = append(p.lines, draft{Line: Line{
			Kind: LineShipping, Name: ShippingLineName, Quantity: money.Int(1), UnitCode: unitPiece,
			UnitNetPrice: money.CentsDecimal(net), NetCents: net, Category: cat, Rate: rate, source: "shippingNetCents",
		}})
		return
	}
	if o.ShippingGrossCents == nil || *o.ShippingGrossCents == 0 {
		return
	}
	ship := money.Cents(*o.ShippingGrossCents)
	if ship < 0 {
		fail("shippingGrossCents", "must not be negative")
		return
	}
	// Goods gross per VAT group, in order of first appearance.
	var keys []groupKey
	weights := map[groupKey]money.Cents{}
	nets := map[groupKey]money.Cents{}
	rates := map[groupKey]*Line{}
	for i := range p.lines {
		l := &p.lines[i]
		k := keyOf(&l.Line)
		if _, seen := rates[k]; !seen {
			keys = append(keys, k)
			rates[k] = &l.Line
		}
		if l.GrossPriced {
			weights[k] += l.grossTarget
		} else {
			nets[k] += l.NetCents
		}
	}
	var cats []Category
	var rs []money.Decimal
	ws := make([]money.Cents, 0, len(keys))
	for _, k := range keys {
		tax, err := money.Percent(nets[k], rates[k].Rate)
		if err != nil {
			fail("items", "amounts out of range")
			return
		}
		ws = append(ws, weights[k]+nets[k]+tax)
		cats = append(cats, rates[k].Category)
		rs = append(rs, rates[k].Rate)
	}
	if len(keys) == 0 { // shipping only (gift-card order shipped): standard rate of the place of supply
		cat, rate, ferr := taxOf(p.treatment, dest, nil, "shippingGrossCents")
		if ferr != nil {
			fail(ferr.Field, "%s", ferr.Message)
			return
		}
		cats, rs, ws = []Category{cat}, []money.Decimal{rate}, []money.Cents{0}
	}
	parts, err := money.Allocate(ship, ws)
	if err != nil {
		fail("shippingGrossCents", "cannot split: %v", err)
		return
	}
	for g, part := range parts {
		if part == 0 {
			continue
		}
		p.lines = append(p.lines, draft{
			Line: Line{
				Kind: LineShipping, Name: ShippingLineName, Quantity: money.Int(1), UnitCode: unitPiece,
				Category: cats[g], Rate: rs[g], GrossPriced: true, source: "shippingGrossCents",
			},
			grossTarget: part,
		})
	}
}

// settle derives the nets of gross-priced lines, numbers the lines and
// computes the VAT breakdown and totals of one document.
//
// Per VAT group the amount payable is P = net lines + their VAT + the paid
// gross of gross-priced lines. The group net N is the amount with
// N + round(N x rate) = P (searched around P / (1 + rate)); the gross-priced
// lines share N minus the fixed nets by their paid gross (largest
// remainder). When no N reaches P (a rate step skips that gross cent), N is
// the nearest and the difference goes to the rounding amount BT-114, so the
// amount due still equals what the customer pays.
func settle(p *docPlan, inv *Invoice) error {
	var keys []groupKey
	members := map[groupKey][]int{}
	for i := range p.lines {
		k := keyOf(&p.lines[i].Line)
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], i)
	}
	var tot Totals
	for _, k := range keys {
		idx := members[k]
		rate := p.lines[idx[0]].Rate
		var fixed, target money.Cents
		var gross []int
		for _, i := range idx {
			if p.lines[i].GrossPriced {
				gross = append(gross, i)
				target += p.lines[i].grossTarget
			} else {
				fixed += p.lines[i].NetCents
			}
		}
		n := fixed
		if len(gross) > 0 {
			fixedTax, err := money.Percent(fixed, rate)
			if err != nil {
				return err
			}
			pay := fixed + fixedTax + target
			var residual money.Cents
			n, residual, err = netForGross(pay, fixed, rate)
			if err != nil {
				return err
			}
			tot.RoundingCents += residual
			weights := make([]money.Cents, len(gross))
			for j, i := range gross {
				weights[j] = p.lines[i].grossTarget
			}
			parts, err := money.Allocate(n-fixed, weights)
			if err != nil {
				return fmt.Errorf("billing: split net of gross-priced lines: %w", err)
			}
			for j, i := range gross {
				l := &p.lines[i]
				l.NetCents = parts[j]
				l.UnitNetPrice, err = money.UnitPrice(parts[j]+l.DiscountCents, l.Quantity, priceMaxScale)
				if err != nil {
					return err
				}
			}
		}
		tax, err := money.Percent(n, rate)
		if err != nil {
			return err
		}
		reason, code := exemption(k.cat, p.treatment)
		inv.VAT = append(inv.VAT, VATBreakdown{
			Category: k.cat, Rate: rate, BaseCents: n, TaxCents: tax,
			ExemptionReason: reason, ExemptionCode: code,
		})
		tot.TaxCents += tax
	}
	slices.SortStableFunc(inv.VAT, func(a, b VATBreakdown) int {
		if a.Category != b.Category {
			return strings.Compare(string(a.Category), string(b.Category))
		}
		return -a.Rate.Cmp(b.Rate) // higher rate first
	})
	inv.Lines = make([]Line, len(p.lines))
	for i := range p.lines {
		l := p.lines[i].Line
		l.ID = fmt.Sprint(i + 1)
		inv.Lines[i] = l
		tot.LineNetCents += l.NetCents
	}
	tot.TaxBasisCents = tot.LineNetCents - tot.AllowanceCents + tot.ChargeCents
	tot.GrandCents = tot.TaxBasisCents + tot.TaxCents
	tot.DueCents = tot.GrandCents + tot.RoundingCents
	inv.Totals = tot
	return nil
}

// netForGross returns the net amount n >= fixed whose gross n + round(n x
// rate) equals pay, or, when none exists, the nearest n and the residual
// pay - gross(n) (one cent in practice).
func netForGross(pay, fixed money.Cents, rate money.Decimal) (money.Cents, money.Cents, error) {
	n0, err := money.NetOfGross(pay, rate)
	if err != nil {
		return 0, 0, err
	}
	for _, d := range []money.Cents{0, -1, 1, -2, 2} {
		n := n0 + d
		if n < fixed {
			continue
		}
		tax, err := money.Percent(n, rate)
		if err != nil {
			return 0, 0, err
		}
		if n+tax == pay {
			return n, 0, nil
		}
	}
	n := max(n0, fixed)
	tax, err := money.Percent(n, rate)
	if err != nil {
		return 0, 0, err
	}
	return n, pay - n - tax, nil
}

func sellerParty(s *Seller, notSubject bool) Party {
	p := Party{
		Name: s.Name, Street: s.Street, PostalCode: s.PostalCode, City: s.City,
		CountryCode: s.Country, VATID: s.VATID, TaxNumber: s.TaxNumber,
		LegalRegistrationID: s.RegistrationID,
		ContactName:         s.ContactName, ContactPhone: s.ContactPhone, ContactEmail: s.ContactEmail,
	}
	if p.CountryCode == "" {
		p.CountryCode = "DE"
	}
	if s.ContactEmail != "" {
		p.ElectronicAddress, p.ElectronicAddressScheme = s.ContactEmail, "EM"
	}
	if notSubject {
		// BR-O-02: no seller VAT identifier next to category O. BR-CO-26 still
		// wants an identifier: the register number, else the tax number.
		p.VATID = ""
		if p.LegalRegistrationID == "" {
			p.ID = s.TaxNumber
		}
	}
	return p
}

func buyerParty(o *Order, notSubject, xrechnung bool) Party {
	b := &o.BillingAddress
	p := Party{
		Name: b.DisplayName(), Street: b.Street, AdditionalAddressLine: b.AdditionalAddressLine,
		PostalCode: b.PostalCode, City: b.City, CountryCode: isoCountry(b.CountryCode),
		VATID: buyerVATID(b.VATID),
	}
	if b.CompanyName != "" && b.Name != "" {
		p.ContactName = b.Name
	}
	if notSubject {
		p.VATID = "" // BR-O-02
	}
	switch {
	case o.Email != "":
		p.ElectronicAddress, p.ElectronicAddressScheme = o.Email, "EM"
		p.ContactEmail = o.Email
	case xrechnung:
		p.ElectronicAddress, p.ElectronicAddressScheme = strings.ToUpper(strings.TrimSpace(b.LeitwegID)), "0204"
	}
	return p
}

func shipTo(o *Order) *Party {
	a := o.BillingAddress
	if o.RequiresShipping && o.ShippingAddress != nil && o.ShippingAddress.CountryCode != "" {
		a = *o.ShippingAddress
	}
	return &Party{
		Name: a.DisplayName(), Street: a.Street, AdditionalAddressLine: a.AdditionalAddressLine,
		PostalCode: a.PostalCode, City: a.City, CountryCode: isoCountry(a.CountryCode),
	}
}

// setDates sets the date of supply: the shipping date for goods, the
// service period for services sent with one, else the payment date (and the
// issue date when nothing else is known).
func setDates(inv *Invoice, o *Order, ctx *Context, kind Kind) {
	first := func(ts ...time.Time) time.Time {
		for _, t := range ts {
			if !t.IsZero() {
				return dateOf(t)
			}
		}
		return time.Time{}
	}
	switch {
	case kind == KindInvoice && o.RequiresShipping:
		inv.SupplyDate = first(ctx.SupplyDate, ctx.PaymentDate, ctx.IssueDate)
	case kind == KindInvoice && o.ServicePeriod != nil:
		inv.Period = &Period{Start: dateOf(o.ServicePeriod.Start), End: dateOf(o.ServicePeriod.End)}
	default:
		inv.SupplyDate = first(ctx.PaymentDate, ctx.IssueDate)
	}
	if kind == KindInvoice && o.ServicePeriod == nil {
		setDefaultPeriods(inv, o, first(inv.SupplyDate, ctx.PaymentDate, ctx.IssueDate))
	}
}

// setDefaultPeriods gives the lines of products with a default service
// period (spec: service_period rule 3, "without it, the product default
// applies") their period: from the date of supply (for services the payment
// date) for the product's months, ending the day before the same date
// (15.11.2026 for 1 month: 15.11.2026-14.12.2026). When every line has the
// same period it is the document's (BG-14), else each line carries its own
// (BG-26) and lines without a default none.
func setDefaultPeriods(inv *Invoice, o *Order, from time.Time) {
	periods := map[string]*Period{}
	var shared *Period
	all := true
	for i := range inv.Lines {
		l := &inv.Lines[i]
		months := 0
		if l.Kind != LineShipping {
			if idx, ok := itemIndex(l.source); ok && idx < len(o.Items) {
				months = o.Items[idx].DefaultPeriodMonths
			}
		}
		if months <= 0 {
			all = all && l.Kind == LineShipping
			continue
		}
		p := DefaultPeriod(from, months)
		key := p.Start.Format(time.DateOnly) + p.End.Format(time.DateOnly)
		if periods[key] == nil {
			periods[key] = &p
		}
		l.Period = periods[key]
		if shared == nil {
			shared = l.Period
		} else if shared != l.Period {
			all = false
		}
	}
	if shared == nil {
		return
	}
	if all && len(periods) == 1 {
		p := *shared
		inv.Period = &p
		for i := range inv.Lines {
			inv.Lines[i].Period = nil
		}
		return
	}
	for i := range inv.Lines {
		if p := inv.Lines[i].Period; p != nil {
			c := *p
			inv.Lines[i].Period = &c
		}
	}
}

// DefaultPeriod is a product default's service period: from start for
// months, ending the day before the same date months later, or on the last
// day of that month when it has no such date (§ 188 Abs. 2, 3 BGB: from 31
// January for one month ends 28 February).
func DefaultPeriod(start time.Time, months int) Period {
	start = dateOf(start)
	first := time.Date(start.Year(), start.Month()+time.Month(months), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	if start.Day() > last {
		return Period{Start: start, End: first.AddDate(0, 0, last-1)}
	}
	return Period{Start: start, End: first.AddDate(0, 0, start.Day()-2)}
}

// itemIndex reads the index of an items[i] line source.
func itemIndex(source string) (int, bool) {
	n, prefixed := strings.CutPrefix(source, "items[")
	n, closed := strings.CutSuffix(n, "]")
	if !prefixed || !closed {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 {
		return 0, false
	}
	return i, true
}

// appliedPayments are the order's provider payments that paid something,
// in the order they arrived.
func appliedPayments(ps []ReceivedPayment) []ReceivedPayment {
	out := make([]ReceivedPayment, 0, len(ps))
	for _, p := range ps {
		if p.Cents > 0 {
			out = append(out, p)
		}
	}
	return out
}

// takePayments takes up to want cents from the front of ps: the parts
// taken, and what is left of ps.
func takePayments(ps []ReceivedPayment, want money.Cents) (taken, rest []ReceivedPayment) {
	for len(ps) > 0 && want > 0 {
		p := ps[0]
		part := min(p.Cents, want)
		q := p
		q.Cents = part
		taken = append(taken, q)
		want -= part
		if part == p.Cents {
			ps = ps[1:]
		} else {
			p.Cents -= part
			ps = append([]ReceivedPayment{p}, ps[1:]...)
		}
	}
	return taken, ps
}

func creditRefs(o *Order) []string {
	var refs []string
	for _, c := range o.CreditRedemptions {
		if c.ExternalRef != "" {
			refs = append(refs, c.ExternalRef)
		}
	}
	return refs
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// DefaultPaymentTermDays is the payment term of open items when the
// project sets none.
const DefaultPaymentTermDays = 14

// TestNote is the document note that marks a test document.
const TestNote = "TESTDOKUMENT: Testbeleg ohne steuerliche Wirkung, keine Rechnung im Sinne des § 14 UStG. / TEST DOCUMENT: not a valid invoice."

func notes(o *Order, inv *Invoice, dest string) []string {
	var ns []string
	if inv.Test {
		ns = append(ns, TestNote)
	}
	switch inv.Treatment {
	case TreatVoucherSale:
		ns = append(ns, "Beleg über den Verkauf von Mehrzweck-Gutscheinen zur Bestellung "+o.OrderNo+
			". Die Umsatzsteuer entsteht erst bei Einlösung (§ 3 Abs. 15 UStG).")
	case TreatOSS:
		ns = append(ns, "Fernverkauf an eine Privatperson in "+dest+
			": Umsatzsteuer des Bestimmungslandes, erklärt im One-Stop-Shop (§ 18j UStG).")
	case TreatIntraEU:
		ns = append(ns, "Steuerfreie innergemeinschaftliche Lieferung. USt-IdNr. des Erwerbers: "+inv.Buyer.VATID+".")
	case TreatReverseCharge:
		ns = append(ns, "Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge). USt-IdNr. des Leistungsempfängers: "+inv.Buyer.VATID+".")
	}
	return ns
}

// dateOf keeps the calendar date of t (in t's location) at midnight UTC.
func dateOf(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
