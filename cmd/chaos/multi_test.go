package main

import (
	"strings"
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
