package account

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2id parameters of new hashes (RFC 9106's second recommended option,
// with 64 MiB): stored in each hash, so they can be raised later.
const (
	argonTime    = 3
	argonMemory  = 64 * 1024 // KiB
	argonThreads = 2
	argonKeyLen  = 32
	saltLen      = 16
)

// Password lengths: long enough to resist guessing, bounded so that hashing
// a posted value costs a bounded time.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 256
)

// CheckPassword checks a new password's length, naming the field.
func CheckPassword(field, pw string) error {
	if n := len([]rune(pw)); n < MinPasswordLen {
		return fieldErr(field, "the password needs at least %d characters, got %d", MinPasswordLen, n)
	}
	if len(pw) > MaxPasswordLen {
		return fieldErr(field, "the password may have at most %d bytes", MaxPasswordLen)
	}
	return nil
}

// HashPassword returns the argon2id hash of pw as a PHC string
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
func HashPassword(pw string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// dummyHash is compared against when no account matches, so that an unknown
// e-mail costs the same time as a wrong password.
var dummyHash, _ = HashPassword("not a password of anyone")

// VerifyPassword reports whether pw matches the PHC string hash. A malformed
// hash matches nothing.
func VerifyPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	var mem, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &p); err != nil || mem == 0 || mem > 1<<20 || t == 0 || t > 10 || p == 0 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 128 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, mem, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// newPasswordHash checks a new password and its confirmation (the form's
// fields password and password_confirm) and hashes it.
func newPasswordHash(password, confirm string) (string, error) {
	if err := CheckPassword("password", password); err != nil {
		return "", err
	}
	if password != confirm {
		return "", fieldErr("password_confirm", "the two passwords differ")
	}
	return HashPassword(password)
}
