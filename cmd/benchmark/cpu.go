package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc (USER_HZ).
const clockTick = 10 * time.Millisecond

// machineBusy is the CPU time all cores have spent neither idle nor
// waiting for I/O so far, from /proc/stat; zero where there is none.
func machineBusy() time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return time.Duration(busy) * clockTick
}

// processTimes is every process's command name and CPU time so far, by
// pid, from /proc; empty where there is none.
func processTimes() map[int]processTime {
	out := map[int]processTime{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended meanwhile
		}
		open, close := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw[:max(open, 0)])))
		if open < 0 || close < open || err != nil {
			continue
		}
		f := strings.Fields(string(raw[close+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ppid, _ := strconv.Atoi(f[1])
		out[pid] = processTime{comm: string(raw[open+1 : close]), ppid: ppid, cpu: time.Duration(u+s) * clockTick}
	}
	return out
}

type processTime struct {
	comm string
	ppid int
	cpu  time.Duration
}

// cpuShare is the CPU time one group of processes spent.
type cpuShare struct {
	name string
	cpu  time.Duration
}

// cpuSpent is the CPU time spent between two processTimes snapshots, summed
// by group (named by group from pid and command; "" leaves a process out),
// largest first. A process started in between counts whole; one that ended
// in between is lost, so the second snapshot is taken before the processes
// under test stop.
func cpuSpent(before, after map[int]processTime, group func(pid int, comm string) string) []cpuShare {
	return cpuSpentBy(before, after, func(pid int, p processTime) string { return group(pid, p.comm) })
}

// cpuSpentBy is cpuSpent with a grouping that also sees the parent pid.
func cpuSpentBy(before, after map[int]processTime, group func(pid int, p processTime) string) []cpuShare {
	sums := map[string]time.Duration{}
	for pid, a := range after {
		name := group(pid, a)
		if name == "" {
			continue
		}
		d := a.cpu
		if b, ok := before[pid]; ok && b.comm == a.comm {
			d -= b.cpu
		}
		sums[name] += d
	}
	out := make([]cpuShare, 0, len(sums))
	for name, d := range sums {
		if d > 0 {
			out = append(out, cpuShare{name, d})
		}
	}
	slices.SortFunc(out, func(a, b cpuShare) int { return int(b.cpu - a.cpu) })
	return out
}

// perItem renders shares as CPU milliseconds per item, n items.
func perItem(shares []cpuShare, n int) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %.1f", s.name, float64(s.cpu.Microseconds())/1000/float64(n))
	}
	return strings.Join(parts, ", ")
}

// cpuPerCall is the milliseconds of CPU shares spent together per call, n
// calls.
func cpuPerCall(shares []cpuShare, n float64) float64 {
	var sum time.Duration
	for _, s := range shares {
		sum += s.cpu
	}
	return float64(sum.Microseconds()) / 1000 / max(n, 1)
}

// running reports whether the process runs (not ended, not a zombie), from
// /proc; where there is no /proc it says yes.
func running(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		_, noProc := os.Stat("/proc/self/stat")
		return noProc != nil
	}
	i := bytes.LastIndexByte(raw, ')')
	f := strings.Fields(string(raw[i+1:]))
	return i >= 0 && len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// loadAverage is "; load average L" with the machine's one-minute load
// average from /proc/loadavg (how many processes wanted its cores while a
// figure was measured), or "" where there is none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return ""
	}
	return "; load average " + f[0]
}

// pidFile is the pid in the first line of a pid file, 0 without one.
func pidFile(file string) int {
	raw, _ := os.ReadFile(file)
	line, _, _ := strings.Cut(string(raw), "\n")
	n, _ := strconv.Atoi(strings.TrimSpace(line))
	return n
}

// loadProcess groups the processes a measured HTTP load runs on, of this
// stack only (the machine may run others): the service under test, its
// PostgreSQL (postmaster and backends), its Redis and the ceiling server.
func (b *bench) loadProcess() func(pid int, p processTime) string {
	postmaster, redis := pidFile(".dev/pg/postmaster.pid"), pidFile(".dev/redis/redis.pid")
	return func(pid int, p processTime) string {
		switch {
		case b.server != nil && b.server.Process != nil && pid == b.server.Process.Pid:
			return "service"
		case b.ceiling != nil && b.ceiling.Process != nil && pid == b.ceiling.Process.Pid:
			return "handler"
		case postmaster != 0 && (pid == postmaster || p.ppid == postmaster):
			return "PostgreSQL"
		case redis != 0 && pid == redis:
			return "Redis"
		}
		return ""
	}
}

// perThousand renders shares as CPU seconds per 1,000 requests (the same
// figure as milliseconds per request), n requests.
func perThousand(shares []cpuShare, n int64) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %.3f", s.name, s.cpu.Seconds()*1000/float64(max(n, 1)))
	}
	return strings.Join(parts, ", ")
}
