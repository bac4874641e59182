package store

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

func TestCanonicalUUID(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", true},
		{"0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B", true},
		{"{0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}", false}, // PostgreSQL reads it, sent as text
		{"urn:uuid:0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", false},
		{"0193a1b2c3d47e5f8a9b0c1d2e3f4a5b", false},
		{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5g", false},
		{"0193a1b2-c3d47-e5f-8a9b-0c1d2e3f4a5b", false},
		{"", false},
	} {
		if _, got := parseCanonicalUUID(c.s); got != c.want {
			t.Errorf("parseCanonicalUUID(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// TestUUIDStringsInBinary: with the codec registered, a []string bound to
// uuid[] is written in the binary format, byte for byte as the same UUIDs
// given as bytes; a string that is not canonical is refused in binary (pgx
// then sends it as text and PostgreSQL decides), as pgx's own codec refuses
// every string.
func TestUUIDStringsInBinary(t *testing.T) {
	ids := []string{"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "ffffffff-0000-4000-8000-000000000001"}
	plain := pgtype.NewMap()
	if _, err := plain.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil); err == nil {
		t.Fatal("pgx's own codec writes strings in binary now: the registration is no longer needed")
	}
	m := pgtype.NewMap()
	registerUUIDStrings(m)
	got, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, nil)
	if err != nil {
		t.Fatalf("[]string as uuid[] in binary: %v", err)
	}
	var raw [][16]byte
	for _, s := range ids {
		var u pgtype.UUID
		if err := u.Scan(s); err != nil {
			t.Fatal(err)
		}
		raw = append(raw, u.Bytes)
	}
	want, err := plain.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("binary uuid[] from strings\n% x\nwant\n% x", got, want)
	}
	for _, s := range []string{"{0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}", "not a uuid"} {
		if _, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []string{s}, nil); err == nil {
			t.Errorf("%q written in binary", s)
		}
		if _, err := m.Encode(pgtype.UUIDArrayOID, pgtype.TextFormatCode, []string{s}, nil); err != nil {
			t.Errorf("%q as text: %v", s, err)
		}
	}
}
