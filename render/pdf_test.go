package render_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/einvoice/referee"
	"github.com/o2i-service/o2i/render"
)

// renderedPDF is one sample document with its PDF.
type renderedPDF struct {
	name string // file name without extension
	doc  render.Document
	pdf  []byte
}

// samplePDFs renders every document of render.Samples once per test binary.
var samplePDFs = sync.OnceValues(func() ([]renderedPDF, error) {
	samples, err := render.Samples()
	if err != nil {
		return nil, err
	}
	var out []renderedPDF
	for _, s := range samples {
		for i, d := range s.Documents {
			name := strings.TrimSuffix(s.FileNames()[i], ".xml")
			p, err := render.PDF(d.XML)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, renderedPDF{name: name, doc: d, pdf: p})
		}
	}
	return out, nil
})

func allPDFs(t *testing.T) []renderedPDF {
	t.Helper()
	pdfs, err := samplePDFs()
	if err != nil {
		t.Fatal(err)
	}
	if len(pdfs) < 20 {
		t.Fatalf("%d sample documents, want at least 20", len(pdfs))
	}
	return pdfs
}

// TestPDFOfficialValidator is the referee for the PDFs: every sample's PDF
// passes validate-einvoice --strict (PDF/A-3 and Factur-X facts, the
// embedded XML against XSD, CEN and XRechnung rules) with zero errors and
// zero warnings, all in one call. A missing validator fails the test.
func TestPDFOfficialValidator(t *testing.T) {
	t.Parallel()
	validator, err := referee.Path()
	if err != nil {
		t.Fatalf("official validator missing: %v", err)
	}
	dir := t.TempDir()
	var files []string
	for _, p := range allPDFs(t) {
		f := filepath.Join(dir, p.name+".pdf")
		if err := os.WriteFile(f, p.pdf, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	rep, err := referee.Run(validator, []string{"--strict"}, "auto", files...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d PDFs in %v", len(files), rep.Elapsed)
	requireClean(t, rep, files)
}

// TestPDFEmbedsTheXML: the embedded factur-x.xml is byte-identical to the
// input, and the PDF/A metadata says what the XML says.
func TestPDFEmbedsTheXML(t *testing.T) {
	t.Parallel()
	for _, p := range allPDFs(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			ctx := readPDF(t, p.pdf)
			aa, err := ctx.ExtractAttachments(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(aa) != 1 || aa[0].FileName != "factur-x.xml" {
				t.Fatalf("attachments %v, want one factur-x.xml", aa)
			}
			got, err := io.ReadAll(aa[0])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, p.doc.XML) {
				t.Fatalf("embedded XML (%d bytes) differs from the input (%d bytes)", len(got), len(p.doc.XML))
			}

			xmp := string(metadata(t, ctx))
			level := "EN 16931"
			if p.doc.Invoice.Format == billing.FormatXRechnung {
				level = "XRECHNUNG"
			}
			for _, want := range []string{
				"<pdfaid:part>3</pdfaid:part>", "<pdfaid:conformance>B</pdfaid:conformance>",
				"<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>", "<fx:DocumentType>INVOICE</fx:DocumentType>",
				"<fx:ConformanceLevel>" + level + "</fx:ConformanceLevel>",
				"<xmp:CreateDate>" + p.doc.Invoice.IssueDate.Format("2006-01-02") + "T00:00:00Z</xmp:CreateDate>",
			} {
				if !strings.Contains(xmp, want) {
					t.Errorf("XMP lacks %s", want)
				}
			}
			info := infoDict(t, ctx)
			date := p.doc.Invoice.IssueDate.Format("D:20060102") + "000000+00'00'"
			if info["CreationDate"] != date || info["ModDate"] != date {
				t.Errorf("info dates %q, %q, want %q", info["CreationDate"], info["ModDate"], date)
			}
			if !strings.Contains(xmp, "<rdf:li xml:lang=\"x-default\">"+info["Title"]+"</rdf:li>") {
				t.Errorf("info Title %q is not the XMP dc:title", info["Title"])
			}
			sum := md5.Sum(p.doc.XML)
			id := strings.ToUpper(hex.EncodeToString(sum[:]))
			if len(ctx.ID) != 2 || ctx.ID[0] != types.HexLiteral(id) || ctx.ID[1] != types.HexLiteral(id) {
				t.Errorf("trailer ID %v, want the XML's MD5 %s twice", ctx.ID, id)
			}
		})
	}
}

// TestPDFShowsTheXML: the pages show the invoice number, every line name
// and every amount of the XML, in German notation.
func TestPDFShowsTheXML(t *testing.T) {
	t.Parallel()
	amount := regexp.MustCompile(`<ram:(LineTotalAmount|BasisAmount|CalculatedAmount|GrandTotalAmount|DuePayableAmount|TotalPrepaidAmount|ChargeAmount)>([^<]+)<`)
	name := regexp.MustCompile(`<ram:Name>([^<]+)<`)
	for _, p := range allPDFs(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Join(pageTexts(t, p.pdf), "\n")
			x := string(p.doc.XML)
			want := []string{p.doc.Invoice.Number, p.doc.Invoice.IssueDate.Format("02.01.2006")}
			for _, m := range name.FindAllStringSubmatch(x, -1) {
				want = append(want, unescapeXML(m[1]))
			}
			for _, m := range amount.FindAllStringSubmatch(x, -1) {
				want = append(want, germanAmount(m[2])+" €")
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("page text lacks %q", w)
				}
			}
			wantTitle := map[billing.TypeCode]string{
				billing.TypeInvoice: "Rechnung", billing.TypeCreditNote: "Stornorechnung", billing.TypeCorrected: "Rechnungskorrektur",
			}[p.doc.Invoice.TypeCode]
			if !strings.Contains(text, wantTitle+" "+p.doc.Invoice.Number) {
				t.Errorf("page header lacks %q", wantTitle+" "+p.doc.Invoice.Number)
			}
			if strings.Contains(text, "Gutschrift") {
				t.Error("a seller's document is titled Gutschrift")
			}
		})
	}
}

