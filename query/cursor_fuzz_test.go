package query

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apperr"
)

func checkCursorErr(t *testing.T, err error) {
	t.Helper()
	if e := apperr.As(err); e == nil || e.Kind != apperr.Validation || e.Field != "cursor" {
		t.Fatalf("want 422 naming cursor, got %v", err)
	}
}

// FuzzDecodeCursor: a cursor round-trips; any other string, a changed
// character, another project or other filters are a 422 on cursor, never a
// panic. A string that decodes is the one encodeCursor writes for that
// position (no second spelling of a cursor).
func FuzzDecodeCursor(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	f.Add(key, "p1", "status=issued", int64(42), "", 0, byte(1))
	f.Add(key, "", "", int64(-1), "AQAAAAAAAAAq", 33, byte(0x20))
	f.Add([]byte{}, "p1", "", int64(1)<<62, "!!!!", 5, byte(0xff))
	c := encodeCursor(key, "p1", "", 7) // spelled with a line break: refused
	f.Add(key, "p1", "", int64(7), c[:10]+"\n"+c[10:], 0, byte(0))
	f.Add(key, "p\x00", "\x00", int64(0), "AgAAAAAAAAAqAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 1, byte(2))
	f.Fuzz(func(t *testing.T, key []byte, projectID, filters string, seq int64, other string, pos int, flip byte) {
		c := encodeCursor(key, projectID, filters, seq)
		got, err := decodeCursor(key, projectID, filters, c)
		if err != nil || got != seq {
			t.Fatalf("round trip of %d: %d, %v", seq, got, err)
		}
		checkCursorErr(t, func() error { _, err := decodeCursor(key, projectID+"x", filters, c); return err }())
		checkCursorErr(t, func() error { _, err := decodeCursor(key, projectID, filters+"x", c); return err }())
		if flip != 0 {
			b := []byte(c)
			b[uint(pos)%uint(len(b))] ^= flip
			_, err := decodeCursor(key, projectID, filters, string(b))
			checkCursorErr(t, err)
		}
		if s, err := decodeCursor(key, projectID, filters, other); err != nil {
			checkCursorErr(t, err)
		} else if other != encodeCursor(key, projectID, filters, s) {
			t.Fatalf("%q accepted as position %d, whose cursor is %q", other, s, encodeCursor(key, projectID, filters, s))
		}
	})
}

// FuzzDecodeTimeIDCursor is FuzzDecodeCursor for the (created_at, id)
// cursor of the task listing.
func FuzzDecodeTimeIDCursor(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	id := uuid.MustParse("0190f7a4-7b3c-7def-8abc-0123456789ab")
	f.Add(key, "p1", "status=open", int64(1767225600123456), id[:], "", 0, byte(1))
	f.Add(key, "", "", int64(-62135596800000000), make([]byte, 16), "AQAAAAAAAAAq", 3, byte(0x80))
	f.Add([]byte{}, "p", "type=x", int64(1)<<62, []byte{1}, "AgAAAAAAAAAq", 40, byte(0))
	f.Fuzz(func(t *testing.T, key []byte, projectID, filters string, micros int64, idBytes []byte, other string, pos int, flip byte) {
		var id uuid.UUID
		copy(id[:], idBytes)
		at := time.UnixMicro(micros)
		c := encodeTimeIDCursor(key, projectID, filters, at, id)
		gotAt, gotID, err := decodeTimeIDCursor(key, projectID, filters, c)
		if err != nil || !gotAt.Equal(at) || gotAt.Location() != time.UTC || gotID != id {
			t.Fatalf("round trip of %v %s: %v %s, %v", at, id, gotAt, gotID, err)
		}
		_, _, err = decodeTimeIDCursor(key, projectID+"x", filters, c)
		checkCursorErr(t, err)
		_, _, err = decodeTimeIDCursor(key, projectID, filters+"x", c)
		checkCursorErr(t, err)
		// A cursor of the other kind is no cursor of this listing.
		_, _, err = decodeTimeIDCursor(key, projectID, filters, encodeCursor(key, projectID, filters, micros))
		checkCursorErr(t, err)
		if flip != 0 {
			b := []byte(c)
			b[uint(pos)%uint(len(b))] ^= flip
			_, _, err := decodeTimeIDCursor(key, projectID, filters, string(b))
			checkCursorErr(t, err)
		}
		if a, i, err := decodeTimeIDCursor(key, projectID, filters, other); err != nil {
			checkCursorErr(t, err)
		} else if other != encodeTimeIDCursor(key, projectID, filters, a, i) {
			t.Fatalf("%q accepted as %v %s, whose cursor is %q", other, a, i, encodeTimeIDCursor(key, projectID, filters, a, i))
		}
	})
}
