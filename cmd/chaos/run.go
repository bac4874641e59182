package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// report is what a fault run prints.
type report struct {
	OrdersSent        int             `json:"ordersSent"`
	Acknowledged      int             `json:"acknowledged"`
	GaveUp            int             `json:"gaveUp"`
	ClientRetries     int64           `json:"clientRetries"`
	LoadSeconds       float64         `json:"loadSeconds"`
	Faults            []faultRecord   `json:"faults"`
	ServiceStarts     int64           `json:"serviceStarts"`
	ServiceExits      int64           `json:"serviceExitsOnItsOwn"`
	ConvergedSeconds  float64         `json:"archivedAllSecondsAfterFaults"`
	Figures           figures         `json:"reconciliation"`
	DocumentsVerified int             `json:"documentsVerified"`
	Problems          []string        `json:"problems"`
	Machine           string          `json:"machine"`
	At                string          `json:"at"`
	ranges            map[string]span // for the README
}

type faultRecord struct {
	Name    string  `json:"name"`
	AtOrder int     `json:"atAcknowledged"`
	Seconds float64 `json:"seconds"`
	Err     string  `json:"error,omitempty"`
}

// fault is one injected failure, fired once the given share of the orders
// is acknowledged.
type fault struct {
	name  string
	share float64
	do    func(ctx context.Context) error
}

func run(ctx context.Context, c config) (*report, error) {
	rep := &report{OrdersSent: c.orders, Machine: machine(), At: time.Now().UTC().Format(time.RFC3339)}
	projectID, key, err := setupProject(ctx, c)
	if err != nil {
		return nil, err
	}
	log.Printf("project %s", projectID)
	api := &apiClient{base: "http://" + c.addr, key: key, http: &http.Client{Timeout: 15 * time.Second}}

	svc := &service{bin: c.o2i, addr: c.addr, logPath: c.serviceLog}
	svcCtx, stopSvc := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() { svc.supervise(svcCtx); close(supervised) }()
	// The service stops before the run returns (main may exit at once).
	defer func() { stopSvc(); <-supervised }()
	if err := api.waitHealthy(ctx, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("service under test: %w", err)
	}

	rdb, err := redisClient()
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	stack := func(args ...string) func(context.Context) error {
		return func(ctx context.Context) error { return runCmd(ctx, c.devstack, args...) }
	}
	crashAndRestart := func(component string, down time.Duration) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := stack("crash", component)(ctx); err != nil {
				return err
			}
			sleep(ctx, down)
			return stack("up")(ctx)
		}
	}
	// The shares are chosen so that every fault, the MinIO outage's restart
	// included, falls within the load at the default rate.
	faults := []fault{
		{"service SIGKILL 1", 0.10, func(context.Context) error { return svc.kill() }},
		{"PostgreSQL immediate shutdown, restart after 3 s", 0.20, crashAndRestart("postgres", 3*time.Second)},
		{"service SIGKILL 2", 0.30, func(context.Context) error { return svc.kill() }},
		{"broker SIGKILL, restart after 2 s", 0.40, crashAndRestart("kafka", 2*time.Second)},
		{"Redis FLUSHALL", 0.45, func(ctx context.Context) error { return rdb.FlushAll(ctx).Err() }},
		{"service SIGKILL 3", 0.50, func(context.Context) error { return svc.kill() }},
		{fmt.Sprintf("MinIO SIGKILL, restart after %s", c.minioOutage), 0.55, crashAndRestart("minio", c.minioOutage)},
	}

	orders := orderNumbers(projectID, c.orders)
	var acked atomic.Int64
	loadDone := make(chan struct{})
	var faultsEnd time.Time
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// reached waits until n orders are acknowledged or the load ended.
		reached := func(n int64) {
			for acked.Load() < n {
				select {
				case <-ctx.Done():
					return
				case <-loadDone:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		for _, f := range faults {
			reached(int64(f.share * float64(c.orders)))
			if ctx.Err() != nil {
				return
			}
			at := acked.Load()
			start := time.Now()
			log.Printf("fault: %s (at %d acknowledged)", f.name, at)
			err := f.do(ctx)
			r := faultRecord{Name: f.name, AtOrder: int(at), Seconds: time.Since(start).Seconds()}
			if err != nil {
				r.Err = err.Error()
				log.Printf("fault %s: %v", f.name, err)
			}
			rep.Faults = append(rep.Faults, r)
		}
		faultsEnd = time.Now()
	}()

	start := time.Now()
	res := sendOrders(ctx, api, orders, c, &acked)
	rep.LoadSeconds = time.Since(start).Seconds()
	close(loadDone)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rep.Acknowledged, rep.GaveUp, rep.ClientRetries = len(res.acked), res.gaveUp, res.retries
	log.Printf("load: %d acknowledged, %d given up, %d retries in %.1f s", len(res.acked), res.gaveUp, res.retries, rep.LoadSeconds)
	for _, f := range rep.Faults {
		if f.Err != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("fault %q failed: %s", f.Name, f.Err))
		}
	}
	if res.gaveUp > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d orders were never acknowledged within the clients' retry time", res.gaveUp))
	}

	// Every acknowledged order invoiced and archived, within the bound.
	pending, err := api.waitArchived(ctx, res.acked, faultsEnd.Add(c.converge))
	if err != nil {
		return nil, err
	}
	rep.ConvergedSeconds = time.Since(faultsEnd).Seconds()
	if len(pending) > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d acknowledged orders not archived %s after the faults ended (first: %s)", len(pending), c.converge, pending[0]))
	}
	log.Printf("converged %.1f s after the faults ended", rep.ConvergedSeconds)

	log.Printf("reconciling through the API: %d order records, the invoice listing, every document", len(res.acked))
	statuses, err := api.orderStatuses(ctx, res.acked)
	if err != nil {
		return nil, err
	}
	invoices, err := api.listInvoices(ctx)
	if err != nil {
		return nil, err
	}
	fig, problems, ranges := reconcile(res.acked, statuses, invoices)
	rep.Figures, rep.ranges = fig, ranges
	rep.Problems = append(rep.Problems, problems...)
	n, problems := api.verifyDocuments(ctx, invoices)
	rep.DocumentsVerified = n
	rep.Problems = append(rep.Problems, problems...)
	rep.ServiceStarts, rep.ServiceExits = svc.starts.Load(), svc.exits.Load()
	return rep, nil
}

