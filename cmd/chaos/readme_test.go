package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFigures: the README section names the mode, every process with
// its SIGKILLs, and the archive and e-mail checks; it replaces only what
// lies between the markers.
func TestReadmeFigures(t *testing.T) {
	t.Parallel()
	rep := &report{OrdersSent: 10, Acknowledged: 10, ServiceStarts: 3, Mode: "multi-process, 2 processes per role", Machine: "2 cores", At: "2026-11-25T00:00:00Z",
		Processes: []processRecord{{Name: "api-1", Roles: "api", Starts: 2, Kills: 1}, {Name: "api-2", Roles: "api", Starts: 1}},
		Archive:   archiveFigures{Expected: 30, Objects: 30, Versions: 31, Duplicates: 1},
		Mail:      mailFigures{Documents: 10, Sent: 10, Received: 10, Messages: 11, Resends: 1},
		ranges:    map[string]span{"RE-2026": {1, 10}}}
	got := renderReport(rep)
	for _, want := range []string{"(multi-process, 2 processes per role)", "| api-1 | api | 2 | 1 | 0 |", "| api-2 | api | 1 | 0 | 0 |",
		"| 30 / 30 / 31 |", "| 1 / 0 / 0 / 0 |", "| 10 / 10 of 10 |", "| 11 / 1 / 0 |", "| 3 / 1 / 0 |", "RE-2026-000001 to RE-2026-000010"} {
		if !strings.Contains(got, want) {
			t.Errorf("the figures lack %q:\n%s", want, got)
		}
	}
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte("before\n"+readmeStart+"\nold\n"+readmeEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeReadme(path, rep); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if s := string(b); !strings.HasPrefix(s, "before\n"+readmeStart+"\n") || !strings.HasSuffix(s, readmeEnd+"\nafter\n") || strings.Contains(s, "old") || !strings.Contains(s, "api-1") {
		t.Errorf("README after writing:\n%s", s)
	}
}
