package accounting

import (
	"fmt"

	"github.com/o2i-service/o2i/internal/billing"
)

// Accounting methods. Under accrual accounting (Bilanzierung) the revenue
// of a service period is deferred over its months; under cash-basis
// accounting (Einnahmenüberschussrechnung, EÜR) there are no deferrals and
// revenue counts immediately (spec: service_period rules 4 and 5).
const (
	Accrual = "accrual"
	Cash    = "cash"
)

// MethodChange is one entry of a project's accounting history: Method is in
// force from the first day of fiscal year From (the financial year is the
// calendar year) until the next change.
type MethodChange struct {
	From   int    `json:"fromYear"`
	Method string `json:"method"`
}

// MethodIn returns the method in force in fiscal year year: that of the
// latest change from year or before. Years before the first change have the
// first change's method (the one the project began with); an empty history
// means accrual throughout. The history may be in any order.
func MethodIn(history []MethodChange, year int) string {
	in, first := -1, -1
	for i, c := range history {
		if c.From <= year && (in < 0 || c.From > history[in].From) {
			in = i
		}
		if first < 0 || c.From < history[first].From {
			first = i
		}
	}
	switch {
	case in >= 0:
		return history[in].Method
	case first >= 0:
		return history[first].Method
	}
	return Accrual
}

// FiscalYear is the fiscal year a document belongs to: the calendar year of
// its issue date.
func FiscalYear(inv billing.Invoice) int { return inv.IssueDate.Year() }

// MethodOf returns the accounting method in force for inv: the method of
// its fiscal year.
func (s Settings) MethodOf(inv billing.Invoice) string {
	return MethodIn(s.Methods, FiscalYear(inv))
}

// Defers reports whether the revenue of inv is deferred over its service
// period: it has one, it is not a voucher sale (a liability, not revenue),
// and accrual accounting is in force for its fiscal year.
func (s Settings) Defers(inv billing.Invoice) bool {
	return len(deferrals(inv)) > 0 && inv.Kind != billing.KindVoucherSale && s.MethodOf(inv) == Accrual
}

// deferral is a net amount of one VAT breakdown entry recognised over a
// service period.
type deferral struct {
	entry  billing.VATBreakdown // BaseCents: the net deferred over period
	period billing.Period
}

// deferrals are inv's amounts with a service period: each breakdown entry
// over the document's period (BG-14), or, without one, the lines with a
// period of their own (BG-26, a product's default) summed per entry and
// period, in the order of the lines.
func deferrals(inv billing.Invoice) []deferral {
	var out []deferral
	if p := inv.Period; p != nil {
		for _, v := range inv.VAT {
			out = append(out, deferral{v, *p})
		}
		return out
	}
	at := map[string]int{}
	for _, l := range inv.Lines {
		if l.Period == nil {
			continue
		}
		key := string(l.Category) + "|" + l.Rate.String() + "|" + l.Period.Start.String() + "|" + l.Period.End.String()
		i, ok := at[key]
		if !ok {
			for _, v := range inv.VAT {
				if v.Category == l.Category && v.Rate.Equal(l.Rate) {
					v.BaseCents = 0
					i, at[key] = len(out), len(out)
					out = append(out, deferral{v, *l.Period})
					break
				}
			}
			if _, ok = at[key]; !ok {
				continue // no breakdown entry: Invariants rule this out
			}
		}
		out[i].entry.BaseCents += l.NetCents
	}
	return out
}

// WithChange returns history with method in force from fiscal year from on,
// the methods of earlier years as they were: changes of from and later
// years are replaced, a change that would change nothing is not recorded,
// and when the change replaces the first entry with another method, the
// years before from keep that method by an entry of the year before from
// (an empty history, a project's start, has nothing to keep). history is
// not modified; the result is sorted by year.
func WithChange(history []MethodChange, from int, method string) []MethodChange {
	var out []MethodChange
	for _, c := range history {
		if c.From < from {
			out = append(out, c)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: histories are short
		for j := i; j > 0 && out[j].From < out[j-1].From; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	if len(out) == 0 && len(history) > 0 {
		if before := MethodIn(history, from-1); before != method {
			out = append(out, MethodChange{From: from - 1, Method: before})
		}
	}
	if len(out) == 0 || MethodIn(out, from) != method {
		out = append(out, MethodChange{From: from, Method: method})
	}
	return out
}

// ChangeYear decides the fiscal year a change of method takes effect from.
// current is the current fiscal year, lastIssued the fiscal year of the
// project's latest live document (0: none). A year with documents keeps its
// method, so that its exports stay as they were: the default (from 0) is
// the current year while it has no documents, else the year after the
// latest document's (the next year); a year given must come after every
// year with documents. It fails for a year given that has documents or is
// not from 2000 to 9999.
func ChangeYear(from, current, lastIssued int) (int, error) {
	earliest := max(current, lastIssued+1)
	if from == 0 {
		return earliest, nil
	}
	if from < 2000 || from > 9999 {
		return 0, fmt.Errorf("fiscal year %d is not from 2000 to 9999", from)
	}
	if from <= lastIssued {
		return 0, fmt.Errorf("fiscal year %d already has documents (the latest of %d): a change of accounting method takes effect from %d at the earliest, so that exports of earlier years stay as they were",
			from, lastIssued, lastIssued+1)
	}
	return from, nil
}
