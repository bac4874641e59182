// Command benchmark runs the service's load benchmarks on this machine
// against the local stack and prints each figure next to the machine's own
// ceiling measured in the same run (`make bench`):
//
//   - engine: computing, rendering and validating one invoice, next to the
//     official validator on the same invoice;
//   - reads:  GET /v1/orders/{orderNo} over 100,000 projected orders, and a
//     trivial chi handler returning fixed JSON (the HTTP ceiling), both with wrk;
//   - list:   GET /v1/invoices pages of 100 at 10 million invoices in the read model;
//   - writes: POST /v1/orders with realistic orders, next to pgbench inserting
//     one ~1 KB JSONB row per transaction at the same concurrency, and the
//     projection lag while the writes run;
//   - soak: the write load's orders at the order target for ten minutes
//     (-soak-for) after a minute's warm-up (-soak-warmup), with the RSS of
//     each process of the stack at 0, 5 and 10 minutes (flat: no growth);
//   - invoices: a backlog of orders drained to archived invoices by the
//     invoicer, next to the archive's PUTs and the PDF rendering alone, and
//     order accepted → invoice archived under a steady order rate;
//   - roles: what one process of each role sustains on one core (api
//     orders/s and status reads/s, relay and projector events/s, invoicer
//     archived invoices/s, mails/s), the numbers/s one number range issues,
//     and what an order costs in PostgreSQL, WAL, the archive and Redis;
//     with -operations it rewrites the capacity section of the operations
//     guide from them.
//   - hol: project B's backlog drained alone and with project A's payment
//     provider black-holed (accepts connections, never answers) while A's
//     provider_transfer orders wait ahead of B's, side by side.
//   - mail: the mailer draining e-mail deliveries into the stack's SMTP sink
//     with its pool of workers, next to the same SMTP sessions alone.
//
// With -readme it rewrites the figures table of README.md: the rows of the
// stages that ran; those of the others stay, with the day they were measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/o2i-service/o2i/command/invoicing"
)

