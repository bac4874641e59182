// Package referee runs the official e-invoice validator (the script
// validate-einvoice, vendored with its artefacts in official/: XSD, CEN
// EN 16931 and KoSIT XRechnung schematron, Factur-X profile rules and PDF
// checks) on a batch of files and parses its TSV report. It exists for tests
// and tooling; the service itself never calls it.
//
// The script needs Java, Saxon-HE, xmllint, qpdf, poppler-utils and jq; Run
// passes --no-install, and `make referee-deps` (run by `make test`) installs
// them. official/SHA256SUMS lists the vendored files; a test checks them.
//
// It imports only the standard library. It runs a program, so it is kept
// apart from the pure internal/einvoice rules.
package referee

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EnvValidator overrides the validator's path.
const EnvValidator = "O2I_VALIDATOR"

// Finding is one line of the validator's TSV report.
type Finding struct {
	File     string // as passed on the command line
	Stage    string // XSD, EN16931-CII, XRechnung-CII, FacturX-EN16931, ...
	Level    string // error, warning, information
	Flag     string
	ID       string // rule id, e.g. BR-CO-15
	Location string
	Message  string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s %s [%s] %s at %s", filepath.Base(f.File), f.Level, f.ID, f.Stage, f.Message, f.Location)
}

// Result is the verdict on one file.
type Result struct {
	Valid    bool
	Counts   string // "0 error(s), 0 warning(s), 0 info"
	Findings []Finding
}

// Clean reports whether the file has neither errors nor warnings.
func (r Result) Clean() bool {
	return r.Valid && strings.HasPrefix(r.Counts, "0 error(s), 0 warning(s)")
}

// Report is the outcome of one run.
type Report struct {
	Results map[string]*Result // by file path as passed
	Elapsed time.Duration
	Output  []byte // raw stdout
}

// VendoredDir is the vendored validator's directory, relative to the
// repository root.
const VendoredDir = "internal/einvoice/referee/official"

// Path finds the validator: $O2I_VALIDATOR, else the vendored script
// <repository root>/internal/einvoice/referee/official/validate-einvoice,
// where the repository root is the nearest directory at or above the working
// directory that holds go.mod. It fails when the script does not exist.
func Path() (string, error) {
	if p := os.Getenv(EnvValidator); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("referee: %s=%s: %w", EnvValidator, p, err)
		}
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, filepath.FromSlash(VendoredDir), "validate-einvoice")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("referee: vendored validator not found (set %s): %w", EnvValidator, err)
	}
	return p, nil
}

// repoRoot is the nearest directory at or above the working directory that
// holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("referee: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Run validates files in one call: mode is en16931, xrechnung or auto;
// extra options such as "--strict" or "--facturx" come before the mode. Exit
// status 0 and 1 are results; any other status is an error.
func Run(validator string, options []string, mode string, files ...string) (*Report, error) {
	args := append([]string{}, options...)
	args = append(args, "--format", "tsv", "--no-install", mode)
	args = append(args, files...)
	cmd := exec.Command(validator, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	rep := &Report{Results: map[string]*Result{}, Elapsed: time.Since(start), Output: stdout.Bytes()}
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return nil, fmt.Errorf("referee: %s: %w\n%s%s", validator, err, stdout.String(), stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 7 {
			continue
		}
		res := rep.Results[cols[0]]
		if res == nil {
			res = &Result{}
			rep.Results[cols[0]] = res
		}
		if cols[1] == "RESULT" {
			res.Valid = cols[2] == "VALID"
			res.Counts = cols[6]
			continue
		}
		res.Findings = append(res.Findings, Finding{
			File: cols[0], Stage: cols[1], Level: cols[2], Flag: cols[3], ID: cols[4], Location: cols[5], Message: cols[6],
		})
	}
	for _, f := range files {
		if r := rep.Results[f]; r == nil || r.Counts == "" {
			return nil, fmt.Errorf("referee: no RESULT line for %s\n%s%s", f, stdout.String(), stderr.String())
		}
	}
	return rep, sc.Err()
}
