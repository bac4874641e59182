package render

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadView: the XML reader of the PDF never panics on any bytes; it
// refuses with errNotCII, and a view it returns has what every PDF shows.
func FuzzReadView(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.xml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no sample XML in testdata: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `<x/>`, `<CrossIndustryInvoice xmlns="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"/>`,
		`<CrossIndustryInvoice xmlns="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"><ExchangedDocument><ID>1</ID><TypeCode>380</TypeCode>` +
			`<IssueDateTime><DateTimeString format="102">20261301</DateTimeString></IssueDateTime></ExchangedDocument></CrossIndustryInvoice>`,
		`<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">]><x>&a;&a;</x>`, "<x>\xff</x>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := readView(data, false)
		if err != nil {
			if v != nil || !errors.Is(err, errNotCII) {
				t.Fatalf("want errNotCII and no view, got %v, %v", v != nil, err)
			}
			return
		}
		if v == nil || v.Number == "" || v.Title == "" || v.IssueDate.IsZero() || v.Currency == "" ||
			len(v.Lines) == 0 || len(v.VAT) == 0 || len(v.Totals) == 0 {
			t.Fatalf("incomplete view accepted: %+v", v)
		}
		for _, l := range v.Lines {
			if l.ID == "" || l.Name == "" || l.Quantity == "" || l.Price == "" || l.Net == "" {
				t.Fatalf("incomplete line accepted: %+v", l)
			}
		}
	})
}