// result is one benchmark figure with its ceiling.
type result struct {
	What     string `json:"what"`
	Measured string `json:"measured"`
	Ceiling  string `json:"ceiling"`
	Target   string `json:"target"`
	Stage    string `json:"stage"` // the stage that measured it
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ceiling-server" {
		ceilingServer(os.Args[2])
		return
	}
	var (
		only      = flag.String("only", "engine,reads,list,writes,soak,invoices,roles,hol,mail,console", "stages to run: engine, reads, list, writes, soak, invoices, roles, hol, mail, console")
		duration  = flag.Duration("duration", 10*time.Second, "length of each load run")
		conns     = flag.Int("conns", 64, "connections of the read load")
		wconns    = flag.Int("write-conns", 32, "connections of the write load (and pgbench clients)")
		orders    = flag.Int("orders", 100_000, "projected orders for the read load")
		invoices  = flag.Int("invoices", 10_000_000, "invoices in the read model for the listing benchmark")
		conOrders = flag.Int("console-orders", 1_000_000, "orders (each with a document) of the console stage's project")
		bin       = flag.String("o2i", "bin/o2i", "the service binary")
		addr      = flag.String("addr", localAddr(18080), "address for the service under test")
		readme    = flag.String("readme", "", "README to update with the figures")
		ops       = flag.String("operations", "", "operations guide whose capacity section is computed from the roles stage's figures")
		profile   = flag.String("profile", "", "directory for CPU and allocation profiles of the service under test during the measured POST and GET loads and the invoices drain (writes.*.pprof, reads-N.*.pprof, drain.*.pprof)")
		sc        soakConfig
		inv       invoiceConfig
		rc        roleConfig
		mails     mailConfig
	)
	flag.IntVar(&sc.rate, "soak-rate", 3000, "orders per second offered during the soak (the order target; soak stage)")
	flag.DurationVar(&sc.d, "soak-for", 10*time.Minute, "length of the soak; RSS is sampled at its start, middle and end (soak stage)")
	flag.DurationVar(&sc.warmup, "soak-warmup", time.Minute, "load at the soak's rate before its start, so that its samples compare warm processes (soak stage)")
	flag.StringVar(&benchMetricsAddr, "metrics-addr", benchMetricsAddr, "address of the service under test's metrics")
	flag.IntVar(&rc.invoices, "role-invoices", 1000, "orders the invoicer drains on one core (roles stage)")
	flag.IntVar(&rc.mails, "role-mails", 300, "e-mails the mailer sends (roles stage)")
	flag.IntVar(&inv.backlog, "invoice-orders", 6000, "orders of the invoicer's backlog (invoices stage)")
	flag.IntVar(&inv.rate, "invoice-rate", 50, "orders per second of the steady load (invoices stage)")
	flag.DurationVar(&inv.steady, "invoice-for", 20*time.Second, "length of the steady load (invoices stage)")
	flag.IntVar(&inv.projects, "invoice-projects", 1, "projects the invoicer's backlog is spread over (invoices stage)")
	flag.StringVar(&inv.payment, "invoice-payment", paidByCredit, "how the invoicer's backlog is paid: credit (store credit covers each order) or card (the provider's webhook reports each payment before the drain) (invoices stage)")
	flag.StringVar(&inv.profile, "invoicer-profile", "", "write a 15 s CPU profile of the invoicer process during the drain to this file")
	holOrders := flag.Int("hol-orders", 1000, "orders of project B drained alone and behind project A's black-holed provider (hol stage)")
	holFaulty := flag.Int("hol-faulty", 30, "provider_transfer orders of project A waiting on its black-holed provider (hol stage)")
	flag.IntVar(&mails.messages, "mail-messages", 2000, "e-mail deliveries the mailer drains (mail stage)")
	flag.IntVar(&mails.concurrency, "mail-concurrency", invoicing.DefaultMailConcurrency, "the mailer's workers, O2I_MAIL_CONCURRENCY (mail stage)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBench(ctx, *bin, *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer b.close()
	if *profile != "" {
		b.prof = &profiler{dir: *profile}
	}
	fatalf := func(format string, args ...any) {
		b.close() // stop the service under test: log.Fatalf skips deferred calls
		log.Fatalf(format, args...)
	}
	stages := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		stages[strings.TrimSpace(s)] = true
	}
	var results []result
	run := func(stage string, f func() ([]result, error)) {
		if !stages[stage] {
			return
		}
		r, err := f()
		if err != nil {
			fatalf("%s: %v", stage, err)
		}
		for i := range r {
			r[i].Stage = stage
		}
		results = append(results, r...)
	}
	run("engine", func() ([]result, error) { return b.engine(ctx) })
	run("reads", func() ([]result, error) { return b.reads(ctx, *orders, *conns, *duration) })
	run("list", func() ([]result, error) { return b.list(ctx, *invoices, *duration) })
	run("writes", func() ([]result, error) { return b.writes(ctx, *wconns, *duration) })
	run("soak", func() ([]result, error) { return b.soak(ctx, sc) })
	run("invoices", func() ([]result, error) { return b.invoices(ctx, inv) })
	run("console", func() ([]result, error) { return b.console(ctx, *conOrders, *duration) })
	var figures *roleFigures
	run("roles", func() ([]result, error) {
		rc.duration, rc.conns = *duration, *wconns
		r, f, err := b.roles(ctx, rc)
		figures = &f
		return r, err
	})
	run("hol", func() ([]result, error) { return b.hol(ctx, *holOrders, *holFaulty) })
	run("mail", func() ([]result, error) { return b.mails(ctx, mails) })
	b.stopServer()
	machine, today := b.machine(), time.Now().UTC().Format(time.DateOnly)
	if figures != nil {
		section, err := writeCapacity(*ops, ".dev/bench-roles.json", *figures, today, machine)
		if err != nil {
			fatalf("capacity: %v", err)
		}
		fmt.Println(section)
	}
	fmt.Println(markdown(results, machine, map[string]string{"": today}))
	raw, _ := json.MarshalIndent(results, "", "  ")
	_ = os.WriteFile(".dev/bench.json", raw, 0o644)
	if *readme != "" {
		if err := updateReadme(*readme, results, machine, today); err != nil {
			fatalf("%v", err)
		}
	}
}

