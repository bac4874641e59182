package einvoice

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

type schemaChild struct {
	ns, name, typ string
	min, max      int // max -1: unbounded
}

var nsURI = map[string]string{
	"rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
	"ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
	"qdt": "urn:un:unece:uncefact:data:standard:QualifiedDataType:100",
	"udt": "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100",
}

// frame is an open element during parsing.
type frame struct {
	typ    string    // complex type, "" for a leaf
	last   int       // index of the last child seen in the type's sequence
	counts []int     // occurrences per child
	path   string    // slash-joined local names from the root
	node   *pathNode // path as a node of the shared path tree
}

// pathNode interns element paths and their place in the schema: every
// document repeats the same paths, so each is built and looked up in the
// schema once and shared (per element, this was half of the XML check).
// A path determines its parent's type, so the schema position is fixed.
type pathNode struct {
	path     string
	idx      int         // index in the parent type's sequence; -1: not allowed there
	schema   schemaChild // the schema entry at idx
	uri      string      // the namespace the schema wants for the element
	mu       sync.RWMutex
	children map[string]*pathNode
}

var rootPath = &pathNode{path: "CrossIndustryInvoice", idx: -1}

// child returns the node of element local under n, whose type is parentTyp.
// Only elements the schema allows are kept in the tree, so that foreign
// documents cannot grow it.
func (n *pathNode) child(parentTyp string, local []byte) *pathNode {
	n.mu.RLock()
	c := n.children[string(local)]
	n.mu.RUnlock()
	if c != nil {
		return c
	}
	c = &pathNode{path: n.path + "/" + string(local), idx: -1}
	if parentTyp == "" {
		return c
	}
	i, sc := childIndex(parentTyp, local)
	if i < 0 {
		return c
	}
	c.idx, c.schema, c.uri = i, sc, nsURI[sc.ns]
	n.mu.Lock()
	defer n.mu.Unlock()
	if old := n.children[string(local)]; old != nil {
		return old
	}
	if n.children == nil {
		n.children = map[string]*pathNode{}
	}
	n.children[string(local)] = c
	return c
}

type binding struct {
	prefix, uri string
	depth       int
}

