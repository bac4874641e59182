package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestFleetLayout: two processes of every role, the APIs on -addr and the
// port after it, every metrics listener on a port of its own from -addr's
// port + 10; one SIGKILL per role; -processes 1 is one process with all
// roles, killed three times.
func TestFleetLayout(t *testing.T) {
	t.Parallel()
	f, err := newFleet(config{processes: 2, addr: "127.0.0.1:19190", o2i: "bin/o2i", serviceLog: ".dev/chaos-service.log"})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.members) != 8 || strings.Join(f.apis, " ") != "127.0.0.1:19190 127.0.0.1:19191" {
		t.Fatalf("%d members, APIs %v", len(f.members), f.apis)
	}
	ports := map[string]string{}
	roles := map[string]int{}
	for _, m := range f.members {
		roles[m.role]++
		for _, a := range []string{m.metrics} {
			if other, ok := ports[a]; ok {
				t.Errorf("%s and %s both listen on %s", other, m.name, a)
			}
			ports[a] = m.name
		}
		if m.role == "api" {
			ports[m.svc.addr] = m.name
		}
		if m.svc.roles != m.role || m.svc.logPath != ".dev/chaos-service-"+m.name+".log" {
			t.Errorf("%s: roles %q, log %q", m.name, m.svc.roles, m.svc.logPath)
		}
	}
	if len(ports) != 10 {
		t.Errorf("%d distinct listeners, want 10: %v", len(ports), ports)
	}
	for _, r := range allRoles {
		if roles[r] != 2 {
			t.Errorf("role %s: %d processes", r, roles[r])
		}
	}
	killed := map[string]bool{}
	for _, k := range f.killFaults() {
		name, _, _ := strings.Cut(k.name, " ")
		role, _, _ := strings.Cut(name, "-")
		if killed[role] {
			t.Errorf("role %s killed twice", role)
		}
		killed[role] = true
	}
	if len(killed) != len(allRoles) {
		t.Errorf("killed roles %v, want one of each", killed)
	}

	single, err := newFleet(config{processes: 1, addr: "127.0.0.1:19190"})
	if err != nil {
		t.Fatal(err)
	}
	if len(single.members) != 1 || single.members[0].svc.roles != "" || len(single.killFaults()) != 3 {
		t.Errorf("single-process mode: %d members, roles %q, %d kills", len(single.members), single.members[0].svc.roles, len(single.killFaults()))
	}
}

// TestClientsRetryAndSpread: the clients retry a 503 with the same
// Idempotency-Key and body until acknowledged, and spread over the API
// processes.
func TestClientsRetryAndSpread(t *testing.T) {
	t.Parallel()
	type seen struct {
		tries int
		body  string
	}
	newServer := func() (*httptest.Server, map[string]*seen, *sync.Mutex) {
		var mu sync.Mutex
		keys := map[string]*seen{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			k := r.Header.Get("Idempotency-Key")
			mu.Lock()
			s := keys[k]
			if s == nil {
				s = &seen{body: string(body)}
				keys[k] = s
			}
			s.tries++
			first, same := s.tries == 1, s.body == string(body)
			mu.Unlock()
			switch {
			case !same:
				w.WriteHeader(422)
			case first:
				w.WriteHeader(503)
			default:
				w.WriteHeader(201)
			}
		}))
		t.Cleanup(srv.Close)
		return srv, keys, &mu
	}
	a, aKeys, aMu := newServer()
	b, bKeys, bMu := newServer()
	apis := []*apiClient{{base: a.URL, key: "k", http: a.Client()}, {base: b.URL, key: "k", http: b.Client()}}
	orders := orderNumbers("12345678-0000", 8)
	var acked atomic.Int64
	res := sendOrdersSpread(context.Background(), apis, orders, config{clients: 4, rate: 1000}, &acked)
	if len(res.acked) != len(orders) || res.gaveUp != 0 || res.retries != int64(len(orders)) || acked.Load() != int64(len(orders)) {
		t.Fatalf("acked %d, gave up %d, retries %d, want %d acknowledged after one retry each", len(res.acked), res.gaveUp, res.retries, len(orders))
	}
	aMu.Lock()
	bMu.Lock()
	defer aMu.Unlock()
	defer bMu.Unlock()
	if len(aKeys) == 0 || len(bKeys) == 0 || len(aKeys)+len(bKeys) != len(orders) {
		t.Errorf("orders at the first process %d, at the second %d, want both some and %d together", len(aKeys), len(bKeys), len(orders))
	}
	// One process only: sendOrders.
	c, cKeys, cMu := newServer()
	res = sendOrders(context.Background(), &apiClient{base: c.URL, key: "k", http: c.Client()}, orders[:2], config{clients: 2, rate: 1000}, &acked)
	cMu.Lock()
	defer cMu.Unlock()
	if len(res.acked) != 2 || len(cKeys) != 2 {
		t.Errorf("single process: acked %d, keys %d", len(res.acked), len(cKeys))
	}
}

// TestRetryable: the answers the error table says to try again later are
// retried, the others end the order's tries.
func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		status int
		code   string
		want   bool
	}{
		{408, "request_timeout", true},
		{409, "idempotency_in_progress", true},
		{409, "order_cancelled", false},
		{422, "validation_failed", false},
		{422, "idempotency_key_reused", false},
		{401, "unauthorized", false},
		{429, "rate_limited", true},
		{500, "", true},
		{503, "unavailable", true},
	} {
		if got := retryable(c.status, c.code); got != c.want {
			t.Errorf("retryable(%d, %q) = %v, want %v", c.status, c.code, got, c.want)
		}
	}
}
