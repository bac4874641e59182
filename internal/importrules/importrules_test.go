// Package importrules holds one test: every package of the module keeps the
// import rule its doc comment states. Imports are read with go/parser from
// the non-test files of each package directory (build tags ignored: every
// file counts), so the test needs neither the go command nor the network.
// A rule marked stated is checked against the package's doc comment too: it
// must contain the rule's words.
package importrules

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// m is the module path; the table names the module's packages relative to it.
const m = "github.com/o2i-service/o2i/"

// rule is what the doc comment of the packages it covers says they may
// import. Paths match a package and everything below it.
type rule struct {
	pkgs    []string // module-relative; "internal/..." is every package below internal
	except  []string // packages the rule does not cover
	doc     string   // the doc comment's words
	stdOnly bool     // the standard library only, plus allow
	allow   []string // with stdOnly: the other imports allowed
	forbid  []string // never imported, nor any package below them
	// forbidExact: never imported, exactly these packages (those below
	// them may be).
	forbidExact []string
	// only: of the module's internal packages, these alone (module-relative);
	// nil: not restricted.
	only    []string
	noClock bool // no call of time.Now, time.Since, ... (reading the clock)
	stated  bool // the package's doc comment contains doc word for word
}

var (
	ioPackages    = []string{"os", "net", "database/sql", "syscall", "github.com/jackc/pgx", "github.com/redis/go-redis", "github.com/segmentio/kafka-go", "github.com/minio/minio-go"}
	topLevel      = []string{m + "command", m + "query", m + "projection", m + "cmd", m + "console"}
	clockFuncs    = []string{"Now", "Since", "Until", "Sleep", "Tick", "After", "AfterFunc", "NewTimer", "NewTicker"}
	testOnlyUsers = []string{"internal/testenv", "internal/apitest"}
)

