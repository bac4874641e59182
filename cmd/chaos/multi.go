package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The service under test runs as a fleet of processes against the same
// stack. In the multi-process mode (the default, -processes 2) every role
// has two processes of its own, as behind a load balancer and in one
// Kafka consumer group each: api-1 and api-2 (each on its own address, the
// clients spread over both), relay-1/2, projector-1/2 and invoicer-1/2.
// One member of each role is killed with SIGKILL during the load and
// started again. With -processes 1 one process runs all roles and is
// killed three times, the single-process mode.

// member is one process of the fleet.
type member struct {
	name, role string
	metrics    string // its metrics listener, host:port
	svc        *service
	kills      atomic.Int64
}

// fleet is the service under test.
type fleet struct {
	members []*member
	apis    []string // the API addresses
	multi   bool
}

// processRecord is one process of the fleet in the report.
type processRecord struct {
	Name    string `json:"name"`
	Roles   string `json:"roles"`
	Addr    string `json:"apiAddr,omitempty"`
	Metrics string `json:"metricsAddr,omitempty"`
	Starts  int64  `json:"starts"`
	Kills   int64  `json:"sigkills"`
	Exits   int64  `json:"exitsOnItsOwn"`
}

// Pool sizes per role in the multi-process mode: eight processes share
// the local PostgreSQL's 200 connections.
var rolePool = map[string]string{"api": "16", "relay": "4", "projector": "8", "invoicer": "24"}

// newFleet lays the processes out: the APIs listen on c.addr and the ports
// after it, the metrics listeners from c.addr's port + 10 on (so that one
// -addr moves every listener of a run).
func newFleet(c config) (*fleet, error) {
	host, portStr, err := net.SplitHostPort(c.addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %w", c.addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %w", c.addr, err)
	}
	at := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	f := &fleet{multi: c.processes > 1}
	if !f.multi {
		f.apis = []string{c.addr}
		f.members = []*member{{name: "service", role: strings.Join(allRoles, ","),
			svc: &service{bin: c.o2i, addr: c.addr, logPath: c.serviceLog}}}
		return f, nil
	}
	n := 0
	for _, role := range allRoles {
		for i := 1; i <= c.processes; i++ {
			m := &member{name: fmt.Sprintf("%s-%d", role, i), role: role, metrics: at(port + 10 + n)}
			addr := at(port + 9) // a process without the API role never listens on it
			if role == "api" {
				addr = at(port + i - 1)
				f.apis = append(f.apis, addr)
			}
			m.svc = &service{bin: c.o2i, addr: addr, logPath: memberLog(c.serviceLog, m.name), roles: role,
				env: []string{"O2I_METRICS_ADDR=" + m.metrics, "O2I_DB_MAX_CONNS=" + rolePool[role]}}
			f.members = append(f.members, m)
			n++
		}
	}
	return f, nil
}

var allRoles = []string{"api", "relay", "projector", "invoicer"}

// memberLog is the log file of one member: the service log's name with
// the member's before the extension.
func memberLog(path, name string) string {
	if i := strings.LastIndexByte(path, '.'); i > strings.LastIndexByte(path, '/') {
		return path[:i] + "-" + name + path[i:]
	}
	return path + "-" + name
}

// supervise runs every member until ctx ends.
func (f *fleet) supervise(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range f.members {
		wg.Add(1)
		go func() { defer wg.Done(); m.svc.supervise(ctx) }()
	}
	wg.Wait()
}

// waitUp waits until every API is healthy and every other member serves
// its metrics (it has connected to the stack).
func (f *fleet) waitUp(ctx context.Context, apis []*apiClient, limit time.Duration) error {
	for i, a := range apis {
		if err := a.waitHealthy(ctx, limit); err != nil {
			return fmt.Errorf("API %s: %w", f.apis[i], err)
		}
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	for _, m := range f.members {
		if m.metrics == "" || m.role == "api" {
			continue
		}
		for {
			resp, err := hc.Get("http://" + m.metrics + "/metrics")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("%s: no metrics on %s after %s (%v)", m.name, m.metrics, limit, err)
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
	return nil
}

// killFaults are the SIGKILLs of the run. Multi-process: one member of
// each role, at spread times between the stack's faults (the supervisor
// starts it again at once). Single-process: the one process, three times.
func (f *fleet) killFaults() []fault {
	kill := func(m *member) func(context.Context) error {
		return func(context.Context) error {
			m.kills.Add(1)
			return m.svc.kill()
		}
	}
	if !f.multi {
		m := f.members[0]
		return []fault{
			{"service SIGKILL 1", 0.10, kill(m)},
			{"service SIGKILL 2", 0.30, kill(m)},
			{"service SIGKILL 3", 0.50, kill(m)},
		}
	}
	shares := map[string]float64{"api-1": 0.10, "relay-2": 0.25, "invoicer-1": 0.30, "projector-2": 0.50}
	var out []fault
	for _, m := range f.members {
		if s, ok := shares[m.name]; ok {
			out = append(out, fault{fmt.Sprintf("%s SIGKILL, restarted", m.name), s, kill(m)})
		}
	}
	return out
}

// records are the fleet's figures for the report.
func (f *fleet) records() []processRecord {
	var out []processRecord
	for _, m := range f.members {
		r := processRecord{Name: m.name, Roles: m.role, Metrics: m.metrics, Starts: m.svc.starts.Load(), Kills: m.kills.Load(), Exits: m.svc.exits.Load()}
		if strings.Contains(m.role, "api") {
			r.Addr = m.svc.addr
		}
		out = append(out, r)
	}
	return out
}

// sendOrdersSpread is sendOrders with the clients spread over several API
// processes: client i sends to apis[i % len(apis)].
func sendOrdersSpread(ctx context.Context, apis []*apiClient, orders []string, c config, acked *atomic.Int64) loadResult {
	jobs := make(chan string)
	var mu sync.Mutex
	var res loadResult
	var retries atomic.Int64
	var wg sync.WaitGroup
	for i := range c.clients {
		api := apis[i%len(apis)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for orderNo := range jobs {
				n, ok := api.postUntilAcknowledged(ctx, orderNo)
				retries.Add(int64(n))
				mu.Lock()
				if ok {
					res.acked = append(res.acked, orderNo)
					acked.Add(1)
				} else {
					res.gaveUp++
				}
				mu.Unlock()
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(max(1, c.rate)))
	defer tick.Stop()
	for _, o := range orders {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
		jobs <- o
	}
	close(jobs)
	wg.Wait()
	res.retries = retries.Load()
	return res
}

// mode names the fleet for the report.
func (f *fleet) mode() string {
	if !f.multi {
		return "single process, all roles"
	}
	return fmt.Sprintf("multi-process, %d processes per role", len(f.members)/len(allRoles))
}
