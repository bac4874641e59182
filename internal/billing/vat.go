package billing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/vatid"
)

// VAT determination (the seller is established in Germany)
//
// Goods or services: an order with requiresShipping is a supply of goods,
// otherwise a supply of services (digital goods, SaaS, subscriptions).
//
// The place country is where the supply is consumed: for goods the shipping
// address's country (the end of the transport, §3c UStG), else the billing
// country; for services the billing country.
//
//	place DE                               -> TreatDomestic: German rates 19, 7 (S) or 0 (Z)
//	EU, goods, buyer's VAT ID of another
//	  member state than Germany            -> TreatIntraEU: K, 0 %, VATEX-EU-IC (EC sales list)
//	Northern Ireland, goods, XI VAT ID     -> TreatIntraEU (Windsor Framework)
//	EU, goods, buyer's German VAT ID       -> TreatDistanceDE: German VAT (a business buyer: no
//	                                          intra-community supply, no distance sale either)
//	EU, services, buyer's VAT ID of a
//	  member state                         -> TreatReverseCharge: AE, 0 %, VATEX-EU-AE (EC sales list)
//	EU, no (valid) VAT ID, seller OSS      -> TreatOSS: S at the destination's rates (OSS return)
//	EU, no (valid) VAT ID, seller not OSS  -> TreatDistanceDE: German VAT as domestic
//	outside the EU, goods                  -> TreatExport: G, 0 %, VATEX-EU-G
//	outside the EU, services               -> TreatNotSubject: O, VATEX-EU-O
//	gift-card lines (any buyer)            -> TreatVoucherSale: O on their own document
//
// The buyer's VAT ID is the billing address's, and it counts only when it
// is a VAT ID by its issuing state's syntax (package vatid); an XI ID
// (Northern Ireland) counts for goods shipped to Northern Ireland only.
// Northern Ireland is a shipping address in GB with a BT postcode (or the
// country XI). Where the VAT ID needs a person to confirm it (its prefix is
// not the buyer's country, it is not valid, it sits on the shipping address
// only, ...), VATIDReview says why.
//
// The rate of a line: the item's taxRate when sent, else the catalogue
// product's default, else the standard rate of the place of supply. Under
// German VAT only 19, 7 and 0 are accepted. Under OSS a rate must be one of
// the destination's rates (eurates.json); a sent 19 (the German standard
// rate) means "standard-rated" and becomes the destination's standard rate;
// any other foreign rate (e.g. a German 7 for France) is rejected, because
// which reduced rate applies abroad depends on the product [verify with a tax
// adviser per product class].

//go:embed eurates.json
var euRatesJSON []byte

// RateTable is the dated table of EU member states' VAT rates.
type RateTable struct {
	Title  string                 `json:"title"`
	AsOf   string                 `json:"asOf"`
	Source string                 `json:"source"`
	Note   string                 `json:"note"`
	Rates  map[string]CountryRate `json:"rates"`
}

// CountryRate holds one member state's standard and reduced rates.
type CountryRate struct {
	Standard money.Decimal   `json:"standard"`
	Reduced  []money.Decimal `json:"reduced"`
}

// euRates is read once from the embedded file and never changed.
var euRates = mustRates(euRatesJSON)

func mustRates(b []byte) RateTable {
	var t RateTable
	if err := json.Unmarshal(b, &t); err != nil {
		panic(fmt.Sprintf("billing: eurates.json: %v", err))
	}
	if len(t.Rates) != 27 || t.AsOf == "" || t.Source == "" {
		panic("billing: eurates.json must list 27 member states with date and source")
	}
	return t
}

// EURates returns a copy of the embedded EU VAT rate table.
func EURates() RateTable {
	t := euRates
	t.Rates = make(map[string]CountryRate, len(euRates.Rates))
	for k, v := range euRates.Rates {
		v.Reduced = append([]money.Decimal(nil), v.Reduced...)
		t.Rates[k] = v
	}
	return t
}

// IsEU reports whether country (ISO 3166-1 alpha-2; EL is accepted for
// Greece) is an EU member state.
func IsEU(country string) bool {
	_, ok := euRates.Rates[isoCountry(country)]
	return ok
}

func isoCountry(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	if c == "EL" {
		return "GR"
	}
	return c
}

