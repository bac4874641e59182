package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/einvoice/referee"
	"github.com/o2i-service/o2i/render"
)

// benchLine is one line of go test -bench -benchmem: name, ns/op, the
// optional B/pdf metric, B/op, allocs/op.
var benchLine = regexp.MustCompile(`(Benchmark\w+)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op(?:\s+([0-9.]+) B/pdf)?\s+([0-9.]+) B/op\s+(\d+) allocs/op`)

// benchRun is one run of a Go benchmark.
type benchRun struct {
	ns, pdfBytes, bytes float64
	allocs              int
}

// medians returns each benchmark's run with the median time.
func medians(out []byte) map[string]benchRun {
	runs := map[string][]benchRun{}
	for _, m := range benchLine.FindAllSubmatch(out, -1) {
		var r benchRun
		r.ns, _ = strconv.ParseFloat(string(m[2]), 64)
		r.pdfBytes, _ = strconv.ParseFloat(string(m[3]), 64)
		r.bytes, _ = strconv.ParseFloat(string(m[4]), 64)
		r.allocs, _ = strconv.Atoi(string(m[5]))
		runs[string(m[1])] = append(runs[string(m[1])], r)
	}
	out2 := map[string]benchRun{}
	for name, rs := range runs {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ns < rs[j].ns })
		out2[name] = rs[len(rs)/2]
	}
	return out2
}

// engine measures computing, serialising and validating one typical invoice
// (10 lines, two rates, shipping) on one core, next to the official
// validator's time for the same invoice.
func (b *bench) engine(ctx context.Context) ([]result, error) {
	// Five runs each, the median reported: the machine is shared and noisy.
	out, err := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^(BenchmarkPipeline|BenchmarkPDF|BenchmarkLayout)$",
		"-benchtime", "1s", "-count", "5", "-benchmem", "-cpu", "1", "./render").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %v: %s", err, out)
	}
	med := medians(out)
	pipe, pdf, lay := med["BenchmarkPipeline"], med["BenchmarkPDF"], med["BenchmarkLayout"]
	if pipe.ns == 0 || pdf.ns == 0 || lay.ns == 0 || pdf.pdfBytes == 0 {
		return nil, fmt.Errorf("missing benchmark lines in:\n%s", out)
	}
	log.Printf("engine: %.0f µs per invoice; PDF/A-3 %.2f ms (layout alone %.2f ms)", pipe.ns/1000, pdf.ns/1e6, lay.ns/1e6)

	docs, err := billing.Typical().Documents()
	if err != nil {
		return nil, err
	}
	xml, err := render.CII(docs[0])
	if err != nil {
		return nil, err
	}
	path := filepath.Join(b.dir, "typical.xml")
	if err := os.WriteFile(path, xml, 0o644); err != nil {
		return nil, err
	}
	validator, err := referee.Path()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	report, err := referee.Run(validator, []string{"--strict"}, "en16931", path)
	if err != nil {
		return nil, err
	}
	single := time.Since(start)
	if r := report.Results[path]; r == nil || !r.Clean() {
		return nil, fmt.Errorf("the official validator rejects the typical invoice: %+v", r)
	}
	return []result{{
		What:     "invoice engine: compute + CII XML + Go EN 16931 validation of the XML for one typical invoice (10 lines, two rates, shipping), one core",
		Measured: fmt.Sprintf("%.0f µs per invoice (median of 5 runs), %.0f B, %d allocations", pipe.ns/1000, pipe.bytes, pipe.allocs),
		Ceiling:  fmt.Sprintf("official validator (validate-einvoice --strict en16931), same invoice, one file: %.2f s", single.Seconds()),
		Target:   "< 200 µs per invoice",
	}, {
		What: "PDF/A-3 of the same invoice's XML, one page, one core (read the XML, layout, font subsets, embedded XML, XMP, output intent)",
		Measured: fmt.Sprintf("%.2f ms per PDF (median of 5 runs), %.0f B, %d allocations; PDF %.1f KB",
			pdf.ns/1e6, pdf.bytes, pdf.allocs, pdf.pdfBytes/1000),
		Ceiling: fmt.Sprintf("the layout alone (the XML read and laid out by maroto, no fonts, compression or PDF/A-3): %.2f ms, %.0f B, %d allocations",
			lay.ns/1e6, lay.bytes, lay.allocs),
		Target: "< 5 ms per PDF",
	}}, nil
}
