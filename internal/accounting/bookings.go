package accounting

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/vatid"
)

// Booking rules (every booking is "debit account to credit account",
// a positive amount, Soll/Haben-Kennzeichen S on the debit account)
//
//	invoice, per VAT breakdown entry   debtor        to revenue account of its treatment and rate, gross (base + VAT)
//	voucher sale (gift cards)          debtor        to vouchers (a liability: VAT arises at redemption), gross
//	store credit redeemed (in BT-113)  store credit  to debtor, the amount paid by credit
//	provider payment                   payments      to debtor, the amount received, on its own date
//	                                   (also when it is in BT-113 of a paid-before-issue invoice: booked once)
//	cancellation's offset (in BT-113)  nothing: no money moves
//	service period after the issue month, under accrual accounting in the document's fiscal year:
//	  at issue, per breakdown entry    revenue       to deferred revenue, the net of the later months (BU 40)
//	  1st of each later month          deferred      to revenue, that month's net (BU 40)
//	cancellation, credit note          the same bookings with debit and credit swapped
//
// The revenue account of a breakdown entry: domestic and distance sales
// with German VAT by rate (19, 7, 0), intra-community goods, reverse charge,
// export, not subject and OSS each on their own account. The automatic VAT
// accounts (Revenue19, Revenue7) compute the VAT from the gross; deferral
// bookings move net amounts between revenue and deferred revenue and carry
// BU-Schlüssel 40 (the automatic VAT switched off) so no VAT is computed
// twice. A residual cent of gross pricing (BT-114) goes with the first
// breakdown entry so the debtor receives exactly the amount payable.
//
// A month's share of a service period is its days over the period's days,
// rounded half up; the last month takes the remainder, so the shares sum to
// the net exactly.

// Document is one issued document with the debtor account of its customer.
type Document struct {
	Invoice billing.Invoice
	Debtor  string // the customer's debtor account (see DebtorKey); empty: Accounts.Debtor
}

// Payment is one payment received from the payment provider for an order.
type Payment struct {
	OrderNo   string
	Reference string // the invoice number the payment settles (Belegfeld 1); may be empty
	Debtor    string // the customer's debtor account; empty: Accounts.Debtor
	Date      time.Time
	Cents     money.Cents // positive: received; negative: refunded
	Test      bool        // the order belongs to test mode
}

// Booking is one DATEV booking line.
type Booking struct {
	Date        time.Time   // Belegdatum
	Cents       money.Cents // Umsatz, always positive
	Debit       string      // Konto (Soll/Haben-Kennzeichen S)
	Credit      string      // Gegenkonto
	BU          string      // BU-Schlüssel; "40" switches the automatic VAT off
	Document    string      // Belegfeld 1: the document number
	Text        string      // Buchungstext; a cancellation or credit note names the document it corrects
	EUVATID     string      // EU-Land u. UStID: the buyer's VAT ID (intra-community) or the member state (OSS)
	EURate      string      // EU-Steuersatz: the destination's rate of an OSS sale, DATEV notation "20,00"
	ServiceDate time.Time   // Leistungsdatum; zero: none
}

// DebtorKey identifies the customer of a document for per-customer debtors:
// the buyer's VAT ID, else the e-mail address, else name, postal code and
// country.
func DebtorKey(inv billing.Invoice) string {
	b := inv.Buyer
	// The VAT ID in its normal form: a document of before the door checked
	// it ("DE 123.456.789") and one of after ("DE123456789") are one customer.
	if v := vatid.Normalize(strings.TrimSpace(b.VATID)); v != "" {
		return "vat:" + v
	}
	if b.ElectronicAddressScheme == "EM" && strings.TrimSpace(b.ElectronicAddress) != "" {
		return "email:" + strings.ToLower(strings.TrimSpace(b.ElectronicAddress))
	}
	return "name:" + strings.ToLower(strings.TrimSpace(b.Name)) + "|" + strings.TrimSpace(b.PostalCode) + "|" + strings.ToUpper(b.CountryCode)
}

