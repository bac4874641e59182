package query

import (
	"context"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/internal/readmodel"
)

// nearCache keeps recently served order status records in the API process,
// so that polling clients cost no Redis round trip. Projectors announce every
// rewrite on readmodel.ChangesChannel and the cache drops the records named
// there: a record is served from memory only until it changes (plus the
// announcement's delivery time, typically well under a millisecond). The
// cache works only while subscribed; when the subscription breaks it is
// emptied and switched off until it is back. Entries also expire after
// nearTTL, a safety net for anything else.
type nearCache struct {
	shards  [32]nearShard
	seed    maphash.Seed
	perMax  int
	ttl     time.Duration
	enabled atomic.Bool
	now     func() time.Time
}

// Near-cache sizes: at most nearMax records, each for at most nearTTL.
const (
	nearMax = 256 << 10
	nearTTL = time.Minute
	// droppedFor is how long an announced revision is remembered, so that a
	// Redis read that raced with the announcement is not cached.
	droppedFor = 10 * time.Second
)

type nearShard struct {
	mu      sync.Mutex
	m       map[nearID]nearEntry
	dropped map[nearID]droppedRev
	ops     int
	// blindUntil: after the shard forgot the revisions it was told of
	// (dropped was full), it caches nothing until then, so that a read
	// that raced with a forgotten announcement is never cached.
	blindUntil time.Time
}

type nearEntry struct {
	rec statusRecord
	at  time.Time
}

type droppedRev struct {
	rev int64
	at  time.Time
}

func newNearCache() *nearCache {
	c := &nearCache{seed: maphash.MakeSeed(), perMax: nearMax / 32, ttl: nearTTL, now: time.Now}
	c.clear()
	return c
}

// nearID is a record's key: built without copying its strings.
type nearID struct{ projectID, orderNo string }

func nearKey(projectID, orderNo string) nearID { return nearID{projectID, orderNo} }

func (c *nearCache) shard(key nearID) *nearShard {
	return &c.shards[maphash.Comparable(c.seed, key)%uint64(len(c.shards))]
}

func (c *nearCache) get(key nearID) (statusRecord, bool) {
	if !c.enabled.Load() {
		return statusRecord{}, false
	}
	s := c.shard(key)
	s.mu.Lock()
	e, ok := s.m[key]
	s.mu.Unlock()
	if !ok || c.now().Sub(e.at) > c.ttl {
		return statusRecord{}, false
	}
	return e.rec, true
}

// put caches a record read from Redis or PostgreSQL, unless a newer
// revision has been announced meanwhile.
func (c *nearCache) put(key nearID, rec statusRecord) {
	rev := rec.rev
	if !c.enabled.Load() {
		return
	}
	now := c.now()
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.blindUntil) {
		return
	}
	if d, ok := s.dropped[key]; ok && d.rev > rev {
		return
	}
	if len(s.m) >= c.perMax {
		for k := range s.m { // evict an arbitrary entry
			delete(s.m, k)
			break
		}
	}
	s.m[key] = nearEntry{rec: rec, at: now}
	s.tick(now)
}

// tick counts an operation and every 4096th forgets the announced
// revisions older than droppedFor.
func (s *nearShard) tick(now time.Time) {
	s.ops++
	if s.ops%4096 != 0 {
		return
	}
	for k, d := range s.dropped {
		if now.Sub(d.at) > droppedFor {
			delete(s.dropped, k)
		}
	}
}

// invalidate drops the record ch names and remembers its revision. The
// remembered revisions are bounded (perMax a shard): when writes outpace
// the pruning, the shard forgets them all, drops its records and caches
// nothing for droppedFor.
func (c *nearCache) invalidate(ch readmodel.Change) {
	key := nearKey(ch.ProjectID, ch.OrderNo)
	now := c.now()
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok && e.rec.rev < ch.Rev {
		delete(s.m, key)
	}
	if now.Before(s.blindUntil) {
		return // nothing is cached, so nothing needs remembering
	}
	if d := s.dropped[key]; d.rev < ch.Rev {
		if len(s.dropped) >= c.perMax {
			clear(s.m)
			clear(s.dropped)
			s.blindUntil = now.Add(droppedFor)
			return
		}
		s.dropped[key] = droppedRev{rev: ch.Rev, at: now}
	}
	s.tick(now)
}

func (c *nearCache) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.m = map[nearID]nearEntry{}
		s.dropped = map[nearID]droppedRev{}
		s.mu.Unlock()
	}
}

// follow subscribes to the change announcements until ctx ends, keeping the
// cache enabled exactly while the subscription stands.
func (c *nearCache) follow(ctx context.Context, rdb *redis.Client) {
	defer func() { c.enabled.Store(false); c.clear() }()
	ps := rdb.Subscribe(ctx, readmodel.ChangesChannel)
	// Receive does not return on cancellation by itself: closing does.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	defer ps.Close()
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if c.enabled.Swap(false) {
				slog.Warn("order status near cache off: subscription lost", "err", err)
			}
			c.clear()
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			c.clear() // announcements may have been missed before (re)subscribing
			c.enabled.Store(true)
		case *redis.Message:
			changes, err := readmodel.ParseChanges(m.Payload)
			if err != nil {
				c.clear()
				continue
			}
			for _, ch := range changes {
				c.invalidate(ch)
			}
		}
	}
}
