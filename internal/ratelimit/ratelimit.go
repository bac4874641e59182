// Package ratelimit enforces a per-key token bucket whose state lives in
// Redis, so every API replica shares one limit. To keep Redis off the hot
// path, a replica leases tokens in small chunks (at most 5% of the burst)
// and serves requests from its lease; a lease is dropped after LeaseTTL.
// It imports internal/httpx and go-redis.
package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/internal/httpx"
)

// LeaseTTL is how long leased tokens stay usable by one replica.
const LeaseTTL = time.Second

// take refills the bucket at rate tokens/s up to burst, using Redis' clock,
// and grants up to want tokens. It returns the grant and, when nothing was
// granted, the milliseconds until one token is available.
var take = redis.NewScript(`
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
if tokens == nil then tokens = burst; ts = now end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
  ts = now
end
local grant = math.min(want, math.floor(tokens))
tokens = tokens - grant
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', ts)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
local wait = 0
if grant == 0 then wait = math.ceil((1 - tokens) * 1000 / rate) end
return {grant, wait}
`)

// Limiter implements httpx.Limiter.
type Limiter struct {
	rdb *redis.Client
	mu  sync.Mutex
	by  map[string]*lease
	now func() time.Time
}

type lease struct {
	mu           sync.Mutex
	tokens       int
	leasedAt     time.Time
	blockedUntil time.Time
}

// New returns a limiter backed by rdb.
func New(rdb *redis.Client) *Limiter {
	return &Limiter{rdb: rdb, by: map[string]*lease{}, now: time.Now}
}

// Allow implements httpx.Limiter.
func (l *Limiter) Allow(ctx context.Context, p httpx.Principal) (bool, time.Duration, error) {
	rate, burst := p.RateLimit.Rate, p.RateLimit.Burst
	if rate <= 0 || burst <= 0 {
		return true, 0, nil
	}
	l.mu.Lock()
	ls := l.by[p.KeyID]
	if ls == nil {
		ls = &lease{}
		l.by[p.KeyID] = ls
	}
	l.mu.Unlock()

	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := l.now()
	if ls.tokens > 0 && now.Sub(ls.leasedAt) < LeaseTTL {
		ls.tokens--
		return true, 0, nil
	}
	if now.Before(ls.blockedUntil) {
		return false, ls.blockedUntil.Sub(now), nil
	}
	chunk := min(100, burst/20)
	if chunk < 1 {
		chunk = 1
	}
	res, err := take.Run(ctx, l.rdb, []string{"o2i:rl:" + p.KeyID}, rate, burst, chunk).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	grant, waitMS := int(res[0]), res[1]
	if grant == 0 {
		wait := time.Duration(waitMS) * time.Millisecond
		ls.blockedUntil = now.Add(wait)
		ls.tokens = 0
		return false, wait, nil
	}
	ls.tokens = grant - 1
	ls.leasedAt = now
	return true, 0, nil
}
