package einvoice

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
)

type checker struct {
	d  *doc
	fs []Finding
}

func (c *checker) add(sev Severity, rule, path, format string, args ...any) {
	c.fs = append(c.fs, Finding{Rule: rule, Severity: sev, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) fail(rule, path, format string, args ...any) {
	c.add(Error, rule, path, format, args...)
}

// require fails rule when v is absent or blank.
func (c *checker) require(v val, rule, path, what string) bool {
	if !v.ok || strings.TrimSpace(v.s) == "" {
		c.fail(rule, path, "%s is missing", what)
		return false
	}
	return true
}

// cents reads an amount with at most two decimals (BR-DEC rule decRule) as
// cents. Absent amounts return ok=false silently; malformed ones are XSD
// findings.
func (c *checker) cents(v val, decRule, path string) (int64, bool) {
	if !v.ok {
		return 0, false
	}
	d, ok := dec(v)
	if !ok {
		c.fail(RuleXSD, path, "%q is not a decimal number", v.s)
		return 0, false
	}
	coef, scale := d.Coef()
	if scale > 2 {
		if decRule != "" {
			c.fail(decRule, path, "%s has more than 2 decimals", v.s)
		}
		return 0, false
	}
	for ; scale < 2; scale++ {
		coef *= 10
	}
	return coef, true
}

// number reads a quantity, price or rate.
func (c *checker) number(v val, path string) (money.Decimal, bool) {
	if !v.ok {
		return money.Decimal{}, false
	}
	d, ok := dec(v)
	if !ok {
		c.fail(RuleXSD, path, "%q is not a decimal number", v.s)
	}
	return d, ok
}

func fmtCents(v int64) string { return money.Cents(v).String() }

func checkDoc(d *doc) []Finding {
	c := &checker{d: d}
	xr := d.guideline.ok && strings.HasPrefix(d.guideline.s, billing.GuidelineXRechnung)
	c.header()
	lineNets, catSums := c.lines()
	c.breakdown(catSums)
	c.totals(lineNets)
	c.categories(catSums)
	c.payment()
	if xr {
		c.xrechnung()
	}
	c.own()
	return c.fs
}

func (c *checker) header() {
	d := c.d
	c.require(d.guideline, "BR-01", "BT-24", "specification identifier")
	c.require(d.number, "BR-02", "BT-1", "invoice number")
	if c.require(d.issueDate, "BR-03", "BT-2", "issue date") && !validDate(d.issueDate.s) {
		c.fail(RuleXSD, "BT-2", "issue date %q is not YYYYMMDD", d.issueDate.s)
	}
	c.require(d.typeCode, "BR-04", "BT-3", "invoice type code")
	c.require(d.currency, "BR-05", "BT-5", "invoice currency code")
	c.require(d.seller.name, "BR-06", "BT-27", "seller name")
	c.require(d.buyer.name, "BR-07", "BT-44", "buyer name")
	if !d.seller.hasAddress {
		c.fail("BR-08", "BG-5", "seller postal address is missing")
	}
	c.require(d.seller.country, "BR-09", "BT-40", "seller country code")
	if !d.buyer.hasAddress {
		c.fail("BR-10", "BG-8", "buyer postal address is missing")
	}
	c.require(d.buyer.country, "BR-11", "BT-55", "buyer country code")
	if len(d.lines) == 0 {
		c.fail("BR-16", "BG-25", "the invoice has no line")
	}
	if !d.seller.id.ok && !d.seller.legalID.ok && !d.seller.vatID.ok {
		c.fail("BR-CO-26", "BG-4", "seller identifier (BT-29), legal registration (BT-30) or VAT identifier (BT-31) is required")
	}
	for _, p := range []struct {
		v    val
		path string
	}{{d.seller.vatID, "BT-31"}, {d.buyer.vatID, "BT-48"}} {
		if p.v.ok && !vatPrefix.MatchString(p.v.s) {
			c.fail("BR-CO-09", p.path, "VAT identifier %q lacks a country prefix", p.v.s)
		}
	}
	if d.seller.eaddr.ok && !d.seller.eaddrScheme.ok {
		c.fail("BR-62", "BT-34", "seller electronic address has no scheme")
	}
	if d.buyer.eaddr.ok && !d.buyer.eaddrScheme.ok {
		c.fail("BR-63", "BT-49", "buyer electronic address has no scheme")
	}
	if st := d.shipTo; st != nil && st.hasAddress && !st.country.ok {
		c.fail("BR-57", "BT-80", "deliver-to address has no country code")
	}
	if p := d.period; p != nil {
		if !p.start.ok && !p.end.ok {
			c.fail("BR-CO-19", "BG-14", "invoicing period without start or end date")
		}
		if p.start.ok && p.end.ok && p.end.s < p.start.s {
			c.fail("BR-29", "BG-14", "invoicing period ends %s before it starts %s", p.end.s, p.start.s)
		}
	}
	for _, r := range d.preceding {
		c.require(r.id, "BR-55", "BT-25", "preceding invoice reference")
	}
}

var (
	vatPrefix = regexp.MustCompile(`^[A-Z]{2}`)
	emailRE   = regexp.MustCompile(`^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$`)
)

func validDate(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < 8; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	m, day := (s[4]-'0')*10+s[5]-'0', (s[6]-'0')*10+s[7]-'0'
	return m >= 1 && m <= 12 && day >= 1 && day <= 31
}

// catKey groups lines by VAT category and rate.
type catKey struct{ cat, rate string }

// lines checks every line and returns the sum of line nets (cents) and the
// sums per category and rate.
func (c *checker) lines() (int64, map[catKey]int64) {
	var sum int64
	sums := map[catKey]int64{}
	for i := range c.d.lines {
		l := &c.d.lines[i]
		at := fmt.Sprintf("BG-25[%d]", i+1)
		c.require(l.id, "BR-21", at+"/BT-126", "line identifier")
		qty, okQ := c.number(l.qty, at+"/BT-129")
		if !l.qty.ok {
			c.fail("BR-22", at+"/BT-129", "invoiced quantity is missing")
		}
		c.require(l.unitCode, "BR-23", at+"/BT-130", "unit of measure")
		net, okN := c.cents(l.net, "BR-DEC-23", at+"/BT-131")
		if !l.net.ok {
			c.fail("BR-24", at+"/BT-131", "line net amount is missing")
		}
		c.require(l.name, "BR-25", at+"/BT-153", "item name")
		price, okP := c.number(l.price, at+"/BT-146")
		if !l.price.ok {
			c.fail("BR-26", at+"/BT-146", "item net price is missing")
		}
		if okP && price.Sign() < 0 {
			c.fail("BR-27", at+"/BT-146", "item net price %s is negative", l.price.s)
		}
		c.require(l.category, "BR-CO-04", at+"/BT-151", "line VAT category")
		var allow, charge int64
		for _, a := range l.ac {
			amt, ok := c.cents(a.amount, map[bool]string{false: "BR-DEC-24", true: "BR-DEC-27"}[a.charge], at+"/BG-27")
			if !a.amount.ok {
				c.fail(map[bool]string{false: "BR-41", true: "BR-43"}[a.charge], at, "line allowance/charge amount is missing")
			}
			if !a.reason.ok && !a.code.ok {
				c.fail(map[bool]string{false: "BR-42", true: "BR-44"}[a.charge], at, "line allowance/charge has no reason or reason code")
			}
			if ok && a.charge {
				charge += amt
			} else if ok {
				allow += amt
			}
		}
		if l.periodStart.ok && l.periodEnd.ok && l.periodEnd.s < l.periodStart.s {
			c.fail("BR-30", at+"/BG-26", "line period ends before it starts")
		}
		if okN {
			sum += net
			rate := ""
			if r, ok := dec(l.rate); ok {
				rate = r.String()
			}
			sums[catKey{l.category.s, rate}] += net
		}
		// PEPPOL-EN16931-R120: net = qty x price / base quantity + charges -
		// allowances, within 0.02 (a warning in XRechnung; kept for every
		// format because our lines are exact).
		if okQ && okP && okN {
			base := money.Int(1)
			if b, ok := dec(l.basisQty); ok && !b.IsZero() {
				base = b
			}
			want, err := lineAmount(qty, price, base)
			if err == nil && money.Abs(net-(want+charge-allow)) > 2 {
				c.add(Warning, "PEPPOL-EN16931-R120", at+"/BT-131",
					"line net %s != quantity %s x price %s - allowances %s + charges %s",
					fmtCents(net), l.qty.s, l.price.s, fmtCents(allow), fmtCents(charge))
			}
		}
	}
	return sum, sums
}

// lineAmount returns qty x price / base in cents, rounded half up.
func lineAmount(qty, price, base money.Decimal) (int64, error) {
	qc, qs := qty.Coef()
	pc, ps := price.Coef()
	bc, bs := base.Coef()
	prod, err := money.MulDivRound(qc, pc, 1) // scale qs+ps
	if err != nil {
		return 0, err
	}
	// cents = prod x 100 x 10^bs / (10^(qs+ps) x bc)
	num := money.Pow10(2 + bs)
	den := money.Pow10(qs+ps) * bc
	return money.MulDivRound(prod, num, den)
}

func (c *checker) breakdown(catSums map[catKey]int64) {
	d := c.d
	if len(d.vat) == 0 {
		c.fail("BR-CO-18", "BG-23", "the invoice has no VAT breakdown")
	}
	for i := range d.vat {
		v := &d.vat[i]
		at := fmt.Sprintf("BG-23[%d]", i+1)
		base, okB := c.cents(v.base, "BR-DEC-19", at+"/BT-116")
		if !v.base.ok {
			c.fail("BR-45", at+"/BT-116", "VAT category taxable amount is missing")
		}
		tax, okT := c.cents(v.tax, "BR-DEC-20", at+"/BT-117")
		if !v.tax.ok {
			c.fail("BR-46", at+"/BT-117", "VAT category tax amount is missing")
		}
		c.require(v.category, "BR-47", at+"/BT-118", "VAT category code")
		rate, okR := c.number(v.rate, at+"/BT-119")
		if !v.rate.ok && v.category.s != "O" {
			c.fail("BR-48", at+"/BT-119", "VAT category rate is missing")
		}
		if okB && okT && okR {
			want, err := money.Percent(money.Cents(base), rate)
			if err == nil && int64(want) != tax {
				c.fail("BR-CO-17", at+"/BT-117", "tax %s != %s x %s %% = %s", fmtCents(tax), fmtCents(base), v.rate.s, want)
			}
		}
	}
}

func (c *checker) totals(lineSum int64) {
	d, t := c.d, &c.d.totals
	lt, okLT := c.cents(t.lineTotal, "BR-DEC-09", "BT-106")
	c.require(t.lineTotal, "BR-12", "BT-106", "sum of line net amounts")
	at, okAT := c.cents(t.allowanceTotal, "BR-DEC-10", "BT-107")
	ct, okCT := c.cents(t.chargeTotal, "BR-DEC-11", "BT-108")
	tb, okTB := c.cents(t.taxBasis, "BR-DEC-12", "BT-109")
	c.require(t.taxBasis, "BR-13", "BT-109", "total without VAT")
	tt, okTT := c.cents(t.taxTotal, "BR-DEC-13", "BT-110")
	gt, okGT := c.cents(t.grand, "BR-DEC-14", "BT-112")
	c.require(t.grand, "BR-14", "BT-112", "total with VAT")
	pp, okPP := c.cents(t.prepaid, "BR-DEC-16", "BT-113")
	rd, okRD := c.cents(t.rounding, "BR-DEC-17", "BT-114")
	du, okDU := c.cents(t.due, "BR-DEC-18", "BT-115")
	c.require(t.due, "BR-15", "BT-115", "amount due")
	if !okAT {
		at = 0
	}
	if !okCT {
		ct = 0
	}
	if !okPP {
		pp = 0
	}
	if !okRD {
		rd = 0
	}
	var allowSum, chargeSum int64
	for _, a := range d.docAC {
		amt, ok := c.cents(a.amount, map[bool]string{false: "BR-DEC-01", true: "BR-DEC-05"}[a.charge], "BG-20/BG-21")
		if ok && a.charge {
			chargeSum += amt
		} else if ok {
			allowSum += amt
		}
	}
	if okLT && lt != lineSum {
		c.fail("BR-CO-10", "BT-106", "sum of line net amounts %s != %s", fmtCents(lt), fmtCents(lineSum))
	}
	if (okAT || len(d.docAC) > 0) && at != allowSum {
		c.fail("BR-CO-11", "BT-107", "allowance total %s != %s", fmtCents(at), fmtCents(allowSum))
	}
	if (okCT || len(d.docAC) > 0) && ct != chargeSum {
		c.fail("BR-CO-12", "BT-108", "charge total %s != %s", fmtCents(ct), fmtCents(chargeSum))
	}
	if okTB && okLT && tb != lt-at+ct {
		c.fail("BR-CO-13", "BT-109", "total without VAT %s != %s - %s + %s", fmtCents(tb), fmtCents(lt), fmtCents(at), fmtCents(ct))
	}
	var taxSum int64
	taxOK := true
	for _, v := range d.vat {
		x, ok := dec(v.tax)
		cents, ok2 := toCents(x)
		if !ok || !ok2 {
			taxOK = false
			continue
		}
		taxSum += cents
	}
	if !okTT && taxSum != 0 {
		c.fail("BR-CO-14", "BT-110", "total VAT amount is missing")
	}
	if !okTT {
		tt = 0
	}
	if taxOK && tt != taxSum {
		c.fail("BR-CO-14", "BT-110", "total VAT %s != sum of category tax %s", fmtCents(tt), fmtCents(taxSum))
	}
	if okGT && okTB && gt != tb+tt {
		c.fail("BR-CO-15", "BT-112", "total with VAT %s != %s + %s", fmtCents(gt), fmtCents(tb), fmtCents(tt))
	}
	if okDU && okGT && du != gt-pp+rd {
		c.fail("BR-CO-16", "BT-115", "amount due %s != %s - %s + %s", fmtCents(du), fmtCents(gt), fmtCents(pp), fmtCents(rd))
	}
	if okDU && du > 0 {
		hasTerms := false
		for _, t := range d.terms {
			if t.desc.ok || t.due.ok {
				hasTerms = true
			}
		}
		if !hasTerms {
			c.fail("BR-CO-25", "BT-9/BT-20", "amount due is positive but there is no due date or payment terms")
		}
	}
}

// categories applies the BR-S/Z/E/AE/IC/G/O rules.
func (c *checker) categories(catSums map[catKey]int64) {
	d := c.d
	lineCats := map[string]bool{}
	for i, l := range d.lines {
		at := fmt.Sprintf("BG-25[%d]/BT-152", i+1)
		cat := l.category.s
		lineCats[cat] = true
		rate, hasRate := dec(l.rate)
		switch cat {
		case "S":
			if !hasRate || rate.Sign() <= 0 {
				c.fail("BR-S-05", at, "standard-rated line needs a rate above zero")
			}
		case "Z", "E", "AE", "K", "G":
			if !hasRate || !rate.IsZero() {
				c.fail(catRule(cat, "05"), at, "line of category %s needs rate 0", cat)
			}
		case "O":
			if l.rate.ok {
				c.fail("BR-O-05", at, "line of category O must not carry a rate")
			}
		}
	}
	bdCats := map[string]int{}
	for _, v := range d.vat {
		bdCats[v.category.s]++
	}
	sellerTaxID := d.seller.vatID.ok || d.seller.taxNo.ok
	for cat := range lineCats {
		if cat == "" {
			continue
		}
		switch n := bdCats[cat]; {
		case n == 0:
			c.fail(catRule(cat, "01"), "BG-23", "lines of category %s but no VAT breakdown of that category", cat)
		case (cat == "E" || cat == "O") && n != 1:
			c.fail(catRule(cat, "01"), "BG-23", "category %s needs exactly one VAT breakdown", cat)
		}
		switch cat {
		case "S", "Z", "E":
			if !sellerTaxID {
				c.fail(catRule(cat, "02"), "BT-31/BT-32", "category %s needs the seller's VAT identifier or tax number", cat)
			}
		case "AE":
			if !sellerTaxID || !(d.buyer.vatID.ok || d.buyer.legalID.ok) {
				c.fail("BR-AE-02", "BT-31/BT-48", "reverse charge needs the seller's VAT identifier or tax number and the buyer's VAT identifier")
			}
		case "K":
			if !d.seller.vatID.ok || !d.buyer.vatID.ok {
				c.fail("BR-IC-02", "BT-31/BT-48", "intra-community supply needs the seller's and the buyer's VAT identifier")
			}
		case "G":
			if !d.seller.vatID.ok {
				c.fail("BR-G-02", "BT-31", "export needs the seller's VAT identifier")
			}
		case "O":
			if d.seller.vatID.ok || d.buyer.vatID.ok {
				c.fail("BR-O-02", "BT-31/BT-48", "category O forbids the seller's and the buyer's VAT identifier")
			}
		}
	}
	for i, v := range d.vat {
		at := fmt.Sprintf("BG-23[%d]", i+1)
		cat := v.category.s
		base, okB := dec(v.base)
		tax, okT := dec(v.tax)
		rateKey := ""
		if r, ok := dec(v.rate); ok {
			rateKey = r.String()
		}
		// BR-x-08: base = sum of the category's line nets (no document-level
		// allowances or charges are produced by this service; they are added
		// when present).
		if okB {
			want := catSums[catKey{cat, rateKey}]
			if cat != "S" {
				want = 0
				for k, s := range catSums {
					if k.cat == cat {
						want += s
					}
				}
			}
			for _, a := range d.docAC {
				if a.category.s == cat {
					amt, _ := dec(a.amount)
					if coef, ok := toCents(amt); ok {
						if a.charge {
							want += coef
						} else {
							want -= coef
						}
					}
				}
			}
			if coef, ok := toCents(base); ok && coef != want {
				c.fail(catRule(cat, "08"), at+"/BT-116", "taxable amount %s != sum of category %s lines %s", v.base.s, cat, fmtCents(want))
			}
		}
		switch cat {
		case "S":
			if okB && okT {
				b, okb := toCents(base)
				x, okx := toCents(tax)
				if r, ok := dec(v.rate); ok && okb && okx {
					want, err := money.Percent(money.Cents(b), r)
					if err == nil && int64(want) != x {
						c.fail("BR-S-09", at+"/BT-117", "tax %s != %s x %s %%", v.tax.s, v.base.s, v.rate.s)
					}
				}
			}
			if v.reason.ok || v.reasonCode.ok {
				c.fail("BR-S-10", at+"/BT-120", "standard rate must not have an exemption reason")
			}
		case "Z":
			if okT && !tax.IsZero() {
				c.fail("BR-Z-09", at+"/BT-117", "zero-rated tax must be 0")
			}
			if v.reason.ok || v.reasonCode.ok {
				c.fail("BR-Z-10", at+"/BT-120", "zero rate must not have an exemption reason")
			}
		case "E", "AE", "K", "G", "O":
			if okT && !tax.IsZero() {
				c.fail(catRule(cat, "09"), at+"/BT-117", "tax of category %s must be 0", cat)
			}
			if !v.reason.ok && !v.reasonCode.ok {
				c.fail(catRule(cat, "10"), at+"/BT-120", "category %s needs an exemption reason or code", cat)
			}
		}
		if cat == "K" {
			if !d.deliveryDate.ok && d.period == nil {
				c.fail("BR-IC-11", "BT-72/BG-14", "intra-community supply needs the delivery date or the invoicing period")
			}
			if d.shipTo == nil || !d.shipTo.country.ok {
				c.fail("BR-IC-12", "BT-80", "intra-community supply needs the deliver-to country")
			}
		}
	}
	if bdCats["O"] > 0 {
		if len(d.vat) > bdCats["O"] {
			c.fail("BR-O-11", "BG-23", "category O excludes every other VAT breakdown")
		}
		for cat := range lineCats {
			if cat != "O" {
				c.fail("BR-O-12", "BG-25", "category O excludes lines of category %s", cat)
				break
			}
		}
	}
}

// catRule names a category rule: BR-S-02, BR-AE-08, BR-IC-10 (K) ...
func catRule(cat, n string) string {
	if cat == "K" {
		cat = "IC"
	}
	return "BR-" + cat + "-" + n
}

// toCents returns d x 100 when d has at most two decimals.
func toCents(d money.Decimal) (int64, bool) {
	coef, scale := d.Coef()
	if scale > 2 {
		return 0, false
	}
	for ; scale < 2; scale++ {
		coef *= 10
	}
	return coef, true
}

func (c *checker) payment() {
	for i, m := range c.d.means {
		at := fmt.Sprintf("BG-16[%d]", i+1)
		c.require(m.code, "BR-49", at+"/BT-81", "payment means type code")
		if (m.code.s == "30" || m.code.s == "58") && m.account && !m.iban.ok {
			c.fail("BR-61", at+"/BT-84", "credit transfer account without account identifier")
		}
		if m.card {
			c.require(m.cardID, "BR-50", at+"/BT-87", "payment card primary account number")
			digits := 0
			for _, r := range m.cardID.s {
				if r >= '0' && r <= '9' {
					digits++
				}
			}
			if digits > 10 {
				c.add(Warning, "BR-51", at+"/BT-87", "a card number shows at most its first 6 and last 4 digits, not %d", digits)
			}
		}
	}
}

// directDebit says whether any part of BG-19 (BT-89, BT-90, BT-91) is in
// the document or means m.
func (c *checker) directDebit(m means) bool {
	return c.d.mandateRef.ok || c.d.creditorRef.ok || m.debtorIBAN.ok
}

func (c *checker) xrechnung() {
	d := c.d
	if d.process.s != billing.ProcessPeppol {
		c.fail("PEPPOL-EN16931-R001", "BT-23", "business process must be %s", billing.ProcessPeppol)
	}
	if len(d.means) == 0 {
		c.fail("BR-DE-1", "BG-16", "payment instructions are missing")
	}
	s := &d.seller
	if !s.hasContact {
		c.fail("BR-DE-2", "BG-6", "seller contact is missing")
	}
	c.require(s.city, "BR-DE-3", "BT-37", "seller city")
	c.require(s.postcode, "BR-DE-4", "BT-38", "seller post code")
	if s.hasContact {
		if !s.contactName.ok && !s.contactDept.ok {
			c.fail("BR-DE-5", "BT-41", "seller contact point is missing")
		}
		if c.require(s.phone, "BR-DE-6", "BT-42", "seller contact telephone number") {
			digits := 0
			for _, r := range s.phone.s {
				if r >= '0' && r <= '9' {
					digits++
				}
			}
			if digits < 3 {
				c.add(Warning, "BR-DE-27", "BT-42", "telephone number %q has fewer than 3 digits", s.phone.s)
			}
		}
		if c.require(s.email, "BR-DE-7", "BT-43", "seller contact e-mail address") && !emailRE.MatchString(s.email.s) {
			c.add(Warning, "BR-DE-28", "BT-43", "e-mail address %q is malformed", s.email.s)
		}
	}
	c.require(d.buyer.city, "BR-DE-8", "BT-52", "buyer city")
	c.require(d.buyer.postcode, "BR-DE-9", "BT-53", "buyer post code")
	for i, v := range d.vat {
		if !v.rate.ok {
			c.fail("BR-DE-14", fmt.Sprintf("BG-23[%d]/BT-119", i+1), "VAT category rate is missing")
		}
	}
	if c.require(d.buyerRef, "BR-DE-15", "BT-10", "buyer reference (Leitweg-ID)") && !billing.ValidLeitwegID(d.buyerRef.s) {
		c.fail(RuleLeitweg, "BT-10", "buyer reference %q is not a valid Leitweg-ID (format or check digits)", d.buyerRef.s)
	}
	needsID := false
	for _, v := range d.vat {
		switch v.category.s {
		case "S", "Z", "E", "AE", "K", "G", "L", "M":
			needsID = true
		}
	}
	if needsID && !s.vatID.ok && !s.taxNo.ok {
		c.fail("BR-DE-16", "BT-31/BT-32", "seller VAT identifier or tax number is missing")
	}
	switch d.typeCode.s {
	case "326", "380", "381", "384", "389", "875", "876", "877":
	default:
		c.add(Warning, "BR-DE-17", "BT-3", "type code %s is not one of 326, 380, 381, 384, 389, 875, 876, 877", d.typeCode.s)
	}
	for i, m := range d.means {
		at := fmt.Sprintf("BG-16[%d]", i+1)
		switch m.code.s {
		case "30", "58":
			if !m.account {
				c.fail("BR-DE-23-a", at+"/BG-17", "credit transfer needs the payee account (BG-17)")
			} else if !m.iban.ok {
				c.fail("BR-DE-23-a", at+"/BT-84", "credit transfer needs the IBAN")
			}
			if m.card || c.directDebit(m) {
				c.fail("BR-DE-23-b", at, "credit transfer must not carry card (BG-18) or direct debit (BG-19) information")
			}
		case "48", "54", "55":
			if !m.card {
				c.fail("BR-DE-24-a", at+"/BG-18", "card payment needs the payment card information (BG-18)")
			}
			if m.account || c.directDebit(m) {
				c.fail("BR-DE-24-b", at, "card payment must not carry credit transfer (BG-17) or direct debit (BG-19) information")
			}
		case "59":
			if !c.directDebit(m) {
				c.fail("BR-DE-25-a", at+"/BG-19", "SEPA direct debit needs the direct debit information (BG-19)")
			}
			if m.account || m.bic.ok || m.debtorBank || m.card {
				c.fail("BR-DE-25-b", at, "SEPA direct debit must not carry credit transfer (BG-17) or card (BG-18) information")
			}
		}
	}
	if d.typeCode.s == "384" && len(d.preceding) == 0 {
		c.add(Warning, "BR-DE-26", "BG-3", "a corrected invoice should reference the preceding invoice")
	}
	if !d.buyer.eaddr.ok {
		c.fail("PEPPOL-EN16931-R010", "BT-49", "buyer electronic address is missing")
	}
	if !s.eaddr.ok {
		c.fail("PEPPOL-EN16931-R020", "BT-34", "seller electronic address is missing")
	}
}

// own applies the service's own rules.
func (c *checker) own() {
	d := c.d
	test := strings.HasPrefix(d.number.s, "TEST-")
	marked := false
	for _, n := range d.notes {
		if strings.Contains(n, "TESTDOKUMENT") {
			marked = true
		}
	}
	if test != marked {
		c.fail(RuleTest, "BT-1/BT-22", "test number range and test note must go together (number %q, note %v)", d.number.s, marked)
	}
}