// ceilingServer is the machine's HTTP ceiling: chi with one handler that
// returns a fixed small JSON body.
func ceilingServer(addr string) {
	r := chi.NewRouter()
	body := []byte(`{"data":{"orderNo":"X","status":"created","fulfillmentStatus":"unfulfilled","invoices":[]},"requestId":"0"}` + "\n")
	r.Get("/ceiling", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	log.Fatal(http.ListenAndServe(addr, r))
}

// stageOrder is the order of the stages in the table.
var stageOrder = []string{"engine", "reads", "list", "writes", "soak", "invoices", "roles", "hol", "mail", "console"}

// stageOf names the stage of a row already in the table by its first column.
func stageOf(what string) string {
	for _, p := range [][2]string{{"invoice engine:", "engine"}, {"PDF/A-3 of", "engine"}, {"GET /v1/orders/", "reads"}, {"GET /v1/invoices", "list"},
		{"POST /v1/orders", "writes"}, {"projection lag", "writes"}, {"soak:", "soak"}, {"invoice pipeline", "invoices"}, {"one core,", "roles"}, {"invoicer, no head-of-line", "hol"}, {"mailer:", "mail"}, {"console page:", "console"}} {
		if strings.HasPrefix(what, p[0]) {
			return p[1]
		}
	}
	return ""
}

// markdown renders the table; dates holds the day each stage's rows were
// measured ("" for any other stage).
func markdown(results []result, machine string, dates map[string]string) string {
	var b strings.Builder
	date := func(stage string) string {
		if d, ok := dates[stage]; ok {
			return d
		}
		return dates[""]
	}
	// One date for all rows, or the stages of each date.
	var days []string
	byDay := map[string][]string{}
	for _, st := range stageOrder {
		if !slices.ContainsFunc(results, func(r result) bool { return r.Stage == st }) {
			continue
		}
		d := date(st)
		if _, ok := byDay[d]; !ok {
			days = append(days, d)
		}
		byDay[d] = append(byDay[d], st)
	}
	switch len(days) {
	case 0:
		fmt.Fprintf(&b, "Measured %s on %s.\n\n", dates[""], machine)
	case 1:
		fmt.Fprintf(&b, "Measured %s on %s.\n\n", days[0], machine)
	default:
		var parts []string
		for _, d := range days {
			parts = append(parts, strings.Join(byDay[d], ", ")+" "+d)
		}
		fmt.Fprintf(&b, "Measured on %s: %s.\n\n", machine, strings.Join(parts, "; "))
	}
	b.WriteString("| what | measured | ceiling in the same run | target |\n|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.What, r.Measured, r.Ceiling, r.Target)
	}
	return b.String()
}

const startMark, endMark = "<!-- bench:start -->", "<!-- bench:end -->"

var (
	measuredOne  = regexp.MustCompile(`^Measured (\d{4}-\d{2}-\d{2}) on .*\.$`)
	measuredMany = regexp.MustCompile(`^Measured on .*?: (.*)\.$`)
	stagesOnDay  = regexp.MustCompile(`^(.*) (\d{4}-\d{2}-\d{2})$`)
)

// updateReadme rewrites the table between the markers of the README: the
// rows of the stages that ran are replaced, the others kept with the day
// they were measured.
func updateReadme(path string, results []result, machine, today string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(raw)
	i, j := strings.Index(s, startMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, startMark, endMark)
	}
	ran := map[string]bool{}
	for _, r := range results {
		ran[r.Stage] = true
	}
	dates := map[string]string{"": today}
	kept := map[string][]result{}
	for _, line := range strings.Split(s[i+len(startMark):j], "\n") {
		line = strings.TrimSpace(line)
		if m := measuredOne.FindStringSubmatch(line); m != nil {
			for _, st := range stageOrder {
				dates[st] = m[1]
			}
		} else if m := measuredMany.FindStringSubmatch(line); m != nil {
			for _, part := range strings.Split(m[1], "; ") {
				if g := stagesOnDay.FindStringSubmatch(part); g != nil {
					for _, st := range strings.Split(g[1], ", ") {
						dates[st] = g[2]
					}
				}
			}
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 4 || cells[0] == " what" {
			continue
		}
		r := result{What: strings.TrimSpace(cells[0]), Measured: cells[1], Ceiling: cells[2], Target: strings.TrimSpace(cells[3])}
		r.Stage = stageOf(r.What)
		if r.Stage != "" && !ran[r.Stage] {
			kept[r.Stage] = append(kept[r.Stage], r)
		}
	}
	var rows []result
	for _, st := range stageOrder {
		if ran[st] {
			dates[st] = today
			rows = append(rows, slices.DeleteFunc(slices.Clone(results), func(r result) bool { return r.Stage != st })...)
		} else {
			rows = append(rows, kept[st]...)
		}
	}
	s = s[:i+len(startMark)] + "\n" + markdown(rows, machine, dates) + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

func (b *bench) machine() string {
	out, _ := exec.Command("sh", "-c", `echo "$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"`).Output()
	return strings.TrimSpace(string(out))
}
