package query

import (
	"fmt"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/readmodel"
)

func TestNearCacheDropsAnnouncedChangesAndStaleReads(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c := newNearCache()
	c.now = func() time.Time { return now }
	key := nearKey("p", "o")
	putRaw(c, key, 5, []byte("v5"))
	if _, _, ok := getRaw(c, key); ok {
		t.Fatal("cache served while not following the announcements")
	}
	c.enabled.Store(true)
	putRaw(c, key, 5, []byte("v5"))
	if rev, body, ok := getRaw(c, key); !ok || rev != 5 || string(body) != "v5" {
		t.Fatalf("get = %d %q %v", rev, body, ok)
	}
	c.invalidate(readmodel.Change{ProjectID: "p", OrderNo: "o", Rev: 6})
	if _, _, ok := getRaw(c, key); ok {
		t.Fatal("an announced change left the old record in the cache")
	}
	// A read of the old revision that raced with the announcement is not cached.
	putRaw(c, key, 5, []byte("v5"))
	if _, _, ok := getRaw(c, key); ok {
		t.Fatal("a stale read was cached after the announcement of a newer revision")
	}
	putRaw(c, key, 6, []byte("v6"))
	if rev, _, ok := getRaw(c, key); !ok || rev != 6 {
		t.Fatalf("the new revision is not cached: %d %v", rev, ok)
	}
	// An older announcement does not drop a newer record.
	c.invalidate(readmodel.Change{ProjectID: "p", OrderNo: "o", Rev: 4})
	if _, _, ok := getRaw(c, key); !ok {
		t.Fatal("an older announcement dropped a newer record")
	}
	now = now.Add(nearTTL + time.Second)
	if _, _, ok := getRaw(c, key); ok {
		t.Fatal("an entry outlived its TTL")
	}
}

// TestNearCacheRemembersBoundedRevisions: announcements of orders that are
// never read (writes outnumbering reads) keep at most perMax revisions a
// shard; a shard that had to forget caches nothing until a racing read
// could no longer be stale, then caches again.
func TestNearCacheRemembersBoundedRevisions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	c := newNearCache()
	c.now = func() time.Time { return now }
	c.enabled.Store(true)
	key := nearKey("p", "read")
	putRaw(c, key, 1, []byte("v1"))

	const announced = nearMax * 3
	for i := 0; i < announced; i++ {
		c.invalidate(readmodel.Change{ProjectID: "p", OrderNo: fmt.Sprintf("w-%d", i), Rev: 1})
	}
	total := 0
	for i := range c.shards {
		n := len(c.shards[i].dropped)
		if n > c.perMax {
			t.Errorf("shard %d remembers %d revisions, more than %d", i, n, c.perMax)
		}
		total += n
	}
	if total > nearMax {
		t.Errorf("%d revisions remembered after %d announcements, want at most %d", total, announced, nearMax)
	}
	// The shards forgot: a read raced with a forgotten announcement is not cached.
	putRaw(c, key, 1, []byte("v1"))
	if _, _, ok := getRaw(c, key); ok {
		t.Error("a shard that forgot announced revisions cached a read")
	}
	now = now.Add(droppedFor + time.Second)
	putRaw(c, key, 2, []byte("v2"))
	if rev, _, ok := getRaw(c, key); !ok || rev != 2 {
		t.Errorf("after droppedFor the shard caches again: got %d %v", rev, ok)
	}
}

// putRaw and getRaw are put and get by revision and JSON.
func putRaw(c *nearCache, key nearID, rev int64, body []byte) { c.put(key, newStatusRecord(rev, body)) }

func getRaw(c *nearCache, key nearID) (int64, []byte, bool) {
	rec, ok := c.get(key)
	return rec.rev, rec.body, ok
}
