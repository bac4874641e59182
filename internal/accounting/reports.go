package accounting

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/vatid"
)

// Period is a reporting period: a calendar month or a quarter.
type Period struct {
	Label    string    // "2026-Q1" or "2026-03"
	From, To time.Time // first and last day, UTC
}

// ParseQuarter reads "YYYY-Qn" (n 1 to 4).
func ParseQuarter(s string) (Period, error) {
	y, qs, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok || len(y) != 4 || len(qs) != 2 || (qs[0] != 'Q' && qs[0] != 'q') {
		return Period{}, fmt.Errorf("quarter %q: expected YYYY-Qn, for example 2026-Q1", s)
	}
	year, err1 := strconv.Atoi(y)
	n, err2 := strconv.Atoi(qs[1:])
	if err1 != nil || err2 != nil || year < 2000 || year > 9999 || n < 1 || n > 4 {
		return Period{}, fmt.Errorf("quarter %q: expected YYYY-Qn, for example 2026-Q1", s)
	}
	from := time.Date(year, time.Month(3*(n-1)+1), 1, 0, 0, 0, 0, time.UTC)
	return Period{Label: fmt.Sprintf("%d-Q%d", year, n), From: from, To: from.AddDate(0, 3, -1)}, nil
}

// ParsePeriod reads a month "YYYY-MM" or a quarter "YYYY-Qn" (the EC sales
// list is monthly, or quarterly for small sellers).
func ParsePeriod(s string) (Period, error) {
	if strings.ContainsAny(s, "Qq") {
		return ParseQuarter(s)
	}
	t, err := time.Parse("2006-01", strings.TrimSpace(s))
	if err != nil || t.Year() < 2000 {
		return Period{}, fmt.Errorf("period %q: expected YYYY-MM (or YYYY-Qn), for example 2026-03", s)
	}
	return Period{Label: t.Format("2006-01"), From: t, To: t.AddDate(0, 1, -1)}, nil
}

func (p Period) contains(t time.Time) bool {
	d := day(t)
	return !d.Before(p.From) && !d.After(p.To)
}

// OSSRow is one line of the one-stop-shop return: the B2C distance sales of
// one member state at one rate.
type OSSRow struct {
	Country  string        // member state of consumption (ISO 3166-1; Greece EL as the return wants it)
	Rate     money.Decimal // percent
	Standard bool          // the member state's standard rate, else a reduced rate
	NetCents money.Cents
	TaxCents money.Cents
}

// OSS sums the OSS sales issued in p: per member state and rate, net and
// VAT of every live document flagged for the return, cancellations and
// credit notes subtracted. Rows are sorted by country and rate; rows that
// sum to zero (a sale and its cancellation in one quarter) are left out.
func OSS(docs []billing.Invoice, p Period) []OSSRow {
	sums := NewOSSSums(p)
	for _, inv := range docs {
		sums.Add(inv)
	}
	return sums.Rows()
}

// OSSSums sums the OSS return document by document, holding one row per
// member state and rate: a report reads its documents in pages.
type OSSSums struct {
	p     Period
	sums  map[ossKey]*OSSRow
	rates map[string]billing.CountryRate
}

type ossKey struct{ country, rate string }

// NewOSSSums starts the OSS return of p.
func NewOSSSums(p Period) *OSSSums {
	return &OSSSums{p: p, sums: map[ossKey]*OSSRow{}, rates: billing.EURates().Rates}
}

// Add counts inv when it belongs to the return (see OSS).
func (o *OSSSums) Add(inv billing.Invoice) {
	if inv.Test || !inv.OSSReport || inv.Treatment != billing.TreatOSS || !o.p.contains(inv.IssueDate) {
		return
	}
	sg := sign(inv.Kind)
	for _, v := range inv.VAT {
		if v.Category != billing.CategoryStandard {
			continue
		}
		country := strings.ToUpper(inv.Destination)
		k := ossKey{country, v.Rate.String()}
		r := o.sums[k]
		if r == nil {
			cr := o.rates[country]
			r = &OSSRow{Country: country, Rate: v.Rate, Standard: v.Rate.Equal(cr.Standard)}
			o.sums[k] = r
		}
		r.NetCents += sg * v.BaseCents
		r.TaxCents += sg * v.TaxCents
	}
}

// Rows are the return's rows (see OSS).
func (o *OSSSums) Rows() []OSSRow {
	out := make([]OSSRow, 0, len(o.sums))
	for _, sum := range o.sums {
		r := *sum
		if r.NetCents == 0 && r.TaxCents == 0 {
			continue
		}
		if r.Country == "GR" {
			r.Country = "EL"
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Country != out[j].Country {
			return out[i].Country < out[j].Country
		}
		return out[i].Rate.Cmp(out[j].Rate) < 0
	})
	return out
}

