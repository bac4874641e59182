package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

func storedOf(key string, data []byte) Stored {
	sum := sha256.Sum256(data)
	return Stored{Key: key, VersionID: "v-" + key, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}
}

// TestRecentObjects: a created object is read back as a copy while it is
// kept; it goes after recentTTL, when the bytes kept exceed recentMaxBytes
// (oldest first), when forgotten, and when its bytes no longer have their
// SHA-256; an object too large to keep is not kept.
func TestRecentObjects(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := newRecentObjects()
	r.now = func() time.Time { return now }
	a := []byte("%PDF-1.7 a")
	r.add(a, storedOf("a", a))
	a[0] = 'X' // the caller's buffer is reused: the kept copy stays
	got, st, ok := r.get("a")
	if !ok || string(got) != "%PDF-1.7 a" || st.VersionID != "v-a" {
		t.Fatalf("get a: %q %+v %v", got, st, ok)
	}
	got[0] = 'Y' // the reader's copy is its own
	if again, _, _ := r.get("a"); string(again) != "%PDF-1.7 a" {
		t.Errorf("a changed through a reader's copy: %q", again)
	}
	if _, _, ok := r.get("b"); ok {
		t.Error("b was never created")
	}

	now = now.Add(recentTTL + time.Second)
	if _, _, ok := r.get("a"); ok {
		t.Error("a kept after recentTTL")
	}

	big := bytes.Repeat([]byte{'x'}, recentMaxBytes/4)
	for _, k := range []string{"1", "2", "3", "4", "5"} {
		r.add(big, storedOf(k, big))
	}
	if _, _, ok := r.get("1"); ok {
		t.Error("the oldest object kept beyond recentMaxBytes")
	}
	if _, _, ok := r.get("5"); !ok {
		t.Error("the newest object not kept")
	}
	if r.bytes > recentMaxBytes {
		t.Errorf("%d bytes kept, more than %d", r.bytes, recentMaxBytes)
	}
	huge := append(big, 'x')
	r.add(huge, storedOf("huge", huge))
	if _, _, ok := r.get("huge"); ok {
		t.Error("an object larger than a quarter of the bound kept")
	}

	r.forget("5")
	if _, _, ok := r.get("5"); ok {
		t.Error("5 kept after forget")
	}

	c := []byte("%PDF-1.7 c")
	r.add(c, storedOf("c", c))
	r.mu.Lock()
	r.m["c"].data[0] = 'Z' // the kept bytes damaged
	r.mu.Unlock()
	if _, _, ok := r.get("c"); ok {
		t.Error("bytes that no longer have their SHA-256 returned")
	}
}
