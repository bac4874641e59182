package einvoice

import (
	"strings"
	"testing"
)

func TestScannerWellFormedness(t *testing.T) {
	t.Parallel()
	const root = `<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100" xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100">`
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{"mismatched end tag", root + `<rsm:ExchangedDocument></rsm:Other></rsm:CrossIndustryInvoice>`, "does not match"},
		{"unclosed", root + `<rsm:ExchangedDocument>`, "unexpected end"},
		{"doctype", `<!DOCTYPE x [<!ENTITY a "b">]>` + root + `</rsm:CrossIndustryInvoice>`, "DOCTYPE"},
		{"unknown entity", root + `<rsm:ExchangedDocument><ram:ID>&foo;</ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>`, "entity"},
		{"undeclared prefix", root + `<x:ExchangedDocument/></rsm:CrossIndustryInvoice>`, "undeclared"},
		{"text after root", root + `</rsm:CrossIndustryInvoice>junk`, "outside"},
		{"second root", root + `</rsm:CrossIndustryInvoice>` + root + `</rsm:CrossIndustryInvoice>`, "second root"},
		{"unquoted attribute", `<rsm:CrossIndustryInvoice a=b></rsm:CrossIndustryInvoice>`, "unquoted"},
		{"duplicate attribute", `<rsm:CrossIndustryInvoice a="1" a="2"></rsm:CrossIndustryInvoice>`, "duplicate"},
		{"invalid UTF-8", root + "\xff</rsm:CrossIndustryInvoice>", "UTF-8"},
		{"empty", ``, "no root"},
		{"processing instruction without target", `<?>` + root + `</rsm:CrossIndustryInvoice>`, "without a target"},
		{"control character", root + "<rsm:ExchangedDocument><ram:ID>\x01</ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>", "not allowed"},
		{"control character in CDATA", root + "<rsm:ExchangedDocument><ram:ID><![CDATA[\x00]]></ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>", "not allowed"},
		{"U+FFFE in an attribute", "<rsm:CrossIndustryInvoice a=\"\uFFFE\"></rsm:CrossIndustryInvoice>", "not allowed"},
		{"an encoding other than UTF-8", `<?xml version="1.0" encoding="ISO-8859-1"?>` + root + `</rsm:CrossIndustryInvoice>`, "only UTF-8"},
		{"a made-up encoding", `<?xml encoding="8"?>` + root + `</rsm:CrossIndustryInvoice>`, "only UTF-8"},
		{"XML 1.1", `<?xml version="1.1"?>` + root + `</rsm:CrossIndustryInvoice>`, "only 1.0"},
		{"two colons in a name", root + `<rsm:SupplyChainTradeTransaction><ram::/></rsm:SupplyChainTradeTransaction></rsm:CrossIndustryInvoice>`, "malformed start tag"},
		{"empty local part", root + `<rsm:SupplyChainTradeTransaction><ram:/></rsm:SupplyChainTradeTransaction></rsm:CrossIndustryInvoice>`, "malformed start tag"},
		{"two colons in an attribute name", root + `<rsm:ExchangedDocument a:b:c="1"></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>`, "malformed attribute"},
		{"]]> after a reference", root + `<rsm:ExchangedDocument><ram:ID>&amp;]]></ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>`, "']]>'"},
		{"U+FFFF as a reference", root + `<rsm:ExchangedDocument><ram:ID>&#xFFFF;</ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>`, "entity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, fs := parseCII([]byte(tc.doc))
			if d != nil || len(fs) != 1 || fs[0].Rule != RuleXSD || !strings.Contains(fs[0].Message, tc.wantErr) {
				t.Errorf("got doc %v, findings %v; want one XSD finding with %q", d != nil, fs, tc.wantErr)
			}
		})
	}
}

func TestScannerValues(t *testing.T) {
	t.Parallel()
	doc := `<?xml version="1.0"?><!-- c --><r:CrossIndustryInvoice xmlns:r="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100">` +
		`<r:ExchangedDocument xmlns:a="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100">` +
		`<a:ID>A&amp;B&#x20;&#67;<![CDATA[<x>]]></a:ID></r:ExchangedDocument></r:CrossIndustryInvoice>`
	d, _ := parseCII([]byte(doc))
	if d == nil || d.number.s != "A&B C<x>" {
		t.Fatalf("number = %+v", d)
	}
}