// WriteOSS writes the OSS rows as the CSV of the tax office's upload
// (BZSt, EU scheme): two version lines, the column names, then per row
// "3" (supplies from Germany), member state, STANDARD or REDUCED, the rate,
// net and VAT with a decimal point. UTF-8. Every field goes through one
// recordWriter (records.go): the member state is an identifier, written
// unchanged and quoted only if it holds a comma, a quote or a line break.
func WriteOSS(w io.Writer, rows []OSSRow) error {
	rw := recordWriter{f: bzstFormat}
	rw.write(plain("#v1.0"))
	rw.write(plain("#ve1.2"))
	rw.write(plain("Satzart"), plain("Land des Verbrauchs"), plain("Umsatzsteuertyp"), plain("Umsatzsteuersatz"),
		plain("Steuerbemessungsgrundlage"), plain("Umsatzsteuerbetrag"))
	for _, r := range rows {
		typ := "REDUCED"
		if r.Standard {
			typ = "STANDARD"
		}
		rw.write(plain("3"), ident(r.Country), ident(typ), plain(strings.ReplaceAll(decimalComma(r.Rate, 2), ",", ".")),
			plain(r.NetCents.String()), plain(r.TaxCents.String()))
	}
	if rw.err != nil {
		return rw.err
	}
	_, err := w.Write(rw.buf.Bytes())
	return err
}

// ECSL kinds (Art der Leistung).
const (
	ECSLGoods    = "L" // intra-community supply of goods
	ECSLServices = "S" // services, the recipient owes the VAT
)

// ECSLRow is one line of the EC sales list (Zusammenfassende Meldung).
type ECSLRow struct {
	Country   string // the VAT ID's country prefix (EL for Greece)
	VATNumber string // the VAT ID without its prefix
	Kind      string // ECSLGoods or ECSLServices
	NetCents  money.Cents
}

// Euros is the amount as the list states it: whole euros, rounded half away
// from zero.
func (r ECSLRow) Euros() int64 {
	e, _ := money.MulDivRound(int64(r.NetCents), 1, 100)
	return e
}

// ECSL sums the intra-community supplies issued in p: per customer VAT ID
// and kind, the net of every live document flagged for the list,
// cancellations and credit notes subtracted. Rows are sorted by VAT ID and
// kind; rows that sum to zero (a supply and its cancellation in one period)
// are left out.
func ECSL(docs []billing.Invoice, p Period) []ECSLRow {
	sums := NewECSLSums(p)
	for _, inv := range docs {
		sums.Add(inv)
	}
	return sums.Rows()
}

// ECSLSums sums the EC sales list document by document, holding one sum per
// VAT ID and kind: a report reads its documents in pages.
type ECSLSums struct {
	p    Period
	sums map[ecslKey]money.Cents
}

type ecslKey struct{ vat, kind string }

// NewECSLSums starts the EC sales list of p.
func NewECSLSums(p Period) *ECSLSums { return &ECSLSums{p: p, sums: map[ecslKey]money.Cents{}} }

// Add counts inv when it belongs to the list (see ECSL).
func (e *ECSLSums) Add(inv billing.Invoice) {
	if inv.Test || !inv.ECSalesList || !e.p.contains(inv.IssueDate) {
		return
	}
	kind := ""
	switch inv.Treatment {
	case billing.TreatIntraEU:
		kind = ECSLGoods
	case billing.TreatReverseCharge:
		kind = ECSLServices
	default:
		return
	}
	vat := vatid.Normalize(strings.TrimSpace(inv.Buyer.VATID))
	var net money.Cents
	for _, v := range inv.VAT {
		if v.Category == billing.CategoryIntraEU || v.Category == billing.CategoryReverse {
			net += v.BaseCents
		}
	}
	e.sums[ecslKey{vat, kind}] += sign(inv.Kind) * net
}

// Rows are the list's rows (see ECSL).
func (e *ECSLSums) Rows() []ECSLRow {
	out := make([]ECSLRow, 0, len(e.sums))
	for k, net := range e.sums {
		if net == 0 {
			continue
		}
		country, number := k.vat, ""
		if len(k.vat) > 2 {
			country, number = k.vat[:2], k.vat[2:]
		}
		out = append(out, ECSLRow{Country: country, VATNumber: number, Kind: k.kind, NetCents: net})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Country+out[i].VATNumber, out[j].Country+out[j].VATNumber
		if a != b {
			return a < b
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// WriteECSL writes the EC sales list as the CSV of the tax office's upload
// (BZSt online portal): two version lines, the column names, then per row
// country prefix, VAT number, amount in whole euros and the kind. UTF-8.
// Every field goes through one recordWriter (records.go): prefix, VAT
// number and kind are identifiers, written unchanged and quoted only if one
// holds a comma, a quote or a line break, so that a malformed VAT ID from
// an old document stays in its one field and adds no row.
func WriteECSL(w io.Writer, rows []ECSLRow) error {
	rw := recordWriter{f: bzstFormat}
	rw.write(plain("#v1.0"))
	rw.write(plain("#ve1.0"))
	rw.write(plain("Laenderkennzeichen"), plain("USt-IdNr."), plain("Betrag(EUR)"), plain("Art der Leistung"))
	for _, r := range rows {
		rw.write(ident(r.Country), ident(r.VATNumber), plain(strconv.FormatInt(r.Euros(), 10)), ident(r.Kind))
	}
	if rw.err != nil {
		return rw.err
	}
	_, err := w.Write(rw.buf.Bytes())
	return err
}
