package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice/referee"
	"github.com/o2i-service/o2i/render"
)

// writeCorpus renders every scenario into dir and returns the XRechnung and
// the ZUGFeRD file paths.
func writeCorpus(t *testing.T, dir string) (xr, zf []string) {
	t.Helper()
	samples, err := render.Samples()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		for i, d := range s.Documents {
			p := filepath.Join(dir, s.FileNames()[i])
			if err := os.WriteFile(p, d.XML, 0o644); err != nil {
				t.Fatal(err)
			}
			if d.Invoice.Format == billing.FormatXRechnung {
				xr = append(xr, p)
			} else {
				zf = append(zf, p)
			}
		}
	}
	return xr, zf
}

// TestOfficialValidator is the referee: every scenario's XML passes the
// official rules with zero errors and zero warnings, XRechnung in xrechnung
// mode, ZUGFeRD in en16931 mode with and without the Factur-X profile rules.
// One validator call per mode. A missing validator fails the test.
func TestOfficialValidator(t *testing.T) {
	t.Parallel()
	validator, err := referee.Path()
	if err != nil {
		t.Fatalf("official validator missing: %v", err)
	}
	xr, zf := writeCorpus(t, t.TempDir())
	if len(xr) == 0 || len(zf) == 0 {
		t.Fatalf("corpus has %d XRechnung and %d ZUGFeRD files", len(xr), len(zf))
	}
	runs := []struct {
		name    string
		options []string
		mode    string
		files   []string
	}{
		{"xrechnung", []string{"--strict"}, "xrechnung", xr},
		{"en16931", []string{"--strict"}, "en16931", zf},
		{"en16931-facturx", []string{"--strict", "--facturx"}, "en16931", zf},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			rep, err := referee.Run(validator, run.options, run.mode, run.files...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d files in %v (%.0f ms per file)", run.name, len(run.files), rep.Elapsed,
				float64(rep.Elapsed.Milliseconds())/float64(len(run.files)))
			requireClean(t, rep, run.files)
		})
	}
}

// requireClean fails the test for every file the referee did not find clean
// (errors or warnings), with its findings.
func requireClean(t *testing.T, rep *referee.Report, files []string) {
	t.Helper()
	files = append([]string(nil), files...)
	sort.Strings(files)
	for _, f := range files {
		res, ok := rep.Results[f]
		if !ok {
			t.Errorf("%s: not judged", filepath.Base(f))
			continue
		}
		if res.Clean() {
			continue
		}
		var b strings.Builder
		for _, fd := range res.Findings {
			fmt.Fprintf(&b, "\n    %s", fd)
		}
		t.Errorf("%s: %s%s", filepath.Base(f), res.Counts, b.String())
	}
}
