package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakConfig is the soak stage's load: rate orders/s for warmup and then
// d, with RSS samples at the start of d, its middle and its end.
type soakConfig struct {
	rate   int
	d      time.Duration
	warmup time.Duration
}

// soak sends the write load's realistic orders at a steady rate (the order
// target) for cfg.d and prints the resident set size of each process of
// the stack at the start, the middle and the end (for the default ten
// minutes: 0, 5 and 10 minutes). Flat means no leak: a process whose RSS
// grows from the middle to the end is named in the row.
func (b *bench) soak(ctx context.Context, cfg soakConfig) ([]result, error) {
	if err := b.serve(ctx); err != nil {
		return nil, err
	}
	_, keys, err := b.newProject(ctx, "bench soak "+time.Now().Format(time.RFC3339), 16)
	if err != nil {
		return nil, err
	}
	if err := b.probeProjection(ctx, keys[0]); err != nil {
		return nil, err
	}
	defer b.drainOutbox(ctx)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}, Timeout: 30 * time.Second}
	prefix := fmt.Sprintf("S-%d-", time.Now().Unix())
	var sent, accepted, failed atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Pacing: one token per order at the rate; 128 senders take them. A
	// machine that cannot keep the rate drops the tokens it is late for,
	// and the row says what was reached.
	tokens := make(chan int64, 128)
	go func() {
		defer close(tokens)
		start := time.Now()
		var n int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			due := int64(time.Since(start).Seconds() * float64(cfg.rate))
			for ; n < due; n++ {
				select {
				case tokens <- n:
				default: // every sender busy: this order is not sent
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for range 128 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tokens {
				no := prefix + strconv.FormatInt(i, 10)
				sent.Add(1)
				if err := b.postBody(ctx, client, keys[i%int64(len(keys))], no, orderJSON(no, i)); err != nil {
					if ctx.Err() == nil && failed.Add(1) == 1 {
						firstErr.Store(err)
					}
					continue
				}
				accepted.Add(1)
			}
		}()
	}
	names := map[string]bool{}
	var samples []map[string]int64
	var redisKeys []int64 // Redis's keys at each sample: what it holds grows with the orders
	// The service's heap goal at each sample: the heap live at the last
	// collection times 1 + GOGC/100, which a leak raises; its resident
	// memory also holds the collector's headroom, which follows the
	// highest goal since the start and is returned slowly.
	var heapGoal []float64
	// The samples begin after the warm-up: a process just started holds
	// no heap, caches or buffers yet, and any would "grow" from there.
	at := []time.Duration{0, cfg.d / 2, cfg.d}
	start := time.Now().Add(cfg.warmup)
	var acceptedAtStart int64
	for i, t := range at {
		if sleep(ctx, time.Until(start.Add(t))); ctx.Err() != nil {
			break
		}
		if i == 0 {
			acceptedAtStart = accepted.Load()
		}
		s := b.rssByProcess()
		for k := range s {
			names[k] = true
		}
		samples = append(samples, s)
		keys, err := b.rdb.DBSize(ctx).Result()
		if err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("soak: Redis keys: %w", err)
		}
		redisKeys = append(redisKeys, keys)
		goal, err := metricSum(benchMetricsAddr, "go_memstats_next_gc_bytes")
		if err != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("soak: the service's heap goal: %w", err)
		}
		heapGoal = append(heapGoal, goal)
		log.Printf("soak: %s: %d orders accepted, RSS %s; Redis keys %d; service heap goal %.0f MB", t.Round(time.Second), accepted.Load(), rssLine(s), keys, goal/(1<<20))
	}
	cancel()
	wg.Wait()
	if len(samples) < len(at) {
		return nil, ctx.Err()
	}
	if f := failed.Load(); f > 0 {
		return nil, fmt.Errorf("soak: %d of %d orders were not accepted, the first: %v", f, sent.Load(), firstErr.Load())
	}
	var parts, grew []string
	order := []string{"service (API, relay, projector)", "PostgreSQL", "Redis", "MinIO", "broker (kfake) and fakes"}
	for _, n := range order {
		if !names[n] {
			continue
		}
		mb := func(i int) string { return fmt.Sprintf("%.0f", float64(samples[i][n])/(1<<20)) }
		parts = append(parts, fmt.Sprintf("%s %s / %s / %s MB", n, mb(0), mb(1), mb(2)))
		// Growth over the second half beyond 10 % (and 8 MB) is not flat.
		// Redis keeps a status view per order (they do not expire): it is
		// judged by its memory per key, which a leak would raise.
		mid, end := samples[1][n], samples[2][n]
		if n == "Redis" {
			perKey := func(i int) int64 { return samples[i][n] / max(redisKeys[i], 1) }
			parts[len(parts)-1] += fmt.Sprintf(" (%d / %d / %d keys, %d / %d bytes per key at the middle and the end)",
				redisKeys[0], redisKeys[1], redisKeys[2], perKey(1), perKey(2))
			mid, end = perKey(1), perKey(2)
			if end > mid+mid/10 {
				grew = append(grew, "Redis per key")
			}
			continue
		}
		if strings.HasPrefix(n, "service") {
			parts[len(parts)-1] += fmt.Sprintf(" (heap goal %.0f / %.0f / %.0f MB)", heapGoal[0]/(1<<20), heapGoal[1]/(1<<20), heapGoal[2]/(1<<20))
		}
		if end > mid+mid/10 && end-mid > 8<<20 {
			grew = append(grew, n)
		}
	}
	verdict := "flat: no process grew more than 10 % from the middle to the end (Redis: per key, as it holds every order's status view)"
	if len(grew) > 0 {
		verdict = "grew from the middle to the end: " + strings.Join(grew, ", ")
	}
	mins := func(d time.Duration) string {
		if d%time.Minute == 0 {
			return fmt.Sprintf("%d", int(d.Minutes()))
		}
		return fmt.Sprintf("%.1f", d.Minutes())
	}
	rate := float64(accepted.Load()-acceptedAtStart) / cfg.d.Seconds()
	return []result{{
		What: fmt.Sprintf("soak: RSS (PSS) of each process at %s, %s and %s minutes of %d orders/s offered (POST /v1/orders, realistic orders, all roles in one process), after %s min of warm-up at that rate",
			mins(0), mins(cfg.d/2), mins(cfg.d), cfg.rate, mins(cfg.warmup)),
		Measured: fmt.Sprintf("%s; %.0f orders/s accepted; %s", strings.Join(parts, "; "), rate, verdict),
		Ceiling:  "-",
		Target:   "flat (no growth)",
	}}, nil
}

