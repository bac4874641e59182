// Package accounting turns issued documents and provider payments into what
// an accountant and the tax office receive: the DATEV bookings (the
// "Buchungsstapel", EXTF header record version 700, Windows-1252), the
// one-stop-shop report per quarter and the EC sales list per period. It
// decides every booking, account, deferral and sum, and which accounting
// method (accrual or cash-basis) applies to a document: only accrual
// accounting defers; the callers load the documents and the project's
// accounting history and write the bytes out. Test documents never appear.
// Pure: it imports only the standard library, internal/billing,
// internal/money, internal/vatid and golang.org/x/text (the Windows-1252
// encoder).
package accounting

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Chart is a DATEV standard chart of accounts (Sachkontenrahmen).
type Chart string

// The charts a project can choose.
const (
	SKR03 Chart = "SKR03"
	SKR04 Chart = "SKR04"
)

// ParseChart accepts SKR03 or SKR04 (any case); empty means SKR03.
func ParseChart(s string) (Chart, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "SKR03", "03":
		return SKR03, nil
	case "SKR04", "04":
		return SKR04, nil
	}
	return "", fmt.Errorf("chart of accounts %q: SKR03 or SKR04", s)
}

// Debtor modes: one collective debtor account, or one per customer.
const (
	DebtorsCollective  = "collective"
	DebtorsPerCustomer = "per_customer"
)

// ParseDebtors accepts collective or per_customer (per-customer too); empty
// means collective.
func ParseDebtors(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", DebtorsCollective:
		return DebtorsCollective, nil
	case DebtorsPerCustomer, "per-customer":
		return DebtorsPerCustomer, nil
	}
	return "", fmt.Errorf("debtors %q: collective or per_customer", s)
}

// Accounts are the accounts bookings go to. General ledger accounts have
// four digits (Sachkontenlänge 4), debtors five (10000 to 69999).
type Accounts struct {
	Revenue19     string // revenue at 19 % (automatic VAT account)
	Revenue7      string // revenue at 7 % (automatic VAT account)
	Revenue0      string // domestic zero-rated revenue (Z)
	IntraEUGoods  string // tax-free intra-community supply of goods (§4 Nr. 1b, §6a UStG)
	ReverseCharge string // services to EU businesses, the recipient owes the VAT (§13b UStG)
	Export        string // tax-free export of goods outside the EU (§4 Nr. 1a, §6 UStG)
	NotSubject    string // services not taxable in Germany (place of supply outside the EU)
	OSS           string // EU distance sales taxed in the member state of consumption (one-stop shop)
	Debtor        string // the collective debtor, and the first per-customer debtor is Debtor+1
	Payments      string // money in transit from the payment provider (Geldtransit)
	StoreCredit   string // store credit owed to customers, reduced when a customer redeems it
	Vouchers      string // multi-purpose vouchers (gift cards) sold and not yet redeemed
	Deferred      string // deferred revenue (passiver Rechnungsabgrenzungsposten)
}

// Standard returns the standard accounts of chart.
func Standard(c Chart) Accounts {
	if c == SKR04 {
		return Accounts{Revenue19: "4400", Revenue7: "4300", Revenue0: "4200", IntraEUGoods: "4125", ReverseCharge: "4336",
			Export: "4120", NotSubject: "4338", OSS: "4320", Debtor: "10000", Payments: "1460", StoreCredit: "3500",
			Vouchers: "3500", Deferred: "3900"}
	}
	return Accounts{Revenue19: "8400", Revenue7: "8300", Revenue0: "8200", IntraEUGoods: "8125", ReverseCharge: "8336",
		Export: "8120", NotSubject: "8338", OSS: "8320", Debtor: "10000", Payments: "1360", StoreCredit: "1700",
		Vouchers: "1700", Deferred: "0990"}
}

// accountNames maps the names used by overrides to the fields.
func (a *Accounts) fields() map[string]*string {
	return map[string]*string{
		"revenue19": &a.Revenue19, "revenue7": &a.Revenue7, "revenue0": &a.Revenue0, "intraEuGoods": &a.IntraEUGoods,
		"reverseCharge": &a.ReverseCharge, "export": &a.Export, "notSubject": &a.NotSubject, "oss": &a.OSS,
		"debtor": &a.Debtor, "payments": &a.Payments, "storeCredit": &a.StoreCredit, "vouchers": &a.Vouchers,
		"deferred": &a.Deferred,
	}
}

// AccountNames lists the names an override may use, sorted.
func AccountNames() []string {
	var a Accounts
	names := make([]string, 0, 13)
	for n := range a.fields() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// With returns a with overrides (name to account number) applied. A general
// ledger account has four digits (1 to 9999, leading zeros allowed), the
// debtor five (10000 to 69998). It reports the first bad name or number.
func (a Accounts) With(overrides map[string]string) (Accounts, error) {
	f := a.fields()
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p, ok := f[n]
		if !ok {
			return Accounts{}, fmt.Errorf("account %q: unknown; one of %s", n, strings.Join(AccountNames(), ", "))
		}
		v := strings.TrimSpace(overrides[n])
		if err := checkAccount(n, v); err != nil {
			return Accounts{}, err
		}
		*p = v
	}
	return a, nil
}

func checkAccount(name, v string) error {
	num, err := strconv.Atoi(v)
	if err != nil || num < 0 || strings.ContainsAny(v, "+- ") {
		return fmt.Errorf("account %s=%q: digits only", name, v)
	}
	if name == "debtor" {
		if len(v) != 5 || num < 10000 || num > 69998 {
			return fmt.Errorf("account %s=%q: a debtor account has five digits, 10000 to 69998", name, v)
		}
		return nil
	}
	if len(v) != 4 || num == 0 {
		return fmt.Errorf("account %s=%q: a general ledger account has four digits (Sachkontenlänge 4)", name, v)
	}
	return nil
}

// Settings are a project's accounting settings.
type Settings struct {
	Chart    Chart
	Accounts Accounts // Standard(Chart) with the project's overrides
	Debtors  string   // DebtorsCollective or DebtorsPerCustomer
	// Methods is the project's accounting history: the method in force for
	// each fiscal year (see MethodIn); empty means accrual throughout.
	Methods []MethodChange
}