// parseCII reads CII XML into the semantic model and checks its structure
// against the profile schema: known elements in schema order, occurrence
// limits, required children, no text in aggregates. Structure problems are
// findings with rule "XSD"; a document that is not well-formed yields only
// that finding and a nil doc.
func parseCII(data []byte) (*doc, []Finding) {
	var fs []Finding
	xsd := func(path, format string, args ...any) {
		fs = append(fs, Finding{Rule: RuleXSD, Severity: Error, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	malformed := func(err error) (*doc, []Finding) {
		return nil, []Finding{{Rule: RuleXSD, Severity: Error, Message: "not well-formed XML: " + err.Error()}}
	}
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	if !utf8.Valid(data) {
		return malformed(errors.New("not UTF-8"))
	}
	sc := &scanner{b: data}
	d := &doc{}
	stack := make([]frame, 0, 16)
	bindings := []binding{{"xml", "http://www.w3.org/XML/1998/namespace", 0}}
	var text []byte
	for {
		kind, qname, chars, err := sc.next()
		if err != nil {
			return malformed(err)
		}
		switch kind {
		case tokEOF:
			return d, fs
		case tokStart:
			depth := len(stack) + 1
			for _, a := range sc.attrs {
				switch {
				case string(a.name) == "xmlns":
					bindings = append(bindings, binding{"", string(a.value), depth})
				case bytes.HasPrefix(a.name, []byte("xmlns:")):
					bindings = append(bindings, binding{string(a.name[6:]), string(a.value), depth})
				}
			}
			prefix, local := "", qname
			if k := bytes.IndexByte(qname, ':'); k >= 0 {
				prefix, local = string(qname[:k]), qname[k+1:]
			}
			space, bound := "", prefix == ""
			for k := len(bindings) - 1; k >= 0; k-- {
				if bindings[k].prefix == prefix {
					space, bound = bindings[k].uri, true
					break
				}
			}
			if !bound {
				return malformed(fmt.Errorf("undeclared namespace prefix %q", prefix))
			}
			f := frame{last: -1}
			if len(stack) == 0 {
				if string(local) != "CrossIndustryInvoice" || space != nsURI["rsm"] {
					return nil, append(fs, Finding{Rule: RuleXSD, Severity: Error,
						Message: fmt.Sprintf("root element {%s}%s, want rsm:CrossIndustryInvoice", space, local)})
				}
				f.typ, f.path, f.node = "CrossIndustryInvoiceType", rootPath.path, rootPath
			} else {
				parent := &stack[len(stack)-1]
				f.node = parent.node.child(parent.typ, local)
				f.path = f.node.path
				if parent.typ == "" {
					xsd(f.path, "element not allowed in a simple value")
				} else if i, c := f.node.idx, f.node.schema; i < 0 {
					xsd(f.path, "element not allowed here (profile EN 16931)")
				} else {
					if f.node.uri != space {
						xsd(f.path, "wrong namespace %q, want %s", space, nsURI[c.ns])
					}
					if i < parent.last {
						xsd(f.path, "element out of schema order")
					}
					parent.last = i
					if parent.counts == nil {
						parent.counts = make([]int, len(schemaTypes[parent.typ]))
					}
					parent.counts[i]++
					if c.max >= 0 && parent.counts[i] > c.max {
						xsd(f.path, "element occurs more than %d time(s)", c.max)
					}
					f.typ = c.typ
				}
			}
			stack = append(stack, f)
			text = text[:0]
			d.start(f.path, sc.attrs)
		case tokText:
			top := &stack[len(stack)-1]
			if top.typ == "" {
				text = append(text, chars...)
			} else if len(bytes.TrimSpace(chars)) > 0 {
				xsd(top.path, "text not allowed in an aggregate")
			}
		case tokEnd:
			f := &stack[len(stack)-1]
			if f.typ != "" {
				for i, c := range schemaTypes[f.typ] {
					if c.min > 0 && (f.counts == nil || f.counts[i] < c.min) {
						xsd(f.path, "required element %s:%s missing", c.ns, c.name)
					}
				}
			} else {
				d.text(f.path, string(text))
				text = text[:0]
			}
			for len(bindings) > 0 && bindings[len(bindings)-1].depth == len(stack) {
				bindings = bindings[:len(bindings)-1]
			}
			stack = stack[:len(stack)-1]
		}
	}
}

func childIndex(typ string, name []byte) (int, schemaChild) {
	for i, c := range schemaTypes[typ] {
		if c.name == string(name) {
			return i, c
		}
	}
	return -1, schemaChild{}
}

// Paths of the model's fields.
const (
	pCtx  = "CrossIndustryInvoice/ExchangedDocumentContext/"
	pDoc  = "CrossIndustryInvoice/ExchangedDocument/"
	pTx   = "CrossIndustryInvoice/SupplyChainTradeTransaction/"
	pLine = pTx + "IncludedSupplyChainTradeLineItem"
	pAgr  = pTx + "ApplicableHeaderTradeAgreement/"
	pDel  = pTx + "ApplicableHeaderTradeDelivery/"
	pSet  = pTx + "ApplicableHeaderTradeSettlement/"
	pSum  = pSet + "SpecifiedTradeSettlementHeaderMonetarySummation/"
)

// start opens records for repeated groups and remembers attributes.
func (d *doc) start(path string, attrs []rawAttr) {
	switch path {
	case pLine:
		d.lines = append(d.lines, line{})
	case pLine + "/SpecifiedLineTradeSettlement/SpecifiedTradeAllowanceCharge":
		if l := d.lastLine(); l != nil {
			l.ac = append(l.ac, allowance{})
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans":
		d.means = append(d.means, means{})
	case pSet + "SpecifiedTradeSettlementPaymentMeans/PayeePartyCreditorFinancialAccount":
		if m := last(d.means); m != nil {
			m.account = true
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/ApplicableTradeSettlementFinancialCard":
		if m := last(d.means); m != nil {
			m.card = true
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/PayerSpecifiedDebtorFinancialInstitution":
		if m := last(d.means); m != nil {
			m.debtorBank = true
		}
	case pSet + "ApplicableTradeTax":
		d.vat = append(d.vat, vatBreakdown{})
	case pSet + "BillingSpecifiedPeriod":
		d.hasPeriod = true
	case pSet + "SpecifiedTradePaymentTerms":
		d.terms = append(d.terms, terms{})
	case pSet + "SpecifiedTradeAllowanceCharge":
		d.docAC = append(d.docAC, allowance{})
	case pSet + "InvoiceReferencedDocument":
		d.preceding = append(d.preceding, reference{})
	case pDel + "ShipToTradeParty":
		d.shipTo = &party{}
	case pAgr + "SellerTradeParty/DefinedTradeContact":
		d.seller.hasContact = true
	case pAgr + "BuyerTradeParty/DefinedTradeContact":
		d.buyer.hasContact = true
	case pAgr + "SellerTradeParty/PostalTradeAddress":
		d.seller.hasAddress = true
	case pAgr + "BuyerTradeParty/PostalTradeAddress":
		d.buyer.hasAddress = true
	case pDel + "ShipToTradeParty/PostalTradeAddress":
		if d.shipTo != nil {
			d.shipTo.hasAddress = true
		}
	}
	if len(attrs) > 0 {
		for _, a := range attrs {
			switch string(a.name) {
			case "schemeID":
				d.pendingScheme(path, string(a.value))
			case "currencyID":
				if path == pSum+"TaxTotalAmount" {
					d.taxTotalCur = string(a.value)
				}
			case "format":
				d.dateFormat(path, string(a.value))
			case "unitCode":
				if l := d.lastLine(); l != nil && path == pLine+"/SpecifiedLineTradeDelivery/BilledQuantity" {
					l.unitCode = some(string(a.value))
				}
			}
		}
	}
}

func (d *doc) pendingScheme(path, scheme string) {
	switch path {
	case pAgr + "SellerTradeParty/URIUniversalCommunication/URIID":
		d.seller.eaddrScheme = some(scheme)
	case pAgr + "BuyerTradeParty/URIUniversalCommunication/URIID":
		d.buyer.eaddrScheme = some(scheme)
	case pAgr + "SellerTradeParty/SpecifiedTaxRegistration/ID":
		d.seller.pendingTaxScheme = scheme
	case pAgr + "BuyerTradeParty/SpecifiedTaxRegistration/ID":
		d.buyer.pendingTaxScheme = scheme
	case pDel + "ShipToTradeParty/URIUniversalCommunication/URIID":
		if d.shipTo != nil {
			d.shipTo.eaddrScheme = some(scheme)
		}
	case pDel + "ShipToTradeParty/SpecifiedTaxRegistration/ID":
		if d.shipTo != nil {
			d.shipTo.pendingTaxScheme = scheme
		}
	}
}

// dateFormat remembers the format attribute of a date the model holds. The
// date's text always follows its start tag, so opening the period here adds
// nothing the text would not.
func (d *doc) dateFormat(path, format string) {
	switch path {
	case pDoc + "IssueDateTime/DateTimeString":
		d.issueFormat = format
	case pDel + "ActualDeliverySupplyChainEvent/OccurrenceDateTime/DateTimeString":
		d.deliveryFormat = format
	case pSet + "BillingSpecifiedPeriod/StartDateTime/DateTimeString":
		d.ensurePeriod().startFormat = format
	case pSet + "BillingSpecifiedPeriod/EndDateTime/DateTimeString":
		d.ensurePeriod().endFormat = format
	case pSet + "InvoiceReferencedDocument/FormattedIssueDateTime/DateTimeString":
		if r := last(d.preceding); r != nil {
			r.dateFormat = format
		}
	}
}

func (d *doc) lastLine() *line {
	if len(d.lines) == 0 {
		return nil
	}
	return &d.lines[len(d.lines)-1]
}

func last[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[len(s)-1]
}

// text stores the value of a leaf by its path.
func (d *doc) text(path, raw string) {
	v := some(strings.TrimSpace(raw))
	switch {
	case strings.HasPrefix(path, pLine+"/"):
		if l := d.lastLine(); l != nil {
			l.set(path[len(pLine)+1:], v)
		}
		return
	case strings.HasPrefix(path, pAgr+"SellerTradeParty/"):
		d.seller.set(path[len(pAgr+"SellerTradeParty/"):], v)
		return
	case strings.HasPrefix(path, pAgr+"BuyerTradeParty/"):
		d.buyer.set(path[len(pAgr+"BuyerTradeParty/"):], v)
		return
	case strings.HasPrefix(path, pDel+"ShipToTradeParty/"):
		if d.shipTo != nil {
			d.shipTo.set(path[len(pDel+"ShipToTradeParty/"):], v)
		}
		return
	}
	switch path {
	case pCtx + "BusinessProcessSpecifiedDocumentContextParameter/ID":
		d.process = v
	case pCtx + "GuidelineSpecifiedDocumentContextParameter/ID":
		d.guideline = v
	case pDoc + "ID":
		d.number = v
	case pDoc + "TypeCode":
		d.typeCode = v
	case pDoc + "IssueDateTime/DateTimeString":
		d.issueDate = v
	case pDoc + "IncludedNote/Content":
		d.notes = append(d.notes, v.s)
	case pAgr + "BuyerReference":
		d.buyerRef = v
	case pAgr + "SellerOrderReferencedDocument/IssuerAssignedID":
		d.orderRef = v
	case pDel + "ActualDeliverySupplyChainEvent/OccurrenceDateTime/DateTimeString":
		d.deliveryDate = v
	case pSet + "InvoiceCurrencyCode":
		d.currency = v
	case pSet + "PaymentReference":
		d.paymentRef = v
	case pSet + "CreditorReferenceID":
		d.creditorRef = v
	case pSet + "SpecifiedTradePaymentTerms/DirectDebitMandateID":
		d.mandateRef = v
	case pSet + "SpecifiedTradeSettlementPaymentMeans/ApplicableTradeSettlementFinancialCard/ID":
		if m := last(d.means); m != nil {
			m.cardID = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/ApplicableTradeSettlementFinancialCard/CardholderName":
		if m := last(d.means); m != nil {
			m.holder = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/PayerPartyDebtorFinancialAccount/IBANID":
		if m := last(d.means); m != nil {
			m.debtorIBAN = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/TypeCode":
		if m := last(d.means); m != nil {
			m.code = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/Information":
		if m := last(d.means); m != nil {
			m.info = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/PayeePartyCreditorFinancialAccount/IBANID":
		if m := last(d.means); m != nil {
			m.iban = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/PayeePartyCreditorFinancialAccount/AccountName":
		if m := last(d.means); m != nil {
			m.accountName = v
		}
	case pSet + "SpecifiedTradeSettlementPaymentMeans/PayeeSpecifiedCreditorFinancialInstitution/BICID":
		if m := last(d.means); m != nil {
			m.bic = v
		}
	case pSet + "BillingSpecifiedPeriod/StartDateTime/DateTimeString":
		d.ensurePeriod().start = v
	case pSet + "BillingSpecifiedPeriod/EndDateTime/DateTimeString":
		d.ensurePeriod().end = v
	case pSet + "SpecifiedTradePaymentTerms/Description":
		if t := last(d.terms); t != nil {
			t.desc = v
		}
	case pSet + "SpecifiedTradePaymentTerms/DueDateDateTime/DateTimeString":
		if t := last(d.terms); t != nil {
			t.due = v
		}
	case pSet + "InvoiceReferencedDocument/IssuerAssignedID":
		if r := last(d.preceding); r != nil {
			r.id = v
		}
	case pSet + "InvoiceReferencedDocument/FormattedIssueDateTime/DateTimeString":
		if r := last(d.preceding); r != nil {
			r.date = v
		}
	case pSum + "LineTotalAmount":
		d.totals.lineTotal = v
	case pSum + "ChargeTotalAmount":
		d.totals.chargeTotal = v
	case pSum + "AllowanceTotalAmount":
		d.totals.allowanceTotal = v
	case pSum + "TaxBasisTotalAmount":
		d.totals.taxBasis = v
	case pSum + "TaxTotalAmount":
		// BT-110 is the one in the invoice currency; a second one (BT-111)
		// is in the VAT accounting currency.
		if !d.totals.taxTotal.ok || d.taxTotalCur == "" || d.taxTotalCur == d.currency.s {
			d.totals.taxTotal = v
			d.taxCurrency = some(d.taxTotalCur)
		}
		d.taxTotalCur = ""
	case pSum + "RoundingAmount":
		d.totals.rounding = v
	case pSum + "GrandTotalAmount":
		d.totals.grand = v
	case pSum + "TotalPrepaidAmount":
		d.totals.prepaid = v
	case pSum + "DuePayableAmount":
		d.totals.due = v
	default:
		if strings.HasPrefix(path, pSet+"ApplicableTradeTax/") {
			if b := last(d.vat); b != nil {
				switch path[len(pSet+"ApplicableTradeTax/"):] {
				case "CalculatedAmount":
					b.tax = v
				case "BasisAmount":
					b.base = v
				case "CategoryCode":
					b.category = v
				case "RateApplicablePercent":
					b.rate = v
				case "ExemptionReason":
					b.reason = v
				case "ExemptionReasonCode":
					b.reasonCode = v
				}
			}
		} else if strings.HasPrefix(path, pSet+"SpecifiedTradeAllowanceCharge/") {
			if a := last(d.docAC); a != nil {
				a.set(path[len(pSet+"SpecifiedTradeAllowanceCharge/"):], v)
			}
		}
	}
}

func (d *doc) ensurePeriod() *period {
	if d.period == nil {
		d.period = &period{}
	}
	return d.period
}

func (p *party) set(rel string, v val) {
	switch rel {
	case "ID":
		p.id = v
	case "Name":
		p.name = v
	case "SpecifiedLegalOrganization/ID":
		p.legalID = v
	case "DefinedTradeContact/PersonName":
		p.contactName = v
	case "DefinedTradeContact/DepartmentName":
		p.contactDept = v
	case "DefinedTradeContact/TelephoneUniversalCommunication/CompleteNumber":
		p.phone = v
	case "DefinedTradeContact/EmailURIUniversalCommunication/URIID":
		p.email = v
	case "PostalTradeAddress/PostcodeCode":
		p.postcode = v
	case "PostalTradeAddress/LineOne":
		p.line1 = v
	case "PostalTradeAddress/LineTwo":
		p.line2 = v
	case "PostalTradeAddress/CityName":
		p.city = v
	case "PostalTradeAddress/CountryID":
		p.country = v
	case "URIUniversalCommunication/URIID":
		p.eaddr = v
	case "SpecifiedTaxRegistration/ID":
		switch p.pendingTaxScheme {
		case "VA":
			p.vatID = v
		case "FC":
			p.taxNo = v
		}
		p.pendingTaxScheme = ""
	}
}

func (l *line) set(rel string, v val) {
	switch rel {
	case "AssociatedDocumentLineDocument/LineID":
		l.id = v
	case "SpecifiedTradeProduct/SellerAssignedID":
		l.sellerID = v
	case "SpecifiedTradeProduct/Name":
		l.name = v
	case "SpecifiedLineTradeAgreement/NetPriceProductTradePrice/ChargeAmount":
		l.price = v
	case "SpecifiedLineTradeAgreement/NetPriceProductTradePrice/BasisQuantity":
		l.basisQty = v
	case "SpecifiedLineTradeDelivery/BilledQuantity":
		l.qty = v
	case "SpecifiedLineTradeSettlement/ApplicableTradeTax/CategoryCode":
		l.category = v
	case "SpecifiedLineTradeSettlement/ApplicableTradeTax/RateApplicablePercent":
		l.rate = v
	case "SpecifiedLineTradeSettlement/SpecifiedTradeSettlementLineMonetarySummation/LineTotalAmount":
		l.net = v
	case "SpecifiedLineTradeSettlement/BillingSpecifiedPeriod/StartDateTime/DateTimeString":
		l.periodStart = v
	case "SpecifiedLineTradeSettlement/BillingSpecifiedPeriod/EndDateTime/DateTimeString":
		l.periodEnd = v
	default:
		const ac = "SpecifiedLineTradeSettlement/SpecifiedTradeAllowanceCharge/"
		if strings.HasPrefix(rel, ac) {
			if a := last(l.ac); a != nil {
				a.set(rel[len(ac):], v)
			}
		}
	}
}

func (a *allowance) set(rel string, v val) {
	switch rel {
	case "ChargeIndicator/Indicator":
		a.charge, a.indicator = v.s == "true", v.s
	case "ActualAmount":
		a.amount = v
	case "Reason":
		a.reason = v
	case "ReasonCode":
		a.code = v
	case "CategoryTradeTax/CategoryCode":
		a.category = v
	case "CategoryTradeTax/RateApplicablePercent":
		a.rate = v
	}
}
