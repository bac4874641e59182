// Command chaos is the reproducible fault run (`make chaos`): it sends at
// least 10,000 orders from clients that retry as the delivery contract
// demands (every network error, 429 and 5xx again with the same
// Idempotency-Key, waiting Retry-After or backing off), while it kills the
// service (SIGKILL: one process of each role in the multi-process mode, the
// default; the one process three times with -processes 1), crashes
// PostgreSQL (immediate shutdown), kills and restarts the Kafka-protocol
// broker, flushes Redis and stops MinIO for 30 s. When the faults are over
// it waits until every acknowledged order is invoiced, archived and
// e-mailed, then reconciles through the API: no acknowledged order lost, no
// order with two invoices, every invoice number unique and the range
// gapless, every archived document served (the archive checks each
// object's SHA-256 on read) and matching its metadata; and in the stores:
// every document's objects exactly once in the bucket (one version each,
// the one anchored), every document e-mailed with one Message-ID, which
// every copy at the SMTP sink carries (a resend after a crash is the same
// message). It prints the figures as JSON and exits 1 on any problem.
//
// It runs against the local stack (.dev/env loaded) with the service binary
// it starts itself, and changes the stack with `devstack crash` / `up`.
//
// With -scenario held it runs the held-orders scenario instead (held.go):
// the orders of a project without seller data are held by one to three
// tasks, and setting the seller data releases them at the pipeline's drain
// rate.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type config struct {
	orders      int
	clients     int
	rate        int
	addr        string
	o2i         string
	devstack    string
	serviceLog  string
	minioOutage time.Duration
	converge    time.Duration
	readme      string
	processes   int
	mailDir     string
	scenario    string
}

func main() {
	var c config
	flag.IntVar(&c.orders, "orders", 10000, "orders to send")
	flag.IntVar(&c.clients, "clients", 16, "concurrent clients")
	flag.IntVar(&c.rate, "rate", 120, "orders per second the clients send at most (so that the faults fall within the run)")
	flag.StringVar(&c.addr, "addr", "127.0.0.1:18090", "address of the service under test")
	flag.StringVar(&c.o2i, "o2i", "bin/o2i", "service binary")
	flag.StringVar(&c.devstack, "devstack", "bin/devstack", "local stack binary")
	flag.StringVar(&c.serviceLog, "service-log", ".dev/chaos-service.log", "where the service under test logs")
	flag.DurationVar(&c.minioOutage, "minio-outage", 30*time.Second, "how long MinIO stays stopped")
	flag.DurationVar(&c.converge, "converge", 15*time.Minute, "how long after the faults every acknowledged order may take to be archived")
	flag.StringVar(&c.readme, "readme", "", "when set, writes the figures into this README between <!-- chaos:start --> and <!-- chaos:end -->")
	flag.IntVar(&c.processes, "processes", 2, "processes per role: 2 runs api, relay, projector and invoicer as two processes each (multi-process mode); 1 runs one process with all roles")
	flag.StringVar(&c.mailDir, "mail-dir", ".dev/mail", "where the local SMTP sink keeps the messages it received")
	flag.StringVar(&c.scenario, "scenario", "faults", "faults: the fault run; held: orders of a project without seller data held by one to three tasks, then released (held.go)")
	flag.Parse()
	if c.processes < 1 || c.processes > 2 {
		log.Fatalf("chaos: -processes must be 1 or 2")
	}
	log.SetFlags(log.Ltime | log.Lmicroseconds)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.scenario == "held" {
		rateSet := false
		flag.Visit(func(f *flag.Flag) { rateSet = rateSet || f.Name == "rate" })
		if !rateSet {
			c.rate = 2000 // as fast as the clients go: the drain rate is the pipeline's, not the clients'
		}
		rep, err := runHeld(ctx, c)
		if err != nil {
			log.Fatalf("chaos: %v", err)
		}
		out, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Println(string(out))
		if len(rep.Problems) > 0 {
			log.Printf("chaos: %d problems", len(rep.Problems))
			os.Exit(1)
		}
		log.Printf("chaos: passed")
		return
	}
	if c.scenario != "faults" {
		log.Fatalf("chaos: unknown scenario %q (faults or held)", c.scenario)
	}
	rep, err := run(ctx, c)
	if err != nil {
		log.Fatalf("chaos: %v", err)
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
	if c.readme != "" {
		if err := writeReadme(c.readme, rep); err != nil {
			log.Fatalf("chaos: %v", err)
		}
	}
	if len(rep.Problems) > 0 {
		log.Printf("chaos: %d problems", len(rep.Problems))
		os.Exit(1)
	}
	log.Printf("chaos: passed")
}
