package httpx

import (
	"net/http"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// ClientLimiter limits failed authentications per client address, before
// the key is looked up: requests with made-up keys cost one database query
// each, so one address may fail only Rate times a second (Burst at once)
// before it is answered 429 without a look-up. Keys that authenticate are
// never counted. The addresses are kept in a bounded LRU, so a flood from
// many addresses costs bounded memory.
type ClientLimiter struct {
	rate    rate.Limit
	burst   int
	clients *lru.Cache[string, *rate.Limiter]
	now     func() time.Time
}

// NewClientLimiter allows perSecond failed authentications per address with
// bursts of burst, remembering at most clients addresses.
func NewClientLimiter(perSecond float64, burst, clients int) *ClientLimiter {
	c, err := lru.New[string, *rate.Limiter](clients)
	if err != nil {
		panic(err) // only for a size <= 0, a programming error
	}
	return &ClientLimiter{rate: rate.Limit(perSecond), burst: burst, clients: c, now: time.Now}
}

// Blocked reports whether addr has used up its failed authentications, and
// how long it should wait.
func (l *ClientLimiter) Blocked(addr string) (time.Duration, bool) {
	lim, ok := l.clients.Get(addr)
	if !ok {
		return 0, false
	}
	now := l.now()
	if lim.TokensAt(now) >= 1 {
		return 0, false
	}
	wait := time.Duration((1 - lim.TokensAt(now)) / float64(l.rate) * float64(time.Second))
	return max(wait, time.Second), true
}

// Failed counts one failed authentication of addr.
func (l *ClientLimiter) Failed(addr string) {
	lim, ok := l.clients.Get(addr)
	if !ok {
		lim = rate.NewLimiter(l.rate, l.burst)
		if prev, found, _ := l.clients.PeekOrAdd(addr, lim); found {
			lim = prev
		}
	}
	lim.AllowN(l.now(), 1)
}

// clientAddr is the address the request came from: the TCP peer, or,
// behind a trusted proxy, the client it forwards for (clientaddr.go).
func clientAddr(r *http.Request) string {
	if a, ok := r.Context().Value(clientAddrKey{}).(string); ok {
		return a
	}
	return peerHost(r.RemoteAddr)
}