// German rates accepted for domestic supplies.
var (
	rate19 = money.Int(19)
	rate7  = money.Int(7)
	rate0  = money.Int(0)
)

// Exemption reasons (BT-120) and codes (BT-121) per category.
const (
	reasonIntraEU     = "Steuerfreie innergemeinschaftliche Lieferung (§ 4 Nr. 1 Buchst. b, § 6a UStG) / Intra-community supply"
	reasonReverse     = "Steuerschuldnerschaft des Leistungsempfängers (§ 13b UStG, Art. 196 MwStSystRL) / Reverse charge"
	reasonExport      = "Steuerfreie Ausfuhrlieferung (§ 4 Nr. 1 Buchst. a, § 6 UStG) / Export outside the EU"
	reasonNotSubject  = "Nicht im Inland steuerbare Leistung (Leistungsort im Drittland, § 3a UStG) / Not subject to VAT"
	reasonVoucherSale = "Verkauf von Mehrzweck-Gutscheinen: nicht steuerbar, die Umsatzsteuer entsteht bei Einlösung (§ 3 Abs. 15 UStG) / Not subject to VAT"
)

// exemption returns BT-120 and BT-121 for a category; S and Z have none.
func exemption(c Category, t Treatment) (string, string) {
	switch c {
	case CategoryIntraEU:
		return reasonIntraEU, "VATEX-EU-IC"
	case CategoryReverse:
		return reasonReverse, "VATEX-EU-AE"
	case CategoryExport:
		return reasonExport, "VATEX-EU-G"
	case CategoryNotSubject:
		if t == TreatVoucherSale {
			return reasonVoucherSale, "VATEX-EU-O"
		}
		return reasonNotSubject, "VATEX-EU-O"
	}
	return "", ""
}

// placeCountry is the country whose rules decide the treatment.
func placeCountry(o *Order) string {
	if o.RequiresShipping && o.ShippingAddress != nil && o.ShippingAddress.CountryCode != "" {
		return isoCountry(o.ShippingAddress.CountryCode)
	}
	return isoCountry(o.BillingAddress.CountryCode)
}

// Determine returns the VAT treatment of the order's taxed lines (gift cards
// are always TreatVoucherSale) for a seller established in Germany.
func Determine(o Order, s Seller) Treatment {
	c := placeCountry(&o)
	id, valid := buyerID(&o)
	goods := o.RequiresShipping
	switch {
	case c == "DE":
		return TreatDomestic
	case goods && toNorthernIreland(&o):
		if valid && id.NorthernIreland() {
			return TreatIntraEU
		}
		return TreatExport
	case goods && IsEU(c) && valid && !id.NorthernIreland() && id.MemberState() != "DE":
		return TreatIntraEU
	case goods && IsEU(c) && valid && id.MemberState() == "DE":
		return TreatDistanceDE
	case !goods && IsEU(c) && valid && !id.NorthernIreland():
		return TreatReverseCharge
	case IsEU(c) && s.OSSRegistered:
		return TreatOSS
	case IsEU(c):
		return TreatDistanceDE
	case goods:
		return TreatExport
	}
	return TreatNotSubject
}