// Bookings returns the bookings dated from..to (inclusive, dates in UTC) of
// docs and payments, sorted by date, then document, then as decided. Test
// documents and test payments are left out. It fails on a document it cannot
// book (a breakdown entry no account fits, an amount that overflows).
func Bookings(s Settings, docs []Document, payments []Payment, from, to time.Time) ([]Booking, error) {
	from, to = day(from), day(to)
	var out []Booking
	keep := func(b Booking) {
		if b.Cents == 0 {
			return
		}
		if b.Cents < 0 {
			b.Cents = -b.Cents
			b.Debit, b.Credit = b.Credit, b.Debit
		}
		if d := day(b.Date); !d.Before(from) && !d.After(to) {
			out = append(out, b)
		}
	}
	for _, d := range docs {
		if d.Invoice.Test {
			continue
		}
		bs, err := documentBookings(s, d)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			keep(b)
		}
	}
	a := s.Accounts
	for _, p := range payments {
		if p.Test {
			continue
		}
		debtor := p.Debtor
		if debtor == "" {
			debtor = a.Debtor
		}
		text := "Zahlung " + p.OrderNo
		if p.Cents < 0 {
			text = "Erstattung " + p.OrderNo
		}
		keep(Booking{Date: p.Date, Cents: p.Cents, Debit: a.Payments, Credit: debtor, Document: p.Reference, Text: text})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Date.Equal(out[j].Date) {
			return out[i].Date.Before(out[j].Date)
		}
		return out[i].Document < out[j].Document
	})
	return out, nil
}

// sign is +1 for documents that bill and -1 for those that take back.
func sign(k billing.Kind) money.Cents {
	if k == billing.KindCancellation || k == billing.KindCreditNote {
		return -1
	}
	return 1
}

// documentBookings are every booking of one document, signed (negative
// amounts are swapped by the caller), at any date.
func documentBookings(s Settings, d Document) ([]Booking, error) {
	inv := d.Invoice
	a := s.Accounts
	debtor := d.Debtor
	if debtor == "" {
		debtor = a.Debtor
	}
	sg := sign(inv.Kind)
	prev := ""
	if inv.Preceding != nil {
		prev = " zu " + inv.Preceding.Number
	}
	title := map[billing.Kind]string{billing.KindInvoice: "Rechnung", billing.KindVoucherSale: "Gutscheinverkauf",
		billing.KindCancellation: "Storno", billing.KindCreditNote: "Rechnungskorrektur"}[inv.Kind]
	base := Booking{Date: inv.IssueDate, Document: inv.Number, ServiceDate: inv.SupplyDate}
	var out []Booking
	for i, v := range inv.VAT {
		b := base
		gross := v.BaseCents + v.TaxCents
		if i == 0 {
			gross += inv.Totals.RoundingCents
		}
		acct, err := revenueAccount(a, inv, v)
		if err != nil {
			return nil, err
		}
		b.Cents, b.Debit, b.Credit = sg*gross, debtor, acct
		b.Text = fmt.Sprintf("%s %s %s%s", title, inv.OrderNo, rateText(inv, v), prev)
		b.EUVATID, b.EURate = euFields(inv, v)
		out = append(out, b)
	}
	// Only the store-credit part of BT-113 is booked with the document: a
	// provider payment is booked once, with the payment, on its date; a
	// cancellation's offset moves no money.
	if credit := inv.Totals.StoreCreditCents(); credit != 0 {
		b := base
		b.Cents, b.Debit, b.Credit = sg*credit, a.StoreCredit, debtor
		b.Text = "Guthaben eingelöst " + inv.OrderNo
		out = append(out, b)
	}
	if s.Defers(inv) { // accrual accounting only: under cash-basis accounting revenue counts at once
		for _, d := range deferrals(inv) {
			v, period := d.entry, d.period
			acct, err := revenueAccount(a, inv, v)
			if err != nil {
				return nil, err
			}
			bu := ""
			if acct == a.Revenue19 || acct == a.Revenue7 {
				bu = "40"
			}
			shares, err := MonthShares(v.BaseCents, period.Start, period.End)
			if err != nil {
				return nil, fmt.Errorf("accounting: %s: %w", inv.Number, err)
			}
			issueMonth := month(inv.IssueDate)
			var deferred money.Cents
			for _, sh := range shares {
				if !sh.Month.After(issueMonth) {
					continue
				}
				deferred += sh.Cents
				r := base
				r.Date, r.Cents, r.Debit, r.Credit, r.BU = sh.Month, sg*sh.Cents, a.Deferred, acct, bu
				r.Text = fmt.Sprintf("Auflösung RAP %s %s", sh.Month.Format("2006-01"), inv.OrderNo)
				r.ServiceDate = time.Time{}
				out = append(out, r)
			}
			if deferred != 0 {
				b := base
				b.Cents, b.Debit, b.Credit, b.BU = sg*deferred, acct, a.Deferred, bu
				b.Text = fmt.Sprintf("RAP %s bis %s %s", period.Start.Format("01/2006"), period.End.Format("01/2006"), inv.OrderNo)
				out = append(out, b)
			}
		}
	}
	return out, nil
}

