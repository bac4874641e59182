package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// recentObjects keeps the bytes of the objects this process created lately,
// so that Get of one soon after (the mailer attaching a document the
// invoicer has just archived) needs no request to the store. An object is
// created once under its key (the put is conditional) and never replaced,
// so the bytes written are the bytes a read would return. Reads that check
// the store itself (GetVersion, Verified, Check) never use it. It holds at
// most recentMaxBytes, each object for at most recentTTL.
type recentObjects struct {
	mu    sync.Mutex
	m     map[string]recentObject
	order []string // keys, oldest first
	bytes int
	now   func() time.Time
}

type recentObject struct {
	data []byte
	st   Stored
	at   time.Time
}

const (
	recentMaxBytes = 32 << 20
	recentTTL      = 2 * time.Minute
)

func newRecentObjects() *recentObjects {
	return &recentObjects{m: map[string]recentObject{}, now: time.Now}
}

// add keeps a copy of data, created as st.
func (r *recentObjects) add(data []byte, st Stored) {
	if r.takes(len(data)) { // before the copy
		r.keep(st.Key, append([]byte(nil), data...), st)
	}
}

// takes reports whether r keeps an object of size bytes.
func (r *recentObjects) takes(size int) bool { return r != nil && size <= recentMaxBytes/4 }

// keep keeps data under key, created as st (or as a part of the object st
// names, kept under the document's own key), without a copy: data must be
// bytes no one writes to again.
func (r *recentObjects) keep(key string, data []byte, st Stored) {
	if !r.takes(len(data)) {
		return
	}
	o := recentObject{data: data, st: st, at: r.now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.m[key]; ok {
		r.bytes -= len(old.data)
	} else {
		r.order = append(r.order, key)
	}
	r.m[key] = o
	r.bytes += len(o.data)
	for r.bytes > recentMaxBytes && len(r.order) > 0 {
		r.evictOldest()
	}
}

// get returns a copy of the object created under key, when it is kept
// and its bytes still have the SHA-256 they were created with.
func (r *recentObjects) get(key string) ([]byte, Stored, bool) {
	if r == nil {
		return nil, Stored{}, false
	}
	r.mu.Lock()
	now := r.now()
	for len(r.order) > 0 && now.Sub(r.m[r.order[0]].at) > recentTTL {
		r.evictOldest()
	}
	o, ok := r.m[key]
	r.mu.Unlock()
	if !ok {
		return nil, Stored{}, false
	}
	sum := sha256.Sum256(o.data)
	if hex.EncodeToString(sum[:]) != o.st.SHA256 {
		return nil, Stored{}, false
	}
	return append([]byte(nil), o.data...), o.st, true
}

// forget drops key (its versions were removed).
func (r *recentObjects) forget(key string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.m[key]; ok {
		r.bytes -= len(o.data)
		delete(r.m, key)
	}
}

// evictOldest drops the oldest key (r.mu held); a key forgotten before
// only leaves the order.
func (r *recentObjects) evictOldest() {
	k := r.order[0]
	r.order = r.order[1:]
	if o, ok := r.m[k]; ok {
		r.bytes -= len(o.data)
		delete(r.m, k)
	}
}