const banner = "TESTDOKUMENT – keine Rechnung"

// TestPDFMarksTestDocuments: a test document carries the banner on every
// page, also when it runs over several pages; a live one nowhere.
func TestPDFMarksTestDocuments(t *testing.T) {
	t.Parallel()
	var test, live int
	for _, p := range allPDFs(t) {
		pages := pageTexts(t, p.pdf)
		for i, text := range pages {
			has := strings.Contains(text, banner)
			if has != p.doc.Invoice.Test {
				t.Errorf("%s page %d: banner %v, test document %v", p.name, i+1, has, p.doc.Invoice.Test)
			}
			if !p.doc.Invoice.Test && strings.Contains(text, "TESTDOKUMENT") {
				t.Errorf("%s page %d: live document mentions TESTDOKUMENT", p.name, i+1)
			}
		}
		if p.doc.Invoice.Test {
			test++
			// Forty copies of the lines make the test document run over
			// several pages; the renderer prints what the XML says.
			long := repeatLines(t, p.doc.XML, 40)
			out, err := render.PDF(long)
			if err != nil {
				t.Fatal(err)
			}
			pages := pageTexts(t, out)
			if len(pages) < 2 {
				t.Fatalf("%s with 40 times the lines has %d page(s)", p.name, len(pages))
			}
			for i, text := range pages {
				if !strings.Contains(text, banner) {
					t.Errorf("%s (long) page %d of %d has no banner", p.name, i+1, len(pages))
				}
				if want := fmt.Sprintf("Seite %d von %d", i+1, len(pages)); !strings.Contains(text, want) {
					t.Errorf("%s (long) page %d lacks %q", p.name, i+1, want)
				}
			}
		} else {
			live++
		}
	}
	if test == 0 || live == 0 {
		t.Fatalf("samples have %d test and %d live documents, want both", test, live)
	}
}

// TestPDFRejectsMalformedInput: anything that is not a CII invoice as CII
// writes it is an error and no PDF.
func TestPDFRejectsMalformedInput(t *testing.T) {
	t.Parallel()
	first := allPDFs(t)[0]
	valid := string(first.doc.XML)
	replace := func(old, new string) []byte {
		t.Helper()
		if !strings.Contains(valid, old) {
			t.Fatalf("sample has no %q", old)
		}
		return []byte(strings.Replace(valid, old, new, 1))
	}
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"not XML", []byte("%PDF-1.7 this is not XML")},
		{"truncated", []byte(valid[:len(valid)/2])},
		{"other root", []byte(`<?xml version="1.0"?><Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"/>`)},
		{"root without namespace", []byte(`<CrossIndustryInvoice/>`)},
		{"no number", replace("<ram:ID>"+first.doc.Invoice.Number+"</ram:ID>", "")},
		{"unknown type code", replace("<ram:TypeCode>380</ram:TypeCode>", "<ram:TypeCode>999</ram:TypeCode>")},
		{"decimal comma", replace("<ram:GrandTotalAmount>", "<ram:GrandTotalAmount>1,")},
		{"bad issue date", replace(`format="102">2026`, `format="102">X026`)},
		{"issue date not in format 102", replace(`format="102">2026`, `format="610">2026`)},
		{"invoicing period without dates", replace("<ram:SpecifiedTradePaymentTerms>", "<ram:BillingSpecifiedPeriod/><ram:SpecifiedTradePaymentTerms>")},
		{"no lines", regexp.MustCompile(`(?s)<ram:IncludedSupplyChainTradeLineItem>.*</ram:IncludedSupplyChainTradeLineItem>`).
			ReplaceAll([]byte(valid), nil)},
		{"no due amount", regexp.MustCompile(`<ram:DuePayableAmount>[^<]*</ram:DuePayableAmount>`).ReplaceAll([]byte(valid), nil)},
		{"foreign guideline", replace("urn:cen.eu:en16931:2017<", "urn:factur-x.eu:1p0:minimum<")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := render.PDF(c.in)
			if err == nil {
				t.Fatalf("no error, %d bytes of PDF", len(out))
			}
			if out != nil {
				t.Errorf("error %v with %d bytes of output", err, len(out))
			}
		})
	}
}