var rules = []rule{
	// The standard library only; of it no I/O either, which only referee,
	// running the validator, needs.
	{pkgs: []string{"internal/money"}, doc: "Imports: standard library only.", stdOnly: true, forbid: ioPackages},
	{pkgs: []string{"internal/lifecycle"}, doc: "Pure: it imports only the standard library.", stdOnly: true, forbid: ioPackages, noClock: true},
	{pkgs: []string{"internal/leitweg"}, doc: "It imports only the standard library.", stdOnly: true, forbid: ioPackages},
	{pkgs: []string{"internal/apperr"}, doc: "It imports only the standard library.", stdOnly: true, forbid: ioPackages},
	{pkgs: []string{"internal/einvoice/referee"}, doc: "It imports only the standard library. It runs a program, so it is kept apart from the pure internal/einvoice rules.", stdOnly: true},
	{pkgs: []string{"internal/einvoice"},
		doc:     "Imports: the standard library, internal/billing and internal/money. Pure: no I/O.",
		stdOnly: true, allow: []string{m + "internal/billing", m + "internal/money"}, forbid: ioPackages, noClock: true},
	{pkgs: []string{"internal/billing"},
		doc:     "The package is pure: no I/O, no clock, no globals that change. ... It imports only the standard library, internal/money, internal/leitweg and internal/vatid; render and internal/einvoice import it, never the reverse.",
		stdOnly: true, allow: []string{m + "internal/money", m + "internal/leitweg", m + "internal/vatid"}, forbid: ioPackages, noClock: true},
	{pkgs: []string{"internal/accounting"},
		doc:     "Pure: it imports only the standard library, internal/billing, internal/money, internal/vatid and golang.org/x/text (the Windows-1252 encoder).",
		stdOnly: true, allow: []string{m + "internal/billing", m + "internal/money", m + "internal/vatid", "golang.org/x/text"}, forbid: ioPackages, noClock: true},
	{pkgs: []string{"internal/vatid"}, doc: "It imports only the standard library.", stdOnly: true, forbid: ioPackages, noClock: true},
	{pkgs: []string{"internal/event"},
		doc:     "It is public to consumers, so it imports only the standard library, internal/money (exact decimals), uuid and the JSON v2 module's implementation of encoding/json's semantics (go-json-experiment/json/v1: every consumer decodes every event); never billing or the store.",
		stdOnly: true, allow: []string{m + "internal/money", "github.com/google/uuid", "github.com/go-json-experiment/json"},
		forbid: []string{m + "internal/billing", m + "internal/store"}},
	{pkgs: []string{"render"},
		doc:     "render is pure: no network, database or clock. ... It imports internal/billing and internal/money ..., and for the PDF internal/einvoice (reading the XML; it never imports render), maroto and its PDF library gofpdf (layout) and klauspost/compress (zlib, faster than the standard library's)",
		stdOnly: true, allow: []string{m + "internal/billing", m + "internal/money", m + "internal/einvoice", "github.com/johnfercher/maroto", "github.com/phpdave11/gofpdf", "github.com/klauspost/compress"},
		forbid: ioPackages, noClock: true},
	{pkgs: []string{"archive"}, doc: "It imports minio-go and pdfcpu (the XML embedded in a PDF/A-3) only.", stdOnly: true,
		allow: []string{"github.com/minio/minio-go", "github.com/pdfcpu/pdfcpu"}},
	{pkgs: []string{"internal/consume"}, doc: "It imports only kafka-go.", stdOnly: true, allow: []string{"github.com/segmentio/kafka-go"}},
	{pkgs: []string{"internal/breaker"}, doc: "Pure: it imports only the standard library and never reads the clock.", stdOnly: true, forbid: ioPackages, noClock: true},
	{pkgs: []string{"internal/readmodel"}, doc: "It imports go-redis only.", stdOnly: true, allow: []string{"github.com/redis/go-redis"}},
	{pkgs: []string{"internal/mail"}, doc: "It imports go-mail only.", stdOnly: true, allow: []string{"github.com/wneessen/go-mail"}},
	{pkgs: []string{"internal/banktransfer"}, doc: "It imports stripe-go only.", stdOnly: true, allow: []string{"github.com/stripe/stripe-go"}},
	{pkgs: []string{"internal/store"}, doc: "It imports internal/apperr and pgx; nothing of the domain.",
		only: []string{"internal/apperr"}},
	{pkgs: []string{"internal/outbox"}, doc: "It imports internal/event, internal/tracing (the trace context a row carries to the message headers), pgx, kafka-go and the OpenTelemetry trace API; nothing of the domain.",
		only: []string{"internal/event", "internal/tracing"}},
	{pkgs: []string{"internal/tracing"}, doc: "It imports the OpenTelemetry API and SDK and kafka-go (the message headers); nothing of the service.",
		stdOnly: true, allow: []string{"go.opentelemetry.io/otel", "github.com/segmentio/kafka-go"}},
	{pkgs: []string{"internal/apikey"}, doc: "It imports internal/apperr, internal/httpx (Principal, Scope), internal/store (bounded connection waits) and pgx.",
		only: []string{"internal/apperr", "internal/httpx", "internal/store"}},
	{pkgs: []string{"internal/catalog"}, doc: "It imports internal/apperr, internal/money, internal/store (bounded connection waits) and pgx.",
		only: []string{"internal/apperr", "internal/money", "internal/store"}},
	{pkgs: []string{"internal/project"}, doc: "It imports internal/apperr, internal/accounting (the accounting methods), internal/billing (the seller of its invoices) and pgx.",
		only: []string{"internal/apperr", "internal/accounting", "internal/billing"}},
	{pkgs: []string{"internal/account"}, doc: "It imports internal/apperr, internal/mail (the message of an invitation), internal/store (transactions) and pgx.",
		only: []string{"internal/apperr", "internal/mail", "internal/store"}},
	{pkgs: []string{"internal/ratelimit"}, doc: "It imports internal/httpx and go-redis.",
		only: []string{"internal/httpx"}},
	// The doc comment names internal/httpx only; the package uses
	// internal/apperr as well (the shared error kinds).
	{pkgs: []string{"internal/reqlog"}, doc: "It imports internal/httpx (Entry), internal/store (bounded connection waits), pgx and the Prometheus client.",
		only: []string{"internal/httpx", "internal/apperr", "internal/store"}},
	{pkgs: []string{"internal/httpx"}, doc: "It imports internal/apperr, internal/tracing and libraries; never command or query.",
		only: []string{"internal/apperr", "internal/tracing"}},
	{pkgs: []string{"internal/..."}, doc: "(layering) internal packages never import command, query, projection or a command under cmd.", forbid: topLevel},
	{pkgs: []string{"query"}, doc: "It imports internal packages and archive (documents, read by the version recorded in PostgreSQL), never command or render: the read side never renders or writes a document.",
		forbid: []string{m + "command", m + "projection", m + "cmd", m + "render", m + "console"}},
	// The write side is three packages: the API's use cases (command), the
	// invoicer role (command/invoicing) and what both use (command/orders).
	// Neither role imports the other; both import command/orders, which
	// imports neither.
	{pkgs: []string{"command"}, stated: true,
		doc:    "It imports internal packages, archive, render and command/orders; never query, projection, a command under cmd, or command/invoicing.",
		forbid: []string{m + "query", m + "projection", m + "cmd", m + "command/invoicing"}},
	{pkgs: []string{"command/invoicing"}, stated: true,
		doc:         "It imports command/orders, internal packages, archive and render; never command, query, projection or a command under cmd.",
		forbid:      []string{m + "query", m + "projection", m + "cmd"},
		forbidExact: []string{m + "command"}},
	{pkgs: []string{"command/orders"}, stated: true,
		doc:    "It imports internal packages only; never command, command/invoicing, query, projection, render, archive or a command under cmd.",
		forbid: []string{m + "command", m + "query", m + "projection", m + "cmd", m + "render", m + "archive"}},
	// The console sits above command and query: it calls both (and internal
	// packages); nothing but the binary imports it.
	{pkgs: []string{"console"}, doc: "It sits above command and query: it imports both and internal packages; nothing below imports it.",
		forbid: []string{m + "projection", m + "cmd"}},
	{pkgs: []string{"..."}, except: []string{"console", "cmd/o2i"},
		doc:    "(layering) only the binary imports the console",
		forbid: []string{m + "console"}},
	{pkgs: []string{"projection"}, doc: "It imports internal/event, internal/readmodel, internal/consume, internal/tracing, pgx, go-redis, kafka-go and the OpenTelemetry trace API; never command or query.",
		forbid: []string{m + "command", m + "query", m + "cmd"}},
	// cmd/benchmark, a load tool, reads the stack's addresses with testenv.Env.
	{pkgs: []string{"..."}, except: []string{"internal/testenv", "internal/apitest", "cmd/benchmark"},
		doc:    "internal/testenv: Only tests import this package. internal/apitest: Only tests import it.",
		forbid: prefixed(testOnlyUsers)},
}

