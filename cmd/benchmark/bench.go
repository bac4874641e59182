package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// bench holds the service under test and the connections to the stack.
type bench struct {
	pool    *pgxpool.Pool
	rdb     *redis.Client
	server  *exec.Cmd // the service under test (the API and the roles run with it)
	worker  *exec.Cmd // a second service process running background roles only, when started
	ceiling *exec.Cmd // the trivial handler, while it runs
	bin     string
	addr    string
	baseURL string
	dir     string // scratch files
	prof    *profiler
	// profileAs names the profiles of the next measured wrk run (-profile);
	// the run clears it.
	profileAs string
}

func newBench(ctx context.Context, bin, addr string) (*bench, error) {
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), 8)
	if err != nil {
		return nil, err
	}
	if _, err := store.Migrate(ctx, pool); err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(testenv.Env("O2I_REDIS_URL"))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "o2i-bench-")
	if err != nil {
		return nil, err
	}
	return &bench{pool: pool, rdb: redis.NewClient(opt), baseURL: "http://" + addr, bin: bin, addr: addr, dir: dir}, nil
}

// serve starts the service under test (all roles) unless it runs already.
func (b *bench) serve(ctx context.Context) error {
	return b.serveRoles(ctx, "")
}

// serveRoles starts the service under test with the given roles (all when
// empty; they must include api) unless it runs already.
func (b *bench) serveRoles(ctx context.Context, roles string) error {
	if b.server != nil {
		return nil
	}
	args := []string{"serve"}
	if roles != "" {
		args = append(args, "--roles", roles)
	}
	env := []string{"O2I_HTTP_ADDR=" + b.addr, "O2I_METRICS_ADDR=" + benchMetricsAddr}
	if b.prof != nil {
		env = append(env, "O2I_DEBUG_ADDR="+benchDebugAddr)
	}
	b.server = b.command(args, env...)
	if err := b.server.Start(); err != nil {
		b.server = nil
		return fmt.Errorf("start %s: %w", b.bin, err)
	}
	if err := waitHTTP(ctx, b.baseURL+"/api/health"); err != nil {
		return fmt.Errorf("service under test: %w", err)
	}
	return nil
}

// command is a service process with the stack's environment and extra
// variables; its output goes to stderr.
func (b *bench) command(args []string, env ...string) *exec.Cmd {
	c := exec.Command(b.bin, args...)
	c.Env = append(append(os.Environ(), "O2I_LOG_LEVEL=warn"), env...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	stopWithParent(c)
	return c
}

// stopServer stops the service under test and the worker process, if they run.
func (b *bench) stopServer() {
	stopProcess(b.worker)
	stopProcess(b.server)
	b.worker, b.server = nil, nil
}

// stopProcess interrupts a started process and waits for it to end (at
// most 40 s: its shutdown timeout is 20 s), then kills it.
func stopProcess(c *exec.Cmd) {
	if c == nil || c.Process == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	_ = c.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		_ = c.Process.Kill()
		<-done
	}
}

func (b *bench) close() {
	b.stopServer()
	b.rdb.Close()
	b.pool.Close()
	os.RemoveAll(b.dir)
}

func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not answer 200 in time (%v)", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newProject creates a project with demo seller data and n keys with both scopes.
func (b *bench) newProject(ctx context.Context, name string, n int) (string, []string, error) {
	p, err := project.Create(ctx, b.pool, name, true, project.Accrual)
	if err != nil {
		return "", nil, err
	}
	if _, err := project.Apply(ctx, b.pool, p.ID, project.Update{Settings: func(s *project.Settings) { *s = testenv.DemoSeller() }}); err != nil {
		return "", nil, err
	}
	var keys []string
	for range n {
		k, err := apikey.Create(ctx, b.pool, p.ID, []string{"orders:write", "invoices:read"}, 0, "bench", apikey.Prefix)
		if err != nil {
			return "", nil, err
		}
		keys = append(keys, k.Key)
	}
	return p.ID, keys, nil
}