// TestPDFSameXMLSameDocument: rendering one XML twice gives the same bytes
// (archiving refuses different bytes under an existing key), and so the
// same pages, metadata and ID.
func TestPDFSameXMLSameDocument(t *testing.T) {
	t.Parallel()
	for _, p := range allPDFs(t) {
		again, err := render.PDF(p.doc.XML)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p.pdf, again) {
			a, b := readPDF(t, p.pdf), readPDF(t, again)
			if diff := cmp.Diff(pageTexts(t, p.pdf), pageTexts(t, again)); diff != "" {
				t.Errorf("%s: page text differs (-first +second):\n%s", p.name, diff)
			}
			if diff := cmp.Diff(string(metadata(t, a)), string(metadata(t, b))); diff != "" {
				t.Errorf("%s: XMP differs (-first +second):\n%s", p.name, diff)
			}
			t.Errorf("%s: the second rendering differs (%d and %d bytes)", p.name, len(p.pdf), len(again))
		}
	}
}

// TestPDFOfTheCheckedDocumentIsThePDFOfItsXML: the document that the
// XML's check read (einvoice.CheckAndReadCII) is the one ReadCII reads, and
// the PDF laid out from it (PDFOf) is byte for byte the PDF of the XML.
func TestPDFOfTheCheckedDocumentIsThePDFOfItsXML(t *testing.T) {
	t.Parallel()
	for _, p := range allPDFs(t) {
		read, findings := einvoice.CheckAndReadCII(p.doc.XML)
		if !einvoice.Valid(findings) {
			t.Fatalf("%s: %v", p.name, findings)
		}
		want, _, err := einvoice.ReadCII(p.doc.XML)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, read); diff != "" {
			t.Errorf("%s: the checked document differs from the one read (-read +checked):\n%s", p.name, diff)
		}
		pdf, err := render.PDFOf(p.doc.XML, read)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pdf, p.pdf) {
			t.Errorf("%s: the PDF of the checked document differs from the PDF of its XML (%d and %d bytes)", p.name, len(pdf), len(p.pdf))
		}
	}
}

// TestPDFCharactersOutsideTheFont: a name with characters the embedded
// font lacks (CJK) or that are outside the Basic Multilingual Plane (an
// emoji, which the PDF library cannot show) still gives a PDF, with the
// other characters shown.
func TestPDFCharactersOutsideTheFont(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`(<ram:BuyerTradeParty>\s*<ram:Name>)[^<]*`)
	x := allPDFs(t)[0].doc.XML
	if !name.Match(x) {
		t.Fatal("no buyer name in the sample")
	}
	out, err := render.PDF(name.ReplaceAll(x, []byte("${1}Zoë Łukasiewicz 漢字 😀 Ωmega")))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(pageTexts(t, out), "\n")
	for _, want := range []string{"Zoë Łukasiewicz 漢字 ", " Ωmega"} {
		if !strings.Contains(text, want) {
			t.Errorf("page text lacks %q", want)
		}
	}
}

// TestPDFConcurrently: the service renders in parallel, so PDF must be safe
// for concurrent use (run with -race); each document gives the pages it
// gives alone.
func TestPDFConcurrently(t *testing.T) {
	t.Parallel()
	pdfs := allPDFs(t)
	out := make([][]byte, len(pdfs))
	errs := make([]error, len(pdfs))
	var wg sync.WaitGroup
	for i, p := range pdfs {
		wg.Go(func() { out[i], errs[i] = render.PDF(p.doc.XML) })
	}
	wg.Wait()
	for i, p := range pdfs {
		if errs[i] != nil {
			t.Fatalf("%s: %v", p.name, errs[i])
		}
		if diff := cmp.Diff(pageTexts(t, p.pdf), pageTexts(t, out[i])); diff != "" {
			t.Errorf("%s: pages differ when rendered concurrently (-alone +concurrently):\n%s", p.name, diff)
		}
	}
}