// setupProject creates a test-mode project with seller data and an API key
// through the service's admin CLI.
func setupProject(ctx context.Context, c config) (projectID, key string, err error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := runJSON(ctx, c.o2i, &p, "project", "create", "--name", "Chaos "+time.Now().UTC().Format(time.RFC3339), "--test-mode=true"); err != nil {
		return "", "", err
	}
	if err := runCmd(ctx, c.o2i, "project", "set", "--project", p.ID, "--seller-name", "Muster Handel GmbH",
		"--seller-street", "Hauptstraße 1", "--seller-postal-code", "10115", "--seller-city", "Berlin", "--seller-country", "DE",
		"--seller-vat-id", "DE123456789", "--seller-iban", "DE02120300000000202051", "--contact-name", "Erika Mustermann",
		"--contact-phone", "+49 30 1234567", "--contact-email", "rechnung@example.com", "--rate-limit", "5000", "--rate-burst", "10000"); err != nil {
		return "", "", err
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := runJSON(ctx, c.o2i, &k, "key", "create", "--project", p.ID, "--scopes", "orders:write,invoices:read", "--name", "chaos"); err != nil {
		return "", "", err
	}
	return p.ID, k.Key, nil
}

func runJSON(ctx context.Context, bin string, v any, args ...string) error {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, bin, args...).Output()
	if err != nil {
		return fmt.Errorf("%s %s: %w", bin, strings.Join(args[:2], " "), err)
	}
	return json.Unmarshal(out, v)
}

func runCmd(ctx context.Context, bin string, args ...string) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return nil
}

func redisClient() (*redis.Client, error) {
	url := os.Getenv("O2I_REDIS_URL")
	if url == "" {
		return nil, errors.New("O2I_REDIS_URL is not set: load .dev/env")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// service runs the service under test (all roles in one process) and
// starts it again whenever it ends, as a process supervisor would.
type service struct {
	bin, addr, logPath string

	mu     sync.Mutex
	proc   *os.Process
	starts atomic.Int64
	exits  atomic.Int64
	killed atomic.Bool
}

func (s *service) supervise(ctx context.Context) {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Printf("service log: %v", err)
		logf = os.Stderr
	}
	defer logf.Close()
	for ctx.Err() == nil {
		cmd := exec.Command(s.bin, "serve")
		cmd.Env = append(os.Environ(), "O2I_HTTP_ADDR="+s.addr, "O2I_METRICS_ADDR=", "O2I_LOG_LEVEL=warn")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			log.Printf("service: start: %v", err)
			sleep(ctx, time.Second)
			continue
		}
		s.starts.Add(1)
		s.mu.Lock()
		s.proc = cmd.Process
		s.mu.Unlock()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			return
		case err := <-done:
			if !s.killed.Swap(false) {
				s.exits.Add(1)
				log.Printf("service exited on its own (%v); starting it again in 1 s", err)
				sleep(ctx, time.Second)
			}
		}
	}
}

// kill SIGKILLs the running service; the supervisor starts it again.
func (s *service) kill() error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return errors.New("service not running")
	}
	s.killed.Store(true)
	return p.Signal(syscall.SIGKILL)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// machine names the machine's size for the report.
func machine() string {
	b, err := os.ReadFile("/proc/meminfo")
	mem := ""
	if err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		mem = fmt.Sprintf(", %d GiB", (kb+512*1024)>>20)
	}
	return fmt.Sprintf("%d cores%s", runtime.NumCPU(), mem)
}