// rssByProcess is the resident memory of each part of this stack (the
// processes of one part summed: PostgreSQL's postmaster and backends, each
// by its proportional set size, see pss), from /proc. Only this stack's processes count, found by their pid files under
// .dev/ and the service's own pid: the machine may run other stacks.
func (b *bench) rssByProcess() map[string]int64 {
	pidOf := func(file string) int {
		raw, _ := os.ReadFile(file)
		line, _, _ := strings.Cut(string(raw), "\n")
		n, _ := strconv.Atoi(strings.TrimSpace(line))
		return n
	}
	parts := map[int]string{}
	if b.server != nil && b.server.Process != nil {
		parts[b.server.Process.Pid] = "service (API, relay, projector)"
	}
	postmaster := pidOf(".dev/pg/postmaster.pid")
	parts[postmaster] = "PostgreSQL"
	parts[pidOf(".dev/redis/redis.pid")] = "Redis"
	parts[pidOf(".dev/minio.pid")] = "MinIO"
	for _, f := range []string{".dev/kafka.pid", ".dev/smtp.pid", ".dev/stripe.pid", ".dev/stripe-mock.pid"} {
		parts[pidOf(f)] = "broker (kfake) and fakes"
	}
	delete(parts, 0)
	out := map[string]int64{}
	stats, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended meanwhile
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		var ppid int
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		name, ok := parts[pid]
		if !ok && postmaster != 0 && ppid == postmaster {
			name, ok = "PostgreSQL", true
		}
		if ok {
			out[name] += pss(pid)
		}
	}
	return out
}

// pss is a process's proportional set size in bytes: its resident memory
// with each page shared among n processes counted 1/n, so that the
// backends of PostgreSQL, which all map its shared buffers, sum to what
// they hold together.
func pss(pid int) int64 { return procKB(pid, "smaps_rollup", "Pss:") }

// procKB is the field (its name with the colon) of pid's /proc file, a
// size in kB, in bytes; 0 when it cannot be read.
func procKB(pid int, file, field string) int64 {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// resetPeakRSS starts a new peak of pid's resident memory (VmHWM) from
// its current size; false when the kernel does not allow it.
func resetPeakRSS(pid int) bool {
	return os.WriteFile(filepath.Join("/proc", strconv.Itoa(pid), "clear_refs"), []byte("5"), 0) == nil
}

// peakRSS is the highest resident memory of pid (VmHWM) in bytes since it
// started or since resetPeakRSS; 0 when it cannot be read.
func peakRSS(pid int) int64 { return procKB(pid, "status", "VmHWM:") }

func rssLine(s map[string]int64) string {
	var parts []string
	for k, v := range s {
		parts = append(parts, fmt.Sprintf("%s %.0f MB", k, float64(v)/(1<<20)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
