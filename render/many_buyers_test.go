package render_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/o2i-service/o2i/internal/einvoice/referee"
	"github.com/o2i-service/o2i/render"
)

// manyBuyers is how many invoices TestPDFManyBuyersConcurrently renders at
// once, and validated how many of them the official validator judges (one
// call; the validator takes about a second per file, so all of them would
// hold a test run up for minutes).
const (
	manyBuyers = 1000
	validated  = 20
)

// buyerNames are names with the letters of Latin-1 and Latin Extended-A the
// fixed font subsets hold (ß, é, ł, Ł, Ż, ő, œ, Ž, ...), and a few beyond:
// Latin Extended-B, and Greek and Cyrillic, which give their documents a
// subset of their own, rendered at the same time as the others. Each
// invoice's name also carries its own number, so a name on the wrong
// document is caught. The official validator's sample (every 50th
// invoice) has the names of index 0, 2, 3, 7, 17, 25 and 26 among others.
var buyerNames = []string{
	"Jürgen Groß", "Zoë Bréhaut", "Łukasz Wałęsa", "Ödön Kőszegi", "Žaneta Žáková", "Ægir Ørsted",
	"Çağla Şahin", "François Cœurdelion", "Dvořák Čeněk", "Ștefan Țăranu", "Ľubomír Ďurica", "Ğülay Īzmir",
	"Đorđe Ćosić", "Ŧrym Ŋorðr", "Ĳssel Ĳsbrand", "Ŝtelo Ĉiuĝi", "José Ñúñez", "Hélène Lefèvre",
	"Ågot Aaberg", "Þórunn Eðvarðsdóttir", "Œdipe Fæster", "Ŕehoř Ľvov", "Ūna Ķēniņa", "Ĝiĥo Ĵaŭdo",
	"Σοφία Παπαδοπούλου", "Дмитрий Шостакович", "Żaneta Żółkiewska",
}

// TestPDFManyBuyersConcurrently guards what makes rendering cheap against
// mixing documents up: 1000 invoices, each with its own buyer name of
// non-ASCII letters, rendered at once. Every PDF must show its own buyer's
// name (every letter of it, so a shared font subset that lacks one fails),
// none of another invoice's, embed its own XML byte for byte and read as a
// valid PDF; a sample of 20 of them reads back with poppler (the name
// through the fonts' ToUnicode maps) and passes the official validator
// (PDF/A-3, Factur-X, the embedded XML's rules) with no finding.
func TestPDFManyBuyersConcurrently(t *testing.T) {
	t.Parallel()
	buyer := regexp.MustCompile(`(<ram:BuyerTradeParty>\s*<ram:Name>)[^<]*`)
	var base []byte
	for _, p := range allPDFs(t) {
		if buyer.Match(p.doc.XML) && len(pageTexts(t, p.pdf)) == 1 {
			base = p.doc.XML
			break
		}
	}
	if base == nil {
		t.Fatal("no one-page sample with a buyer name")
	}
	names := make([]string, manyBuyers)
	xmls := make([][]byte, manyBuyers)
	for i := range names {
		names[i] = fmt.Sprintf("%s %04d", buyerNames[i%len(buyerNames)], i)
		xmls[i] = buyer.ReplaceAll(base, []byte("${1}"+names[i]))
	}

	pdfs := make([][]byte, manyBuyers)
	errs := make([]error, manyBuyers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range pdfs {
		wg.Go(func() {
			<-start
			pdfs[i], errs[i] = render.PDF(xmls[i])
		})
	}
	close(start)
	wg.Wait()

	quoted := make([]string, len(buyerNames))
	for i, n := range buyerNames {
		quoted[i] = regexp.QuoteMeta(n)
	}
	anyBuyer := regexp.MustCompile(`(?:` + strings.Join(quoted, "|") + `) \d{4}`)
	checks := make(chan int)
	var cwg sync.WaitGroup
	var mu sync.Mutex
	for range runtime.GOMAXPROCS(0) {
		cwg.Go(func() {
			for i := range checks {
				problems := checkBuyerPDF(pdfs[i], xmls[i], names[i], anyBuyer)
				if len(problems) > 0 {
					mu.Lock()
					t.Errorf("invoice %d (%s): %s", i, names[i], strings.Join(problems, "; "))
					mu.Unlock()
				}
			}
		})
	}
	for i := range pdfs {
		if errs[i] != nil {
			t.Errorf("invoice %d (%s): %v", i, names[i], errs[i])
			continue
		}
		checks <- i
	}
	close(checks)
	cwg.Wait()
	if t.Failed() {
		return
	}

	validator, err := referee.Path()
	if err != nil {
		t.Fatalf("official validator missing: %v", err)
	}
	dir := t.TempDir()
	var files []string
	for k := range validated {
		i := k * manyBuyers / validated
		f := filepath.Join(dir, fmt.Sprintf("buyer-%04d.pdf", i))
		if err := os.WriteFile(f, pdfs[i], 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// poppler reads each name back through the fonts' ToUnicode maps.
	for _, f := range files {
		var i int
		if _, err := fmt.Sscanf(filepath.Base(f), "buyer-%04d.pdf", &i); err != nil {
			t.Fatal(err)
		}
		text, err := exec.Command("pdftotext", f, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext %s: %v", f, err)
		}
		if !strings.Contains(string(text), names[i]) {
			t.Errorf("invoice %d: pdftotext does not find %q", i, names[i])
		}
	}
	rep, err := referee.Run(validator, []string{"--strict"}, "auto", files...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d PDFs rendered at once, %d checked by text and attachment, %d by the official validator in %v", manyBuyers, manyBuyers, len(files), rep.Elapsed)
	requireClean(t, rep, files)
}

// checkBuyerPDF returns what is wrong with one invoice's PDF: it must read
// as a valid PDF, its page text must hold its buyer's name and no other
// invoice's buyer, and its one attachment must be its own XML. It runs on
// any goroutine.
func checkBuyerPDF(pdf, xml []byte, name string, anyBuyer *regexp.Regexp) []string {
	var problems []string
	pages, err := pageTextsOf(pdf)
	if err != nil {
		return []string{"not a valid PDF: " + err.Error()}
	}
	text := strings.Join(pages, "\n")
	if !strings.Contains(text, name) {
		problems = append(problems, "page text lacks the buyer's name")
	}
	for _, other := range anyBuyer.FindAllString(text, -1) {
		if other != name {
			problems = append(problems, "page text shows another invoice's buyer, "+other)
		}
	}
	ctx, err := api.ReadAndValidate(bytes.NewReader(pdf), pdfcpuConfig())
	if err != nil {
		return append(problems, err.Error())
	}
	aa, err := ctx.ExtractAttachments(nil)
	if err != nil {
		return append(problems, "attachments: "+err.Error())
	}
	if len(aa) != 1 || aa[0].FileName != "factur-x.xml" {
		return append(problems, fmt.Sprintf("attachments %v, want one factur-x.xml", aa))
	}
	got, err := io.ReadAll(aa[0])
	if err != nil {
		return append(problems, err.Error())
	}
	if !bytes.Equal(got, xml) {
		problems = append(problems, "the embedded XML is not this invoice's")
	}
	return problems
}
