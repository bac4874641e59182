package query

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/store"
)

// A listing cursor is the position (the last invoice's seq) bound to the
// project and the filters, signed with HMAC-SHA256: opaque to clients,
// tamper-evident, and useless in another project or with other filters.

const cursorVersion = 1

// cursorKey holds the signing key shared by every replica (service_secrets).
type cursorKey struct {
	pool *pgxpool.Pool
	once sync.Once
	key  []byte
	err  error
}

func (k *cursorKey) get(ctx context.Context) ([]byte, error) {
	k.once.Do(func() {
		fresh := make([]byte, 32)
		if _, k.err = rand.Read(fresh); k.err != nil {
			return
		}
		k.err = store.QueryRow(ctx, k.pool, `WITH ins AS (
				INSERT INTO service_secrets (name, value) VALUES ('cursor', $1) ON CONFLICT (name) DO NOTHING RETURNING value)
			SELECT value FROM ins UNION ALL SELECT value FROM service_secrets WHERE name = 'cursor' LIMIT 1`, fresh).Scan(&k.key)
	})
	if k.err != nil {
		err := k.err
		k.once = sync.Once{} // try again on the next request
		return nil, err
	}
	return k.key, nil
}

func cursorMAC(key []byte, projectID, filters string, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(projectID))
	m.Write([]byte{0})
	m.Write([]byte(filters))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:16]
}

func encodeCursor(key []byte, projectID, filters string, seq int64) string {
	payload := make([]byte, 9)
	payload[0] = cursorVersion
	binary.BigEndian.PutUint64(payload[1:], uint64(seq))
	return base64.RawURLEncoding.EncodeToString(append(payload, cursorMAC(key, projectID, filters, payload)...))
}

// cursorBytes decodes s, which must be spelled as encodeCursor spells it:
// the decoder ignores CR and LF and the unused bits of the last character,
// so without this a cursor would have other spellings.
func cursorBytes(s string) ([]byte, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	return raw, err == nil && base64.RawURLEncoding.EncodeToString(raw) == s
}

func decodeCursor(key []byte, projectID, filters, s string) (int64, error) {
	raw, ok := cursorBytes(s)
	if !ok || len(raw) != 9+16 || raw[0] != cursorVersion {
		return 0, apperr.Field("cursor", "cursor is not a cursor of this listing")
	}
	if !hmac.Equal(raw[9:], cursorMAC(key, projectID, filters, raw[:9])) {
		return 0, apperr.Field("cursor", "cursor was altered, or belongs to another project or other filters")
	}
	return int64(binary.BigEndian.Uint64(raw[1:9])), nil
}

// CursorAfter returns a cursor of the unfiltered listing of a project that
// continues after the invoice with sequence number seq (for load tools that
// start walks at random depths).
func (s *Service) CursorAfter(ctx context.Context, projectID string, seq int64) (string, error) {
	key, err := s.cursors.get(ctx)
	if err != nil {
		return "", err
	}
	return encodeCursor(key, projectID, InvoiceFilter{}.key(), seq), nil
}

// A listing ordered by (created_at, id), for rows without a sequence number
// (tasks), carries both in its cursor: version 2, the time in microseconds
// since 1970 (PostgreSQL's precision) and the 16 bytes of the UUID, signed
// like the sequence cursor with the same key.

const timeIDCursorVersion = 2

const timeIDPayloadLen = 1 + 8 + 16

func encodeTimeIDCursor(key []byte, projectID, filters string, at time.Time, id uuid.UUID) string {
	payload := make([]byte, timeIDPayloadLen, timeIDPayloadLen+16)
	payload[0] = timeIDCursorVersion
	binary.BigEndian.PutUint64(payload[1:9], uint64(at.UnixMicro()))
	copy(payload[9:], id[:])
	return base64.RawURLEncoding.EncodeToString(append(payload, cursorMAC(key, projectID, filters, payload)...))
}

func decodeTimeIDCursor(key []byte, projectID, filters, s string) (time.Time, uuid.UUID, error) {
	raw, ok := cursorBytes(s)
	if !ok || len(raw) != timeIDPayloadLen+16 || raw[0] != timeIDCursorVersion {
		return time.Time{}, uuid.Nil, apperr.Field("cursor", "cursor is not a cursor of this listing")
	}
	if !hmac.Equal(raw[timeIDPayloadLen:], cursorMAC(key, projectID, filters, raw[:timeIDPayloadLen])) {
		return time.Time{}, uuid.Nil, apperr.Field("cursor", "cursor was altered, or belongs to another project or other filters")
	}
	var id uuid.UUID
	copy(id[:], raw[9:timeIDPayloadLen])
	return time.UnixMicro(int64(binary.BigEndian.Uint64(raw[1:9]))).UTC(), id, nil
}
