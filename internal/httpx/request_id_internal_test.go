package httpx

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestNewRequestID: a request id is a UUIDv7 of the RFC 9562 variant whose
// time is the moment it was made, and each id comes after the one before.
func TestNewRequestID(t *testing.T) {
	prev := ""
	for range 10000 {
		before := time.Now().UnixMilli()
		s := newRequestID()
		after := time.Now().UnixMilli()
		id, err := uuid.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if id.String() != s || id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d, variant %v, want a canonical version 7 of the RFC 4122/9562 variant", s, id.Version(), id.Variant())
		}
		// Ids made within one millisecond count on in its fraction, which
		// may carry their time a millisecond past the clock's.
		ms := int64(id[0])<<40 | int64(id[1])<<32 | int64(id[2])<<24 | int64(id[3])<<16 | int64(id[4])<<8 | int64(id[5])
		if ms < before || ms > after+1 {
			t.Fatalf("%s: time %d ms, want between %d and %d", s, ms, before, after+1)
		}
		if s <= prev {
			t.Fatalf("%s made after %s", s, prev)
		}
		prev = s
	}
}

// BenchmarkNewRequestID: the request id every request makes; beside it
// the uuid package's NewV7 (crypto/rand), which it replaced.
func BenchmarkNewRequestID(b *testing.B) {
	b.Run("runtime-rand", func(b *testing.B) {
		for b.Loop() {
			_ = newRequestID()
		}
	})
	b.Run("uuid.NewV7", func(b *testing.B) {
		for b.Loop() {
			_ = uuid.Must(uuid.NewV7()).String()
		}
	})
}
