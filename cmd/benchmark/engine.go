package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	out, err := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkPipeline$", "-benchtime", "2s",
		"-benchmem", "-cpu", "1", "./render").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %v: %s", err, out)
	}
	m := benchNsOp.FindSubmatch(out)
	if m == nil {
		return nil, fmt.Errorf("no BenchmarkPipeline line in:\n%s", out)
	}
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
		What:     "invoice engine: compute + CII XML + Go EN 16931 validation of one typical invoice (10 lines, two rates, shipping), one core",
		Measured: fmt.Sprintf("%.0f µs per invoice, %s B, %s allocations", ns/1000, m[2], m[3]),
		Ceiling:  fmt.Sprintf("official validator (validate-einvoice --strict en16931), same invoice, one file: %.2f s", single.Seconds()),
		Target:   "< 200 µs per invoice",
	}}, nil
}
