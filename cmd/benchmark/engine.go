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

var benchNsOp = regexp.MustCompile(`BenchmarkPipeline\S*\s+\d+\s+([0-9.]+) ns/op\s+([0-9.]+) B/op\s+(\d+) allocs/op`)

// engine measures computing, serialising and validating one typical invoice
// (10 lines, two rates, shipping) on one core, next to the official
// validator's time for the same invoice.
func (b *bench) engine(ctx context.Context) ([]result, error) {
	// Five runs, the median reported: the machine is shared and noisy.
	out, err := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkPipeline$", "-benchtime", "1s",
		"-count", "5", "-benchmem", "-cpu", "1", "./render").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %v: %s", err, out)
	}
	runs := benchNsOp.FindAllSubmatch(out, -1)
	if len(runs) == 0 {
		return nil, fmt.Errorf("no BenchmarkPipeline line in:\n%s", out)
	}
	sort.Slice(runs, func(i, j int) bool {
		a, _ := strconv.ParseFloat(string(runs[i][1]), 64)
		b, _ := strconv.ParseFloat(string(runs[j][1]), 64)
		return a < b
	})
	m := runs[len(runs)/2]
	ns, _ := strconv.ParseFloat(string(m[1]), 64)
	log.Printf("engine: %.0f µs per invoice", ns/1000)

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
		Measured: fmt.Sprintf("%.0f µs per invoice (median of 5 runs), %s B, %s allocations", ns/1000, m[2], m[3]),
		Ceiling:  fmt.Sprintf("official validator (validate-einvoice --strict en16931), same invoice, one file: %.2f s", single.Seconds()),
		Target:   "< 200 µs per invoice",
	}}, nil
}
