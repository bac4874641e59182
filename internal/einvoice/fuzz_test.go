package einvoice_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/render"
)

// FuzzCheckXML: the CII reader and the rules never panic on any bytes. A
// document the scanner finds not well-formed gets exactly one XSD finding;
// one it reads is well-formed for encoding/xml too; CheckXML's findings
// begin with the structure findings of ReadCII (one parse for both); every
// finding names a rule and a severity. It is an external test because its
// seeds come from render, which imports einvoice.
func FuzzCheckXML(f *testing.F) {
	for _, sc := range billing.Scenarios() {
		invs, err := sc.Documents()
		if err != nil {
			f.Fatalf("scenario %s: %v", sc.Name, err)
		}
		for _, inv := range invs {
			x, err := render.CII(inv)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(x)
		}
	}
	const root = `<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100" xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100">`
	for _, s := range []string{
		root + `</rsm:CrossIndustryInvoice>`,
		"\xEF\xBB\xBF<?xml version=\"1.0\"?>" + root + `<rsm:ExchangedDocument><ram:ID>&#x52;&amp;&lt;<![CDATA[1]]></ram:ID></rsm:ExchangedDocument></rsm:CrossIndustryInvoice>`,
		root + `<rsm:SupplyChainTradeTransaction><ram:IncludedSupplyChainTradeLineItem/><x:y xmlns:x="u"/></rsm:SupplyChainTradeTransaction></rsm:CrossIndustryInvoice>`,
		`<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>`,
		`<a><b></a></b>`, `<a x="1" x="2"/>`, `<a>&#0;</a>`, `<a>]]></a>`, `<p:a/>`, `<a/><b/>`, "<a>\xff</a>", ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, fs, err := einvoice.ReadCII(data)
		if (d == nil) != (err != nil) {
			t.Fatalf("ReadCII: document %v with error %v", d != nil, err)
		}
		if d == nil && (len(fs) != 1 || fs[0].Rule != einvoice.RuleXSD || fs[0].Severity != einvoice.Error) {
			t.Fatalf("an unread document must have one XSD finding, got %v", fs)
		}
		if d != nil {
			if err := wellFormed(data); err != nil {
				t.Fatalf("read as well-formed, but encoding/xml says: %v", err)
			}
		}
		all := einvoice.CheckXML(data)
		if len(all) < len(fs) || !slices.Equal(all[:len(fs)], fs) {
			t.Fatalf("CheckXML does not begin with ReadCII's findings:\n%v\n%v", all, fs)
		}
		for _, f := range all {
			if f.Rule == "" || (f.Severity != einvoice.Error && f.Severity != einvoice.Warning) {
				t.Fatalf("finding without rule or severity: %+v", f)
			}
		}
	})
}

// wellFormed reads data with encoding/xml's strict tokenizer.
func wellFormed(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))))
	for {
		if _, err := dec.Token(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
