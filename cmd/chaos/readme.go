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
	fmt.Fprintf(&b, "Last run %s on %s (%s): %d orders sent by %s, %d acknowledged (%d client retries), in %.0f s.\n\n",
		rep.At[:10], rep.Machine, rep.Mode, rep.OrdersSent, "clients retrying with the same Idempotency-Key", rep.Acknowledged, rep.ClientRetries, rep.LoadSeconds)
	if len(rep.Processes) > 1 {
		b.WriteString("| process | roles | starts | SIGKILLs | exits on its own |\n|---|---|---|---|---|\n")
		for _, p := range rep.Processes {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", p.Name, p.Roles, p.Starts, p.Kills, p.Exits)
		}
		b.WriteString("\n")
	}
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
	fmt.Fprintf(&b, "| every order archived and e-mailed after the last fault ended | within %.0f s |\n", rep.ConvergedSeconds)
	a, m := rep.Archive, rep.Mail
	fmt.Fprintf(&b, "| objects in the archive bucket: expected / present / versions (one each) | %d / %d / %d |\n", a.Expected, a.Objects, a.Versions)
	fmt.Fprintf(&b, "| duplicate object versions / objects missing / of no document / not the anchored version | %d / %d / %d / %d |\n", a.Duplicates, a.Missing, a.Unexpected, a.Unanchored)
	fmt.Fprintf(&b, "| documents e-mailed: sent with one Message-ID / received at the SMTP sink | %d / %d of %d |\n", m.Sent, m.Received, m.Documents)
	fmt.Fprintf(&b, "| messages at the sink / resends with the same Message-ID / copies with another | %d / %d / %d |\n", m.Messages, m.Resends, m.OtherMessageID)
	fmt.Fprintf(&b, "| service processes: starts / SIGKILLs / exits on their own | %d / %d / %d |\n", rep.ServiceStarts, kills(rep), rep.ServiceExits)
	fmt.Fprintf(&b, "| problems | %d |\n", len(rep.Problems))
	return b.String()
}

// kills counts the run's SIGKILLs of service processes.
func kills(rep *report) int64 {
	var n int64
	for _, p := range rep.Processes {
		n += p.Kills
	}
	return n
}
