package invoicing

import (
	"testing"
	"time"
)

func TestClaimCovers(t *testing.T) {
	const s = time.Second
	for _, c := range []struct {
		name                            string
		elapsed, lease, session, margin time.Duration
		want                            bool
	}{
		{"composed quickly: the lease covers the session and the margin", 50 * time.Millisecond, 120 * s, 60 * s, 30 * s, true},
		{"composing took all of its time: exactly covered", 30 * s, 120 * s, 60 * s, 30 * s, true},
		{"composing took longer than allowed for: renew", 30*s + time.Millisecond, 120 * s, 60 * s, 30 * s, false},
		{"the lease has run out: renew (and find it lost or taken)", 121 * s, 120 * s, 60 * s, 30 * s, false},
		{"a lease shorter than the session never covers it", 0, 50 * s, 60 * s, 0, false},
		{"a clock that went back covers nothing", -time.Millisecond, 120 * s, 60 * s, 30 * s, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := claimCovers(c.elapsed, c.lease, c.session, c.margin); got != c.want {
				t.Errorf("claimCovers(%s, %s, %s, %s) = %v, want %v", c.elapsed, c.lease, c.session, c.margin, got, c.want)
			}
		})
	}
}

// TestMailerReserve: archiving hands a mailer at most as many deliveries as
// its queue has places, a place comes back when a delivery is taken or the
// reservation released, and a mailer limited to one project takes that
// project's only.
func TestMailerReserve(t *testing.T) {
	m := &Mailer{handoff: make(chan dueDelivery, 2)}
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"first place", func() bool { return m.reserve("p") }, true},
		{"second place", func() bool { return m.reserve("q") }, true},
		{"no third place", func() bool { return m.reserve("p") }, false},
		{"a released place is free again", func() bool { m.release(); return m.reserve("p") }, true},
		{"a handed-off delivery keeps its place", func() bool { m.handOff(dueDelivery{id: "d1"}); return m.reserve("p") }, false},
		{"taking it frees the place", func() bool { d := m.takeHandedOff(); return d != nil && d.id == "d1" && m.reserve("p") }, true},
		{"nothing more handed off", func() bool { return m.takeHandedOff() == nil }, true},
		{"another project's, for a mailer of one project", func() bool { m.release(); m.ProjectID = "p"; return m.reserve("q") }, false},
		{"its own project's", func() bool { return m.reserve("p") }, true},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: %v, want %v", s.name, got, s.want)
		}
	}
}
