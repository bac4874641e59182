package render_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/render"
)

// TestLinePeriodsOnThePDF: lines with a service period of their own (BG-26,
// a product's default) show it on the PDF beside their name, as the XML says.
func TestLinePeriodsOnThePDF(t *testing.T) {
	for _, sc := range billing.Scenarios() {
		if sc.Name != "product-default-periods" {
			continue
		}
		docs, err := sc.Documents()
		if err != nil {
			t.Fatal(err)
		}
		xml, err := render.CII(docs[0])
		if err != nil {
			t.Fatal(err)
		}
		pdf, err := render.PDF(xml)
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(t.TempDir(), "periods.pdf")
		if err := os.WriteFile(f, pdf, 0o600); err != nil {
			t.Fatal(err)
		}
		text, err := exec.Command("pdftotext", "-layout", f, "-").Output()
		if err != nil {
			t.Fatal(err)
		}
		flat := bytes.Join(bytes.Fields(text), []byte(" "))
		// The period wraps in its column: its dates are read one by one.
		for _, want := range []string{"26.02.2026 –", "25.03.2026)", "25.02.2027)"} {
			if !bytes.Contains(flat, []byte(want)) {
				t.Errorf("the PDF does not show %q:\n%s", want, text)
			}
		}
		if bytes.Count(flat, []byte("Leistungszeitraum")) != 2 {
			t.Errorf("want two line periods (the set-up fee has none):\n%s", text)
		}
		return
	}
	t.Fatal("no scenario product-default-periods")
}