// wrkResult is what wrk measured.
type wrkResult struct {
	rps           float64
	p50, p99      time.Duration
	non2xx, total int64
	// cpu is the CPU time each process of the load spent during the
	// measured run (loadProcess), largest first.
	cpu []cpuShare
	// allocs is the service's heap allocations per request during the
	// measured run (all its roles); 0 when the target was not the service.
	allocs float64
	// peakRSS is the service's highest resident memory during the
	// measured run in bytes; 0 when the target was not the service.
	peakRSS int64
}

func (r wrkResult) String() string {
	s := fmt.Sprintf("%.0f req/s, p50 %s, p99 %s", r.rps, ms(r.p50), ms(r.p99))
	if r.non2xx > 0 {
		s += fmt.Sprintf(" (%d non-2xx of %d)", r.non2xx, r.total)
	}
	return s
}

// cost is the run's CPU seconds per 1,000 requests of each process, and
// the service's allocations per request.
func (r wrkResult) cost() string {
	s := "CPU s per 1,000 requests: " + perThousand(r.cpu, r.total)
	if r.allocs > 0 {
		s += fmt.Sprintf("; %.0f allocations per request (service)", r.allocs)
	}
	if r.peakRSS > 0 {
		s += fmt.Sprintf("; peak RSS %.0f MB (service)", float64(r.peakRSS)/(1<<20))
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// wrk runs wrk with a Lua script against url.
func (b *bench) wrk(ctx context.Context, url, script string, conns int, d time.Duration) (wrkResult, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		install := exec.CommandContext(ctx, "sh", "-c", "apt-get install -y --no-install-recommends wrk || (apt-get update && apt-get install -y --no-install-recommends wrk)")
		install.Stdout, install.Stderr = os.Stderr, os.Stderr
		if err := install.Run(); err != nil {
			return wrkResult{}, fmt.Errorf("wrk is needed (Debian package wrk): %w", err)
		}
	}
	path := b.dir + "/script.lua"
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return wrkResult{}, err
	}
	// Warm up (connections, caches, the Go runtime) before measuring.
	warm := min(d/2, 5*time.Second)
	if out, err := exec.CommandContext(ctx, "wrk", "-t2", "-c"+strconv.Itoa(conns), "-d"+warm.String(), "-s", path, url).CombinedOutput(); err != nil {
		return wrkResult{}, fmt.Errorf("wrk warm-up: %v: %s", err, out)
	}
	var wait func()
	if b.profileAs != "" {
		wait = b.prof.during(ctx, b.profileAs, d)
		b.profileAs = ""
	}
	service := url == b.baseURL
	peak := service && b.server != nil && b.server.Process != nil && resetPeakRSS(b.server.Process.Pid)
	mallocs0 := b.counter("go_memstats_mallocs_total", service)
	procs0 := processTimes()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, "wrk", "-t2", "-c"+strconv.Itoa(conns), "-d"+d.String(), "--latency", "-s", path, url)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	out := buf.Bytes()
	procs1 := processTimes()
	mallocs1 := b.counter("go_memstats_mallocs_total", service)
	var rss int64
	if peak {
		rss = peakRSS(b.server.Process.Pid)
	}
	if wait != nil {
		wait()
	}
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	r, err := parseWrk(string(out))
	if err != nil {
		return r, err
	}
	r.cpu = cpuSpentBy(procs0, procs1, b.loadProcess())
	// wrk has ended when procs1 is taken: its CPU comes from its exit status.
	r.cpu = append(r.cpu, cpuShare{"wrk", cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()})
	if r.total > 0 && service {
		r.allocs = (mallocs1 - mallocs0) / float64(r.total)
	}
	r.peakRSS = rss
	return r, nil
}

