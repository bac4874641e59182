package store

import (
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgx sends an array parameter in the binary format first and falls back to
// text when that fails. Its uuid codec writes no string in binary, so every
// statement that bound a []string to a uuid[] parameter (the projector's and
// the relay's batches, the chain's, the key look-up) first built an error
// message holding the whole array, then sent it as text. registerUUIDStrings
// gives the connection's type map a uuid codec that also writes a UUID in
// its canonical text form (8-4-4-4-12 hex digits) in binary. Any other
// string still goes as text, and PostgreSQL judges it as before.
func registerUUIDStrings(m *pgtype.Map) {
	elem := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(elem)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: elem}})
}

// uuidCodec is pgx's UUIDCodec that also writes a canonical UUID string in
// the binary format.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(string); ok && format == pgtype.BinaryFormatCode {
		return encodeUUIDString{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

type encodeUUIDString struct{}

func (encodeUUIDString) Encode(value any, buf []byte) ([]byte, error) {
	u, ok := parseCanonicalUUID(value.(string))
	if !ok {
		return nil, errNotCanonical
	}
	return append(buf, u[:]...), nil
}

var errNotCanonical = errors.New("not a UUID in the form 8-4-4-4-12: sent as text")

// parseCanonicalUUID parses s when it has the form 8-4-4-4-12 hex digits,
// the one form both uuid.Parse and PostgreSQL read the same way (uuid.Parse
// also takes braces, a urn: prefix and no hyphens, told apart by length).
func parseCanonicalUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}
