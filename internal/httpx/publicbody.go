package httpx

import (
	"bytes"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/o2i-service/o2i/internal/apperr"
)

// The limits of the public routes with a body, before their sender is
// known. Anyone may call them, and a body can be sent one byte at a time;
// read under the server's whole-request timeout, a few hundred such
// requests would hold every public place for that long.
const (
	// DefaultPublicBodyTimeout bounds how long a public body may take to
	// arrive after the headers: the payment provider sends a few KiB at
	// once.
	DefaultPublicBodyTimeout = 5 * time.Second
	// DefaultMaxPublicBodies is how many public bodies are read at once,
	// all addresses together (at most 64 KiB each for the webhook).
	DefaultMaxPublicBodies = 1024
	// DefaultMaxPublicPerAddr is how many public requests with a body one
	// client address may have in flight at once.
	DefaultMaxPublicPerAddr = 16
)

// bodyGate reads the bodies of public requests before they take a place
// among the requests in flight: with a deadline of their own, a bounded
// number at once, and a bounded number per client address.
type bodyGate struct {
	timeout time.Duration
	reading chan struct{}
	perAddr int

	mu    sync.Mutex
	addrs map[string]int // requests in flight per client address; absent: none
}

func newBodyGate(total, perAddr int, timeout time.Duration) *bodyGate {
	if total <= 0 {
		total = DefaultMaxPublicBodies
	}
	if perAddr <= 0 {
		perAddr = DefaultMaxPublicPerAddr
	}
	if timeout <= 0 {
		timeout = DefaultPublicBodyTimeout
	}
	return &bodyGate{timeout: timeout, reading: make(chan struct{}, total), perAddr: perAddr, addrs: map[string]int{}}
}

// read counts the request against its client address, then reads its body
// (at most limit bytes, 0: MaxBodyBytes) within the gate's timeout and
// puts it back as r.Body. done ends the request's count; call it when the
// request is answered. The errors: 429 rate_limited when the address has
// its requests in flight already, 503 unavailable when the gate reads its
// most bodies, 413 payload_too_large, 408 request_timeout, 400 invalid_json
// when the body breaks off. On an error nothing is left to release.
func (g *bodyGate) read(w http.ResponseWriter, r *http.Request, limit int64) (done func(), err error) {
	if limit <= 0 {
		limit = MaxBodyBytes
	}
	addr := addrKey(r)
	if !g.enter(addr) {
		return nil, &apperr.Error{Kind: apperr.RateLimited, Code: "rate_limited",
			Message: "too many requests from this address at once, retry later", RetryAfter: time.Second}
	}
	defer func() {
		if err != nil {
			g.leave(addr)
		}
	}()
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	select {
	case g.reading <- struct{}{}:
		defer func() { <-g.reading }()
	default:
		return nil, &apperr.Error{Kind: apperr.Unavailable, Code: "unavailable",
			Message: "too many requests in flight, retry later", RetryAfter: time.Second}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.timeout)) // not supported (a test recorder): no deadline of its own
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, errReading(err)
	}
	if int64(len(body)) > limit {
		return nil, errTooLarge(limit)
	}
	// The body is in; the connection's read deadline would otherwise end
	// the request while it is handled (the server watches the idle
	// connection for the client going away). The next request on the
	// connection gets deadlines of its own.
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(body))
	return func() { g.leave(addr) }, nil
}

func (g *bodyGate) enter(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addrs[addr] >= g.perAddr {
		return false
	}
	g.addrs[addr]++
	return true
}

func (g *bodyGate) leave(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addrs[addr] <= 1 {
		delete(g.addrs, addr) // the map holds only addresses with requests in flight
		return
	}
	g.addrs[addr]--
}

// addrKey is the client address a request counts against: the TCP peer's,
// an IPv6 address by its /64 (one network hands its hosts the whole /64).
func addrKey(r *http.Request) string {
	host := clientAddr(r)
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return host
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return host
	}
	return p.String()
}
