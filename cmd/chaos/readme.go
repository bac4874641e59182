package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

const (
	readmeStart = "<!-- chaos:start -->"
	readmeEnd   = "<!-- chaos:end -->"
)

// writeReadme replaces the figures between the chaos markers of the README.
func writeReadme(path string, rep *report) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(raw)
	i, j := strings.Index(s, readmeStart), strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, readmeStart, readmeEnd)
	}
	return os.WriteFile(path, []byte(s[:i+len(readmeStart)]+"\n"+renderReport(rep)+s[j:]), 0o644)
}

// renderReport is the README's account of a fault run.
func renderReport(rep *report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Last run %s on %s: %d orders sent by %s, %d acknowledged (%d client retries), in %.0f s.\n\n",
		rep.At[:10], rep.Machine, rep.OrdersSent, "clients retrying with the same Idempotency-Key", rep.Acknowledged, rep.ClientRetries, rep.LoadSeconds)
	b.WriteString("| fault (in this order, during the load) | at acknowledged order | took |\n|---|---|---|\n")
	for _, f := range rep.Faults {
		took := fmt.Sprintf("%.1f s", f.Seconds)
		if f.Err != "" {
			took += " (failed: " + f.Err + ")"
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", f.Name, f.AtOrder, took)
	}
	f := rep.Figures
	var ranges []string
	for p, s := range rep.ranges {
		ranges = append(ranges, fmt.Sprintf("%s-%06d to %s-%06d", p, s.First, p, s.Last))
	}
	sort.Strings(ranges)
	fmt.Fprintf(&b, "\n| reconciliation through the API | result |\n|---|---|\n")
	fmt.Fprintf(&b, "| acknowledged orders lost | %d |\n", f.Lost)
	fmt.Fprintf(&b, "| orders with exactly one archived invoice | %d of %d |\n", f.Invoiced, rep.Acknowledged)
	fmt.Fprintf(&b, "| orders with more than one invoice | %d |\n", f.DuplicateInvoices)
	fmt.Fprintf(&b, "| invoice numbers used twice / missing in the range | %d / %d (%s) |\n", f.DuplicateNumbers, f.Gaps, strings.Join(ranges, ", "))
	fmt.Fprintf(&b, "| archived documents served and checked (XML and PDF) | %d |\n", rep.DocumentsVerified)
	fmt.Fprintf(&b, "| every order archived after the last fault ended | within %.0f s |\n", rep.ConvergedSeconds)
	fmt.Fprintf(&b, "| service starts (3 after SIGKILL) / exits on its own | %d / %d |\n", rep.ServiceStarts, rep.ServiceExits)
	fmt.Fprintf(&b, "| problems | %d |\n", len(rep.Problems))
	return b.String()
}