// counter reads one counter of the service under test's metrics (0 when
// read is false or it cannot be read).
func (b *bench) counter(name string, read bool) float64 {
	if !read {
		return 0
	}
	resp, err := http.Get("http://" + benchMetricsAddr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

var (
	wrkRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkPct    = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkTotal  = regexp.MustCompile(`(\d+) requests in`)
)

func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	m := wrkRPS.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("wrk output without Requests/sec:\n%s", out)
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	for _, p := range wrkPct.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(p[2], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[p[3]]
		d := time.Duration(v * float64(unit))
		if p[1] == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		r.non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := wrkTotal.FindStringSubmatch(out); m != nil {
		r.total, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return r, nil
}

// luaStrings renders a Lua array of strings.
func luaStrings(ss []string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, s := range ss {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.Quote(s))
	}
	b.WriteString("}")
	return b.String()
}

// startCeiling starts the trivial chi server as a separate process.
func (b *bench) startCeiling(ctx context.Context, addr string) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "ceiling-server", addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b.ceiling = cmd
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); b.ceiling = nil }
	if err := waitHTTP(ctx, "http://"+addr+"/ceiling"); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// benchMetricsAddr is where the service under test serves its metrics
// (-metrics-addr).
var benchMetricsAddr = localAddr(18083)

// metric returns the histogram buckets of a Prometheus metric from /metrics.
func (b *bench) histogram(name string) (map[float64]float64, error) {
	resp, err := http.Get("http://" + benchMetricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[float64]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	re := regexp.MustCompile(`^` + name + `_bucket\{le="([^"]+)"\} ([0-9.e+]+)$`)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		le, _ := strconv.ParseFloat(m[1], 64)
		if m[1] == "+Inf" {
			le = 1e18
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[le] = v
	}
	return out, sc.Err()
}

// sumCount returns a Prometheus histogram's _sum and _count from /metrics
// (zero when the service has not observed it yet).
func (b *bench) sumCount(name string) (sum, count float64, err error) {
	return sumCountAt(benchMetricsAddr, name, "")
}

// sumCountAt is sumCount of the series with labels (as /metrics writes
// them, `{group="x"}`; "" for none) of the process serving metrics at addr.
func sumCountAt(addr, name, labels string) (sum, count float64, err error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+"_sum"+labels+" "); ok {
			sum, _ = strconv.ParseFloat(v, 64)
		} else if v, ok := strings.CutPrefix(sc.Text(), name+"_count"+labels+" "); ok {
			count, _ = strconv.ParseFloat(v, 64)
		}
	}
	return sum, count, sc.Err()
}

// medianAndP99 sorts d, which must not be empty, and returns its elements
// at n/2 and n·99/100 (rounded down): its median and 99th percentile.
func medianAndP99(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

// quantile estimates the q-quantile of the observations between two
// snapshots of a cumulative histogram (linear within the bucket).
func quantile(before, after map[float64]float64, q float64) (float64, int) {
	type bucket struct{ le, n float64 }
	var bs []bucket
	for le, n := range after {
		bs = append(bs, bucket{le, n - before[le]})
	}
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].le < bs[j-1].le; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return 0, 0
	}
	total := bs[len(bs)-1].n
	rank := q * total
	prevLE, prevN := 0.0, 0.0
	for _, bk := range bs {
		if bk.n >= rank {
			if bk.le >= 1e18 {
				return prevLE, int(total)
			}
			frac := 0.0
			if bk.n > prevN {
				frac = (rank - prevN) / (bk.n - prevN)
			}
			return prevLE + frac*(bk.le-prevLE), int(total)
		}
		prevLE, prevN = bk.le, bk.n
	}
	return prevLE, int(total)
}

func newKey(ctx context.Context, b *bench, projectID string) (string, error) {
	k, err := apikey.Create(ctx, b.pool, projectID, []string{"orders:write", "invoices:read"}, 0, "bench", apikey.Prefix)
	return k.Key, err
}

// localAddr is a loopback address of the bench's own listeners: port moved
// by the local stack's O2I_DEV_PORT_OFFSET, as the stack's ports are, so
// that benches of two stacks on one machine do not take each other's ports.
func localAddr(port int) string {
	off, _ := strconv.Atoi(os.Getenv("O2I_DEV_PORT_OFFSET"))
	return "127.0.0.1:" + strconv.Itoa(port+off)
}
