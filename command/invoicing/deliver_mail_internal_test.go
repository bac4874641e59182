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
