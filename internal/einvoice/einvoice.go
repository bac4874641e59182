// Package einvoice holds the EN 16931 and XRechnung 3.0 business rules as Go
// code: a validator over a computed billing.Invoice (Check) and over CII XML
// (CheckXML). The pipeline runs it on every invoice before archiving; a
// finding at level Error marks the invoice failed and its rule ids go into
// the review task. Its CII parse is the only CII reader of the service:
// ReadCII gives render the document the PDF shows.
//
// Covered: the rules our data can break — presence rules (BR-01 ... BR-16,
// BR-21 ... BR-27, BR-41/42, BR-45 ... BR-49, BR-55, BR-57, BR-61 ... BR-63),
// the arithmetic (BR-CO-10 ... BR-CO-18), BR-CO-09/19/25/26, the VAT
// category rules (BR-S, BR-Z, BR-E, BR-AE, BR-IC for K, BR-G, BR-O), decimals
// (BR-DEC), the XRechnung rules (BR-DE-1 ... BR-DE-28 as far as CII fields
// exist here, PEPPOL-EN16931-R001/R010/R020/R120), the schema structure of
// the profile (rule id XSD: known elements, order, occurrences, required
// children), and two rules of this service: O2I-LEITWEG (the Leitweg-ID's
// check digits, which the official rules do not check) and O2I-TEST (a test
// number and the test note go together). Rule ids are the official ones, so
// findings can be compared with the official validator's.
//
// The arithmetic is checked exactly, without the official schematron's
// tolerance of one currency unit (BR-CO-17, BR-S-09): our invoices are exact.
//
// Imports: the standard library, internal/billing and internal/money. Pure:
// no I/O.
package einvoice

import (
	"slices"

	"github.com/o2i-service/o2i/internal/billing"
)

// Severity of a finding.
type Severity string

// Severities. Errors make an invoice invalid; warnings are reported (the
// official validator's --strict mode fails on them too).
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Rule ids of this service and of the structure check.
const (
	RuleXSD     = "XSD"
	RuleLeitweg = "O2I-LEITWEG"
	RuleTest    = "O2I-TEST"
)

// Finding is one violated rule.
type Finding struct {
	Rule     string // official rule id, e.g. BR-CO-15, BR-DE-6, XSD
	Severity Severity
	Message  string
	Path     string // where: an XML path or a business term
}

func (f Finding) String() string {
	s := string(f.Severity) + " " + f.Rule + ": " + f.Message
	if f.Path != "" {
		s += " (" + f.Path + ")"
	}
	return s
}

// Check validates a computed invoice value. It returns the findings; none
// means the invoice satisfies every implemented rule.
func Check(inv billing.Invoice) []Finding {
	return checkDoc(fromInvoice(&inv))
}

// CheckXML validates CII XML: its structure against the profile schema and
// every implemented business rule.
func CheckXML(data []byte) []Finding {
	_, fs := CheckAndReadCII(data)
	return fs
}

// CheckAndReadCII is CheckXML that also returns the document as ReadCII
// reads it, from the same parse (nil when the XML cannot be read).
func CheckAndReadCII(data []byte) (*Document, []Finding) {
	d, fs := parseCII(data)
	if d == nil {
		return nil, fs
	}
	read := d.document()
	return read, append(fs, checkDoc(d)...)
}

// Valid reports whether fs holds no finding at level Error.
func Valid(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Error {
			return false
		}
	}
	return true
}

// RuleIDs returns the distinct rule ids of fs, sorted.
func RuleIDs(fs []Finding) []string {
	ids := make([]string, 0, len(fs))
	for _, f := range fs {
		ids = append(ids, f.Rule)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