// revenueAccount is the account of a breakdown entry of inv.
func revenueAccount(a Accounts, inv billing.Invoice, v billing.VATBreakdown) (string, error) {
	if inv.Treatment == billing.TreatVoucherSale || inv.Kind == billing.KindVoucherSale {
		return a.Vouchers, nil
	}
	switch v.Category {
	case billing.CategoryIntraEU:
		return a.IntraEUGoods, nil
	case billing.CategoryReverse:
		return a.ReverseCharge, nil
	case billing.CategoryExport:
		return a.Export, nil
	case billing.CategoryNotSubject:
		return a.NotSubject, nil
	case billing.CategoryZero:
		return a.Revenue0, nil
	case billing.CategoryStandard:
		if inv.Treatment == billing.TreatOSS {
			return a.OSS, nil
		}
		switch {
		case v.Rate.Equal(money.Int(19)):
			return a.Revenue19, nil
		case v.Rate.Equal(money.Int(7)):
			return a.Revenue7, nil
		}
	}
	return "", fmt.Errorf("accounting: %s: no account for VAT category %s at %s %%", inv.Number, v.Category, v.Rate)
}

func rateText(inv billing.Invoice, v billing.VATBreakdown) string {
	switch {
	case inv.Kind == billing.KindVoucherSale:
		return "Gutscheine"
	case inv.Treatment == billing.TreatOSS:
		return fmt.Sprintf("OSS %s %s%%", inv.Destination, v.Rate)
	case v.Category == billing.CategoryStandard || v.Category == billing.CategoryZero:
		return fmt.Sprintf("%s%%", v.Rate)
	}
	return string(v.Category)
}

// euFields are the EU columns of a revenue booking: the buyer's VAT ID for
// intra-community supplies and reverse charge, the member state and its rate
// for OSS sales.
func euFields(inv billing.Invoice, v billing.VATBreakdown) (string, string) {
	switch {
	case inv.Treatment == billing.TreatOSS:
		return inv.Destination, decimalComma(v.Rate, 2)
	case v.Category == billing.CategoryIntraEU || v.Category == billing.CategoryReverse:
		return inv.Buyer.VATID, ""
	}
	return "", ""
}

// Share is the part of an amount that falls in one calendar month.
type Share struct {
	Month time.Time // first day of the month, UTC
	Cents money.Cents
}

// MonthShares splits cents over the calendar months of the period start..end
// (inclusive) by days: each month gets its days over the period's days,
// rounded half up, and the last month the remainder.
func MonthShares(cents money.Cents, start, end time.Time) ([]Share, error) {
	start, end = day(start), day(end)
	if end.Before(start) {
		return nil, fmt.Errorf("service period ends %s before it starts %s", end.Format(time.DateOnly), start.Format(time.DateOnly))
	}
	total := int64(end.Sub(start).Hours()/24) + 1
	var out []Share
	var given money.Cents
	for m := month(start); !m.After(end); m = m.AddDate(0, 1, 0) {
		lo, hi := m, m.AddDate(0, 1, -1)
		if lo.Before(start) {
			lo = start
		}
		if hi.After(end) {
			hi = end
		}
		days := int64(hi.Sub(lo).Hours()/24) + 1
		c, err := money.MulDivRound(int64(cents), days, total)
		if err != nil {
			return nil, err
		}
		out = append(out, Share{Month: m, Cents: money.Cents(c)})
		given += money.Cents(c)
	}
	out[len(out)-1].Cents += cents - given
	return out, nil
}

func day(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func month(t time.Time) time.Time {
	y, m, _ := t.Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}

// decimalComma formats d with exactly places decimals and a comma.
func decimalComma(d money.Decimal, places int) string {
	coef, scale := d.Coef()
	for scale < places {
		coef *= 10
		scale++
	}
	for scale > places { // rates never have more places; truncation is not reached
		coef /= 10
		scale--
	}
	neg := coef < 0
	if neg {
		coef = -coef
	}
	s := fmt.Sprintf("%0*d", places+1, coef)
	s = s[:len(s)-places] + "," + s[len(s)-places:]
	if neg {
		s = "-" + s
	}
	return s
}

// centsComma formats cents as DATEV amounts: "1234,56", never a sign.
func centsComma(c money.Cents) string {
	return decimalComma(money.NewDecimal(int64(c.Abs()), 2), 2)
}