// BenchmarkPDF renders the typical invoice's PDF from its XML (10 lines,
// two rates, shipping): parse, layout, fonts, PDF/A-3 with the XML embedded.
func BenchmarkPDF(b *testing.B) {
	x, err := render.CII(typical(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var size int
	cpu := processCPU()
	for b.Loop() {
		out, err := render.PDF(x)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "B/pdf")
	reportCPU(b, cpu)
}

// processCPU is the CPU time the process has used (user and system, all
// threads: the garbage collector's too).
func processCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since since: on
// a machine shared with other jobs the time per operation (ns/op) counts
// the time the benchmark waited for a core, this does not.
func reportCPU(b *testing.B, since time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-since)/float64(b.N), "cpu-ns/op")
	}
}

// pdfcpuConfig avoids model.NewDefaultConfiguration, which creates a
// configuration directory in the user's home.
func pdfcpuConfig() *model.Configuration {
	return &model.Configuration{
		Reader15:       true,
		ValidationMode: model.ValidationRelaxed,
		Eol:            types.EolLF,
		Limits:         model.DefaultResourceLimits(),
	}
}

func readPDF(t *testing.T, pdf []byte) *model.Context {
	t.Helper()
	ctx, err := api.ReadAndValidate(bytes.NewReader(pdf), pdfcpuConfig())
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func metadata(t *testing.T, ctx *model.Context) []byte {
	t.Helper()
	root, err := ctx.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	sd, _, err := ctx.DereferenceStreamDict(root["Metadata"])
	if err != nil || sd == nil {
		t.Fatalf("catalog /Metadata: %v", err)
	}
	if err := sd.Decode(); err != nil {
		t.Fatal(err)
	}
	return sd.Content
}

func infoDict(t *testing.T, ctx *model.Context) map[string]string {
	t.Helper()
	if ctx.Info == nil {
		t.Fatal("no information dictionary")
	}
	d, err := ctx.DereferenceDict(*ctx.Info)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range d {
		s, err := types.StringOrHexLiteral(v)
		if err != nil || s == nil {
			t.Fatalf("info %s: %v", k, err)
		}
		out[k] = *s
	}
	return out
}

// pageTexts returns the text shown on each page. The PDF library writes
// the embedded TrueType fonts with Identity-H and Unicode code points as
// CIDs, so the strings shown by Tj are UTF-16BE.
func pageTexts(t *testing.T, pdf []byte) []string {
	t.Helper()
	pages, err := pageTextsOf(pdf)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

var shownText = regexp.MustCompile(`\((?:[^()\\]|\\.)*\)\s*Tj`)

// pageTextsOf is pageTexts for any goroutine: it returns its error.
func pageTextsOf(pdf []byte) ([]string, error) {
	ctx, err := api.ReadAndValidate(bytes.NewReader(pdf), pdfcpuConfig())
	if err != nil {
		return nil, err
	}
	var pages []string
	for n := 1; n <= ctx.PageCount; n++ {
		d, _, _, err := ctx.PageDict(n, false)
		if err != nil {
			return nil, err
		}
		content, err := ctx.PageContent(d, n)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for _, m := range shownText.FindAll(content, -1) {
			lit := bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(m), []byte("Tj")))
			raw, err := types.Unescape(string(lit[1 : len(lit)-1]))
			if err != nil {
				return nil, err
			}
			u := make([]uint16, len(raw)/2)
			for i := range u {
				u[i] = uint16(raw[2*i])<<8 | uint16(raw[2*i+1])
			}
			b.WriteString(string(utf16.Decode(u)))
			b.WriteByte('\n')
		}
		pages = append(pages, b.String())
	}
	return pages, nil
}

// germanAmount formats a CII amount ("-1234.50") the German way
// ("-1.234,50"), independently of the renderer's code.
func germanAmount(s string) string {
	sign, s := "", s
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	var groups []string
	for len(whole) > 3 {
		groups = append([]string{whole[len(whole)-3:]}, groups...)
		whole = whole[:len(whole)-3]
	}
	groups = append([]string{whole}, groups...)
	return sign + strings.Join(groups, ".") + "," + frac
}

func unescapeXML(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'").Replace(s)
}

// repeatLines returns x with its line items repeated n times.
func repeatLines(t *testing.T, x []byte, n int) []byte {
	t.Helper()
	items := regexp.MustCompile(`(?s)\s*<ram:IncludedSupplyChainTradeLineItem>.*</ram:IncludedSupplyChainTradeLineItem>`)
	loc := items.FindIndex(x)
	if loc == nil {
		t.Fatal("no line items")
	}
	var b bytes.Buffer
	b.Write(x[:loc[0]])
	for range n {
		b.Write(x[loc[0]:loc[1]])
	}
	b.Write(x[loc[1]:])
	return b.Bytes()
}
