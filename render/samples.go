package render

import (
	"fmt"

	"github.com/o2i-service/o2i/internal/billing"
)

// Document is one rendered document of an order.
type Document struct {
	Invoice billing.Invoice
	XML     []byte
}

// FileName is the file name of the document's XML: the invoice number with
// characters other than letters, digits, '-' and '_' replaced by '_', plus
// ".xml".
func (d Document) FileName() string {
	b := []byte(d.Invoice.Number)
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b) + ".xml"
}

// Preview computes the documents of one order and renders their XML (for
// "o2i invoice preview"). Errors are billing's (FieldErrors for an invalid
// order) or render's.
func Preview(o billing.Order, s billing.Seller, ctx billing.Context) ([]Document, error) {
	invs, err := billing.Compute(o, s, ctx)
	if err != nil {
		return nil, err
	}
	return renderAll(invs)
}

func renderAll(invs []billing.Invoice) ([]Document, error) {
	docs := make([]Document, len(invs))
	for i, inv := range invs {
		x, err := CII(inv)
		if err != nil {
			return nil, err
		}
		docs[i] = Document{Invoice: inv, XML: x}
	}
	return docs, nil
}

// Sample is a named corpus scenario with its rendered documents.
type Sample struct {
	Scenario  billing.Scenario
	Documents []Document
}

// FileNames returns one file name per document: the scenario name, plus
// "-2", "-3" ... for further documents of the same scenario, and ".xml"
// (for "o2i invoice samples --out DIR").
func (s Sample) FileNames() []string {
	names := make([]string, len(s.Documents))
	for i := range s.Documents {
		names[i] = s.Scenario.Name + ".xml"
		if i > 0 {
			names[i] = fmt.Sprintf("%s-%d.xml", s.Scenario.Name, i+1)
		}
	}
	return names
}

// Samples computes and renders every scenario of billing.Scenarios, in
// order.
func Samples() ([]Sample, error) {
	scs := billing.Scenarios()
	out := make([]Sample, 0, len(scs))
	for _, sc := range scs {
		invs, err := sc.Documents()
		if err != nil {
			return nil, fmt.Errorf("render: scenario %s: %w", sc.Name, err)
		}
		docs, err := renderAll(invs)
		if err != nil {
			return nil, fmt.Errorf("render: scenario %s: %w", sc.Name, err)
		}
		out = append(out, Sample{Scenario: sc, Documents: docs})
	}
	return out, nil
}
