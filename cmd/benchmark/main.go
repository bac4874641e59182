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
//     projection lag while the writes run.
//
// With -readme it rewrites the figures table of README.md.
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
	"strings"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
)

// result is one benchmark figure with its ceiling.
type result struct {
	What     string `json:"what"`
	Measured string `json:"measured"`
	Ceiling  string `json:"ceiling"`
	Target   string `json:"target"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ceiling-server" {
		ceilingServer(os.Args[2])
		return
	}
	var (
		only     = flag.String("only", "engine,reads,list,writes", "stages to run: engine, reads, list, writes")
		duration = flag.Duration("duration", 10*time.Second, "length of each load run")
		conns    = flag.Int("conns", 64, "connections of the read load")
		wconns   = flag.Int("write-conns", 32, "connections of the write load (and pgbench clients)")
		orders   = flag.Int("orders", 100_000, "projected orders for the read load")
		invoices = flag.Int("invoices", 10_000_000, "invoices in the read model for the listing benchmark")
		bin      = flag.String("o2i", "bin/o2i", "the service binary")
		addr     = flag.String("addr", "127.0.0.1:18080", "address for the service under test")
		readme   = flag.String("readme", "", "README to update with the figures")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBench(ctx, *bin, *addr)
	if err != nil {
		log.Fatal(err)
	}
	defer b.close()
	var results []result
	stages := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		stages[strings.TrimSpace(s)] = true
	}
	if stages["engine"] {
		r, err := b.engine(ctx)
		if err != nil {
			log.Fatalf("engine: %v", err)
		}
		results = append(results, r...)
	}
	if stages["reads"] {
		r, err := b.reads(ctx, *orders, *conns, *duration)
		if err != nil {
			log.Fatalf("reads: %v", err)
		}
		results = append(results, r...)
	}
	if stages["list"] {
		r, err := b.list(ctx, *invoices, *duration)
		if err != nil {
			log.Fatalf("list: %v", err)
		}
		results = append(results, r...)
	}
	if stages["writes"] {
		r, err := b.writes(ctx, *wconns, *duration)
		if err != nil {
			log.Fatalf("writes: %v", err)
		}
		results = append(results, r...)
	}
	table := markdown(results, b.machine())
	fmt.Println(table)
	raw, _ := json.MarshalIndent(results, "", "  ")
	_ = os.WriteFile(".dev/bench.json", raw, 0o644)
	if *readme != "" {
		if err := updateReadme(*readme, table); err != nil {
			log.Fatal(err)
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

func markdown(results []result, machine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s.\n\n", time.Now().UTC().Format("2006-01-02"), machine)
	b.WriteString("| what | measured | ceiling in the same run | target |\n|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.What, r.Measured, r.Ceiling, r.Target)
	}
	return b.String()
}

const startMark, endMark = "<!-- bench:start -->", "<!-- bench:end -->"

func updateReadme(path, table string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(raw)
	i, j := strings.Index(s, startMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, startMark, endMark)
	}
	s = s[:i+len(startMark)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

func (b *bench) machine() string {
	out, _ := exec.Command("sh", "-c", `echo "$(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"`).Output()
	return strings.TrimSpace(string(out))
}