func prefixed(rel []string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = m + r
	}
	return out
}

// under reports whether path is p or below it.
func under(path, p string) bool { return path == p || strings.HasPrefix(path, p+"/") }

func (r rule) covers(rel string) bool {
	for _, e := range r.except {
		if under(rel, e) {
			return false
		}
	}
	for _, p := range r.pkgs {
		switch {
		case p == "...":
			return true
		case strings.HasSuffix(p, "/..."):
			if strings.HasPrefix(rel, strings.TrimSuffix(p, "...")) {
				return true
			}
		case rel == p:
			return true
		}
	}
	return false
}

// pkgInfo is one package directory: its import path relative to the module,
// and per import the files that import it.
type pkgInfo struct {
	rel     string
	imports map[string][]string
	clock   []string // "file: time.Now" calls that read the clock
	doc     string   // the package's doc comment, in one line
}

// loadPackages parses the non-test Go files below root.
func loadPackages(root string) ([]pkgInfo, error) {
	byDir := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		p := byDir[dir]
		if p == nil {
			p = &pkgInfo{rel: filepath.ToSlash(dir), imports: map[string][]string{}}
			byDir[dir] = p
		}
		if f.Doc != nil {
			p.doc = strings.Join(strings.Fields(p.doc+" "+f.Doc.Text()), " ")
		}
		timeName := ""
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			p.imports[ip] = append(p.imports[ip], filepath.ToSlash(filepath.Join(dir, name)))
			if ip == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName != "" {
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName && slices.Contains(clockFuncs, sel.Sel.Name) {
						p.clock = append(p.clock, fmt.Sprintf("%s:%d: time.%s", filepath.ToSlash(filepath.Join(dir, name)),
							fset.Position(sel.Pos()).Line, sel.Sel.Name))
					}
				}
				return true
			})
		}
		return nil
	})
	var out []pkgInfo
	for _, p := range byDir {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b pkgInfo) int { return strings.Compare(a.rel, b.rel) })
	return out, err
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// violations checks every package against every rule that covers it.
func violations(pkgs []pkgInfo) []string {
	var internal []string
	for _, p := range pkgs {
		if under(p.rel, "internal") {
			internal = append(internal, m+p.rel)
		}
	}
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !r.covers(p.rel) {
				continue
			}
			forbid := r.forbid
			if r.only != nil {
				for _, ip := range internal {
					if ip != m+p.rel && !slices.Contains(prefixed(r.only), ip) {
						forbid = append(slices.Clip(forbid), ip)
					}
				}
			}
			for ip, files := range p.imports {
				bad := ""
				switch {
				case slices.ContainsFunc(forbid, func(f string) bool { return under(ip, f) }), slices.Contains(r.forbidExact, ip):
					bad = "forbidden"
				case r.stdOnly && !isStd(ip) && !slices.ContainsFunc(r.allow, func(a string) bool { return under(ip, a) }):
					bad = "not allowed"
				}
				if bad != "" {
					out = append(out, fmt.Sprintf("%s imports %s (%s; %s): rule %q", p.rel, ip, bad, files[0], r.doc))
				}
			}
			if r.stated && !strings.Contains(p.doc, r.doc) {
				out = append(out, fmt.Sprintf("%s: the doc comment does not state the rule %q", p.rel, r.doc))
			}
			if r.noClock {
				for _, c := range p.clock {
					out = append(out, fmt.Sprintf("%s reads the clock (%s): rule %q", p.rel, c, r.doc))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// moduleRoot finds the directory of go.mod above the working directory and
// checks its module path.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if mod, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					if strings.TrimSpace(mod)+"/" != m {
						t.Fatalf("module %s, the rules are written for %s", mod, m)
					}
					return dir
				}
			}
			t.Fatal("go.mod without a module line")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs, err := loadPackages(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every rule must cover a package that exists, or it guards nothing.
	for _, r := range rules {
		if !slices.ContainsFunc(pkgs, func(p pkgInfo) bool { return r.covers(p.rel) }) {
			t.Errorf("rule %q covers no package", r.doc)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations runs the check on a small module that
// breaks rules, so that the test above cannot pass by checking nothing.
func TestImportRulesCatchViolations(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"internal/money/m.go":    "package money\nimport _ \"net/http\"\n",
		"internal/event/e.go":    "package event\nimport _ \"" + m + "internal/billing\"\n",
		"internal/billing/b.go":  "package billing\nimport \"os\"\nvar _ = os.Args\n",
		"internal/store/s.go":    "package store\nimport _ \"" + m + "internal/event\"\n",
		"render/r.go":            "package render\nimport clock \"time\"\nvar _ = clock.Now()\n",
		"internal/einvoice/e.go": "package einvoice\nimport _ \"" + m + "render\"\n", // render imports einvoice, never the reverse
		"query/q.go":             "package query\nimport _ \"" + m + "command\"\n",
		"command/c.go":           "package command\nimport _ \"" + m + "internal/testenv\"\n",
		"command/c_test.go":      "package command\nimport _ \"" + m + "query\"\n", // tests may
		"command/d.go":           "package command\nimport _ \"" + m + "command/invoicing\"\n",
		"command/invoicing/i.go": "// Package invoicing states no rule.\npackage invoicing\nimport _ \"" + m + "command\"\nimport _ \"" + m + "command/orders\"\n",
		"command/orders/o.go":    "package orders\nimport _ \"" + m + "command/invoicing\"\n",
	}
	for name, src := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgs, err := loadPackages(root)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(violations(pkgs), "\n")
	for _, want := range []string{
		"internal/money imports net/http",
		"internal/event imports " + m + "internal/billing",
		"internal/billing imports os (forbidden",
		"internal/store imports " + m + "internal/event",
		"render reads the clock (render/r.go:3: time.Now)",
		"internal/einvoice imports " + m + "render",
		"query imports " + m + "command",
		"command imports " + m + "internal/testenv",
		"command imports " + m + "command/invoicing",
		"command/invoicing imports " + m + "command (forbidden",
		"command/orders imports " + m + "command/invoicing",
		"command/invoicing: the doc comment does not state the rule",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no violation %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "command imports "+m+"query") {
		t.Errorf("a test file's import counted:\n%s", got)
	}
	if strings.Contains(got, "command/invoicing imports "+m+"command/orders") {
		t.Errorf("command/invoicing may import command/orders:\n%s", got)
	}
}