// VATIDReview returns why the buyer's VAT ID needs a person to confirm the
// treatment Determine gives o, or "" when nothing does. Only supplies to
// another member state (and goods to Northern Ireland) are concerned: there
// the VAT ID decides between zero rating or reverse charge and VAT. The
// treatment stands as Determine gives it; the reason says what it relies on.
func VATIDReview(o Order) string {
	c := placeCountry(&o)
	goods := o.RequiresShipping
	ni := goods && toNorthernIreland(&o)
	if c == "DE" || !IsEU(c) && !ni {
		return ""
	}
	raw := o.BillingAddress.VATID
	if vatid.Normalize(raw) == "" {
		if sa := o.ShippingAddress; sa != nil && vatid.Normalize(sa.VATID) != "" {
			return fmt.Sprintf("the VAT ID %q is on the shipping address only, the buyer's (billing address) VAT ID decides: "+
				"taxed as a sale without VAT ID; send it on the billing address if the buyer is that business", sa.VATID)
		}
		return ""
	}
	id, err := vatid.Parse(raw)
	buyer := isoCountry(o.BillingAddress.CountryCode)
	switch {
	case err != nil:
		return fmt.Sprintf("the buyer's VAT ID %q %v: taxed as a sale without VAT ID", raw, err)
	case ni && !id.NorthernIreland():
		return fmt.Sprintf("goods shipped to Northern Ireland for the VAT ID %s: only an XI VAT ID makes them an intra-community supply; "+
			"treated as an export", id)
	case id.NorthernIreland() && !goods:
		return fmt.Sprintf("the VAT ID %s is from Northern Ireland, which counts for goods only, not for services: taxed as a sale without VAT ID", id)
	case id.NorthernIreland() && !ni:
		return fmt.Sprintf("the VAT ID %s is from Northern Ireland, but the goods go to %s: an XI VAT ID counts for goods shipped to "+
			"Northern Ireland only; taxed as a sale without VAT ID", id, c)
	case goods && id.MemberState() == "DE":
		return fmt.Sprintf("the buyer's VAT ID %s is German and the goods go to %s: no tax-free intra-community supply (§ 6a UStG needs "+
			"a VAT ID of another member state), German VAT charged; ask for the buyer's VAT ID in another member state", id, c)
	case !id.MatchesCountry(buyer):
		relies := "the zero-rated intra-community supply"
		if !goods {
			relies = "the reverse charge"
		}
		return fmt.Sprintf("the VAT ID %s is not of the buyer's country %s: confirm it with the issuing state (qualified "+
			"confirmation, § 18e UStG) before relying on %s", id, buyer, relies)
	}
	return ""
}

// buyerID returns the buyer's VAT ID (the billing address's) when it is a
// valid VAT ID.
func buyerID(o *Order) (vatid.ID, bool) {
	id, err := vatid.Parse(o.BillingAddress.VATID)
	return id, err == nil
}

// buyerVATID is the buyer's VAT ID as the invoice states it (BT-48): a
// valid VAT ID normalised (upper case, without spaces, dots and hyphens),
// any other identifier upper-cased without spaces.
func buyerVATID(s string) string {
	if id, err := vatid.Parse(s); err == nil {
		return string(id)
	}
	return strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
}

// toNorthernIreland reports whether the goods of o go to Northern Ireland:
// the place of supply's address is in GB with a BT postcode, or in XI.
func toNorthernIreland(o *Order) bool {
	a := &o.BillingAddress
	if o.ShippingAddress != nil && o.ShippingAddress.CountryCode != "" {
		a = o.ShippingAddress
	}
	switch strings.ToUpper(strings.TrimSpace(a.CountryCode)) {
	case "XI":
		return true
	case "GB":
		return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(a.PostalCode)), "BT")
	}
	return false
}

// taxOf decides category and rate of one line under treatment t. sent is the
// rate sent (or the product default), nil when none; field names the input
// for an error.
func taxOf(t Treatment, dest string, sent *money.Decimal, field string) (Category, money.Decimal, *FieldError) {
	switch t {
	case TreatIntraEU:
		return CategoryIntraEU, rate0, nil
	case TreatReverseCharge:
		return CategoryReverse, rate0, nil
	case TreatExport:
		return CategoryExport, rate0, nil
	case TreatNotSubject, TreatVoucherSale:
		return CategoryNotSubject, rate0, nil
	case TreatOSS:
		cr := euRates.Rates[dest]
		if sent == nil || sent.Equal(cr.Standard) || sent.Equal(rate19) {
			return CategoryStandard, cr.Standard, nil
		}
		for _, r := range cr.Reduced {
			if sent.Equal(r) {
				return CategoryStandard, r, nil
			}
		}
		return "", money.Decimal{}, &FieldError{Field: field, Message: fmt.Sprintf(
			"tax rate %s is not a VAT rate of %s (one-stop shop: send the destination's rate)", sent, dest)}
	}
	// German VAT (domestic, or distance sale without OSS)
	if sent == nil {
		return CategoryStandard, rate19, nil
	}
	switch {
	case sent.Equal(rate19), sent.Equal(rate7):
		return CategoryStandard, *sent, nil
	case sent.IsZero():
		return CategoryZero, rate0, nil
	}
	return "", money.Decimal{}, &FieldError{Field: field, Message: fmt.Sprintf(
		"tax rate %s is not a German VAT rate (19, 7 or 0)", sent)}
}
