package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/testenv"
)

// figures are round per-role figures, so that every expected number of the
// plan can be checked by hand.
var figures = roleFigures{
	OrdersPerCore: 1000, ReadsPerCore: 10000, RelayEventsPerCore: 5000, ProjectionEventsPerCore: 2000, InvoicesPerCore: 50,
	MailsPerSecond: 100, RangeNumbersPerSecond: 400, EventsPerOrder: 4, DBBytesPerOrder: 20_000, WALBytesPerOrder: 50_000,
	ArchiveBytesPerInvoice: 60_000, RedisBytesPerOrder: 500,
}

func TestPlanCapacity(t *testing.T) {
	a := defaultAssumptions
	for _, c := range []struct {
		name     string
		f        roleFigures
		a        assumptions
		perDay   int64
		want     capacityRow
		wantRely float64 // relay cores
	}{
		{
			// peak 1e6/86400*10 = 115.74 orders/s; api cores 0.1157 + 0.1157 = 0.23 / 0.5 → 1, min 2;
			// events 463/s: projector 463/1000 → 1, min 2; invoicer 115.7/25 = 4.6 → 5, mailer 115.7/50 → 3;
			// partitions max(12, 10); ranges 115.7/200 → 1.
			name: "1 M", f: figures, a: a, perDay: 1_000_000,
			want: capacityRow{OrdersPerDay: 1_000_000, API: 2, Projector: 2, Invoicer: 5, InvoicerInvoicing: 5, InvoicerMailing: 3, Partitions: 12, Ranges: 1,
				DBBytesPerDay: 2e10, WALBytesPerDay: 5e10, ArchiveBytes: 1e6 * 365.25 * 8 * 60_000, RedisBytesPerDay: 5e8},
			wantRely: 115.74074074 * 4 / 5000 / 0.5,
		},
		{
			// peak 1157.4/s; api cores 1.157 + 1.157 = 2.31 / 0.5 = 4.63 → 5; events 4630/s: projector 4.63 → 5;
			// invoicer 1157.4/25 = 46.3 → 47; partitions 94; ranges 1157.4/200 = 5.8 → 6.
			name: "10 M", f: figures, a: a, perDay: 10_000_000,
			want: capacityRow{OrdersPerDay: 10_000_000, API: 5, Projector: 5, Invoicer: 47, InvoicerInvoicing: 47, InvoicerMailing: 24, Partitions: 94, Ranges: 6,
				DBBytesPerDay: 2e11, WALBytesPerDay: 5e11, ArchiveBytes: 1e7 * 365.25 * 8 * 60_000, RedisBytesPerDay: 5e9},
			wantRely: 1157.4074074 * 4 / 5000 / 0.5,
		},
		{
			// The mailer is the slower: 2 mails/s per process needs more invoicers than the invoicing.
			name: "mail bound", f: func() roleFigures { f := figures; f.MailsPerSecond = 2; return f }(), a: a, perDay: 1_000_000,
			want: capacityRow{OrdersPerDay: 1_000_000, API: 2, Projector: 2, Invoicer: 116, InvoicerInvoicing: 5, InvoicerMailing: 116, Partitions: 232, Ranges: 1,
				DBBytesPerDay: 2e10, WALBytesPerDay: 5e10, ArchiveBytes: 1e6 * 365.25 * 8 * 60_000, RedisBytesPerDay: 5e8},
			wantRely: 115.74074074 * 4 / 5000 / 0.5,
		},
		{
			// Without headroom (utilisation 1) and a peak factor of 1: exactly what the figures carry.
			name: "no headroom", f: figures, a: assumptions{PeakFactor: 1, ReadsPerOrder: 0, Utilisation: 1, MinReplicas: 1, RetentionYears: 1, MinPartitions: 1},
			perDay: 86_400_000, // 1000 orders/s
			want: capacityRow{OrdersPerDay: 86_400_000, API: 1, Projector: 2, Invoicer: 20, InvoicerInvoicing: 20, InvoicerMailing: 10, Partitions: 40, Ranges: 3,
				DBBytesPerDay: 86_400_000 * 20_000., WALBytesPerDay: 86_400_000 * 50_000., ArchiveBytes: 86_400_000 * 365.25 * 60_000,
				RedisBytesPerDay: 86_400_000 * 500.},
			wantRely: 0.8,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, err := planCapacity(c.f, c.a, []int64{c.perDay})
			if err != nil {
				t.Fatal(err)
			}
			got := rows[0]
			if d := got.RelayCores - c.wantRely; d > 1e-6 || d < -1e-6 {
				t.Errorf("relay cores %v, want %v", got.RelayCores, c.wantRely)
			}
			if p := float64(c.perDay) / 86400 * c.a.PeakFactor; got.PeakOrdersPerSecond != p {
				t.Errorf("peak %v, want %v", got.PeakOrdersPerSecond, p)
			}
			if want := c.f.WALBytesPerOrder * got.PeakOrdersPerSecond; got.PeakWALBytesPerSec != want {
				t.Errorf("peak WAL %v/s, want %v", got.PeakWALBytesPerSec, want)
			}
			got.RelayCores, got.PeakOrdersPerSecond, got.PeakWALBytesPerSec = 0, 0, 0
			if got != c.want {
				t.Errorf("plan\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestPlanCapacityRefusesMissingFigures(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*roleFigures, *assumptions)
		field string
	}{
		{"no invoices", func(f *roleFigures, _ *assumptions) { f.InvoicesPerCore = 0 }, "invoicesPerCore"},
		{"negative reads", func(f *roleFigures, _ *assumptions) { f.ReadsPerCore = -1 }, "readsPerCore"},
		{"no range figure", func(f *roleFigures, _ *assumptions) { f.RangeNumbersPerSecond = 0 }, "rangeNumbersPerSecond"},
		{"no redis figure", func(f *roleFigures, _ *assumptions) { f.RedisBytesPerOrder = 0 }, "redisBytesPerOrder"},
		{"no peak", func(_ *roleFigures, a *assumptions) { a.PeakFactor = 0 }, "peakFactor"},
		{"over-full cores", func(_ *roleFigures, a *assumptions) { a.Utilisation = 1.5 }, "utilisation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, a := figures, defaultAssumptions
			c.edit(&f, &a)
			_, err := planCapacity(f, a, capacityVolumes)
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v, want one naming %s", err, c.field)
			}
		})
	}
	if _, err := planCapacity(figures, defaultAssumptions, []int64{0}); err == nil {
		t.Error("a volume of 0 orders per day is planned")
	}
}

func TestBytesHuman(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {57_300, "57 kB"}, {2.5e9, "2.5 GB"}, {1.66e15, "1.7 PB"}, {175e12, "175 TB"},
	} {
		if got := bytesHuman(c.in); got != c.want {
			t.Errorf("bytesHuman(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCapacityMarkdown: the section names every role's figure and one row
// per volume, and replaceBetween keeps what is outside the markers.
func TestCapacityMarkdown(t *testing.T) {
	rows, err := planCapacity(figures, defaultAssumptions, capacityVolumes)
	if err != nil {
		t.Fatal(err)
	}
	md := capacityMarkdown(figures, defaultAssumptions, rows, "2026-11-25", "2 cores")
	for _, want := range []string{"| 1 M | 116 |", "| 10 M | 1157 |", "| 100 M | 11574 |", "1000 /s per core", "10000 /s per core", "| 47 (47 / 24) |",
		"400 /s", "60 kB", "Derived (not measured)"} {
		if !strings.Contains(md, want) {
			t.Errorf("the section lacks %q:\n%s", want, md)
		}
	}
	path := filepath.Join(t.TempDir(), "ops.md")
	if err := os.WriteFile(path, []byte("before\n"+capacityStart+"\nold\n"+capacityEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeCapacity(path, "", figures, "2026-11-25", "2 cores"); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	s := string(raw)
	if !strings.HasPrefix(s, "before\n"+capacityStart+"\n") || !strings.HasSuffix(s, capacityEnd+"\nafter\n") || strings.Contains(s, "old") {
		t.Errorf("rewritten file:\n%s", s)
	}
	if err := os.WriteFile(path, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := writeCapacity(path, "", figures, "2026-11-25", "2 cores"); err == nil {
		t.Error("a file without markers is accepted")
	}
}

// TestTakeNumberStatement: the bench measures the number range with the
// very statement the issuing transaction takes its numbers with.
func TestTakeNumberStatement(t *testing.T) {
	found := false
	err := filepath.WalkDir("../../command", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(raw), takeNumberSQL) {
			found = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("no file under command/ takes numbers with the bench's statement:\n%s", takeNumberSQL)
	}
}

// TestOperationsGuideHasCapacityMarkers: make bench can rewrite the section.
func TestOperationsGuideHasCapacityMarkers(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i, j := strings.Index(s, capacityStart), strings.Index(s, capacityEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/operations.md has no %s ... %s section", capacityStart, capacityEnd)
	}
	if !strings.Contains(s[i:j], "| 100 M |") {
		t.Error("the capacity section has no row for 100 M orders a day")
	}
}

func TestMetricSumParsesExposition(t *testing.T) {
	lines := "o2i_x_total{type=\"a\"} 3\no2i_x_total{type=\"b\"} 4.5\no2i_x_total_other 100\no2i_x 7\n# HELP o2i_x_total h\n"
	if got := sumExposition(strings.NewReader(lines), "o2i_x_total"); got != 7.5 {
		t.Errorf("sum %v, want 7.5", got)
	}
	if got := sumExposition(strings.NewReader(lines), "o2i_x"); got != 7 {
		t.Errorf("sum %v, want 7", got)
	}
}

// TestRunning: the bench tells a running process from one that ended (a
// zombie not yet waited for counts as ended).
func TestRunning(t *testing.T) {
	if !running(os.Getpid()) {
		t.Fatal("this process is not running")
	}
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	testenv.Eventually(t, 10*time.Second, "an ended process no longer counts as running", func() bool { return !running(pid) })
	_ = c.Wait()
	if running(pid) {
		t.Error("a reaped process counts as running")
	}
}
