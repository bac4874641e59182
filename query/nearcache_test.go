package query

import (
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
	c.put(key, 5, []byte("v5"))
	if _, _, ok := c.get(key); ok {
		t.Fatal("cache served while not following the announcements")
	}
	c.enabled.Store(true)
	c.put(key, 5, []byte("v5"))
	if rev, body, ok := c.get(key); !ok || rev != 5 || string(body) != "v5" {
		t.Fatalf("get = %d %q %v", rev, body, ok)
	}
	c.invalidate(readmodel.Change{ProjectID: "p", OrderNo: "o", Rev: 6})
	if _, _, ok := c.get(key); ok {
		t.Fatal("an announced change left the old record in the cache")
	}
	// A read of the old revision that raced with the announcement is not cached.
	c.put(key, 5, []byte("v5"))
	if _, _, ok := c.get(key); ok {
		t.Fatal("a stale read was cached after the announcement of a newer revision")
	}
	c.put(key, 6, []byte("v6"))
	if rev, _, ok := c.get(key); !ok || rev != 6 {
		t.Fatalf("the new revision is not cached: %d %v", rev, ok)
	}
	// An older announcement does not drop a newer record.
	c.invalidate(readmodel.Change{ProjectID: "p", OrderNo: "o", Rev: 4})
	if _, _, ok := c.get(key); !ok {
		t.Fatal("an older announcement dropped a newer record")
	}
	now = now.Add(nearTTL + time.Second)
	if _, _, ok := c.get(key); ok {
		t.Fatal("an entry outlived its TTL")
	}
}
