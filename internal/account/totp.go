package account

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/o2i-service/o2i/internal/store"
)

// totpPeriod is the TOTP time step (RFC 6238's default, what
// authenticator apps use); a code of the step before or after is accepted
// too (clock drift).
const totpPeriod = 30

// RecoveryCodes is how many recovery codes an enrolment gives.
const RecoveryCodes = 10

// Enrolment is a new, unconfirmed second factor: the secret shown once as
// text and as an otpauth URI (and its QR code).
type Enrolment struct {
	Secret string // base32
	URI    string // otpauth://totp/...
	QR     string // data: URL of the PNG QR code of URI
}

// StartTOTP stores a new secret for u, not in force until confirmed with
// a code (a second factor in force is not replaced), and returns it to
// show once.
func (s *Store) StartTOTP(ctx context.Context, u User, issuer string) (Enrolment, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: u.Email, Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1, Rand: rand.Reader})
	if err != nil {
		return Enrolment{}, err
	}
	if _, err := s.pool.Exec(ctx, `UPDATE console_users SET totp_secret = $2 WHERE id = $1 AND totp_confirmed_at IS NULL`, u.ID, key.Secret()); err != nil {
		return Enrolment{}, err
	}
	e := Enrolment{Secret: key.Secret(), URI: key.URL()}
	if img, err := key.Image(200, 200); err == nil {
		var b bytes.Buffer
		if png.Encode(&b, img) == nil {
			e.QR = "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
		}
	}
	return e, nil
}

// checkCode reports the time step of code when it is a valid code of
// secret at now (the step before and after count), and after the step
// last accepted. Pure.
func checkCode(secret, code string, now time.Time, last int64) (int64, bool) {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) != 6 {
		return 0, false
	}
	step := now.Unix() / totpPeriod
	for _, d := range []int64{0, -1, 1} {
		st := step + d
		if st <= last {
			continue
		}
		want, err := totp.GenerateCodeCustom(secret, time.Unix(st*totpPeriod, 0), totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err == nil && want == code {
			return st, true
		}
	}
	return 0, false
}

// ErrCode: a second-factor code that is wrong, used or expired.
var ErrCode = fieldErr("code", "the code is wrong or used; enter the current code of your app or an unused recovery code")

// ConfirmTOTP puts u's new secret in force with a code of it and returns
// ten recovery codes (shown once; stored as hashes). The change is logged.
func (s *Store) ConfirmTOTP(ctx context.Context, u User, code string, now time.Time) ([]string, error) {
	var codes []string
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var secret *string
		if err := tx.QueryRow(ctx, `SELECT totp_secret FROM console_users WHERE id = $1 AND totp_confirmed_at IS NULL FOR UPDATE`, u.ID).Scan(&secret); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fieldErr("code", "the second factor is on already")
			}
			return err
		}
		if secret == nil {
			return fieldErr("code", "start the enrolment first")
		}
		step, ok := checkCode(*secret, code, now, 0)
		if !ok {
			return ErrCode
		}
		if _, err := tx.Exec(ctx, `UPDATE console_users SET totp_confirmed_at = $2, totp_last_step = $3 WHERE id = $1`, u.ID, now, step); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_recovery_codes WHERE user_id = $1`, u.ID); err != nil {
			return err
		}
		for i := 0; i < RecoveryCodes; i++ {
			c := recoveryCode()
			codes = append(codes, c)
			if _, err := tx.Exec(ctx, `INSERT INTO console_recovery_codes (user_id, code_hash) VALUES ($1, $2)`, u.ID, HashToken(normalizeRecovery(c))); err != nil {
				return err
			}
		}
		return Record(ctx, tx, Entry{At: now, ActorID: u.ID, ActorEmail: u.Email, Action: "user.totp_on", Target: u.Email,
			Before: map[string]any{"totp": false}, After: map[string]any{"totp": true, "recoveryCodes": RecoveryCodes}})
	})
	return codes, err
}

// recoveryCode is a random code of 10 characters in two groups (50 bits).
func recoveryCode() string {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:5]) + "-" + string(b[5:])
}

func normalizeRecovery(c string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(c), "-", ""))
}

// HasTOTP reports whether u's second factor is in force.
func (s *Store) HasTOTP(ctx context.Context, userID string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT totp_confirmed_at IS NOT NULL FROM console_users WHERE id = $1`, userID).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, ErrNotFound
	}
	return ok, err
}

// VerifySecondFactor checks a code of u's app (each time step once) or an
// unused recovery code (used up); ErrCode when neither.
func (s *Store) VerifySecondFactor(ctx context.Context, u User, code string, now time.Time) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var secret *string
		var last int64
		err := tx.QueryRow(ctx, `SELECT totp_secret, totp_last_step FROM console_users WHERE id = $1 AND totp_confirmed_at IS NOT NULL FOR UPDATE`, u.ID).Scan(&secret, &last)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && secret == nil) {
			return ErrCode
		}
		if err != nil {
			return err
		}
		if step, ok := checkCode(*secret, code, now, last); ok {
			_, err := tx.Exec(ctx, `UPDATE console_users SET totp_last_step = $2 WHERE id = $1`, u.ID, step)
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE console_recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`,
			u.ID, HashToken(normalizeRecovery(code)), now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return ErrCode
		}
		return Record(ctx, tx, Entry{At: now, ActorID: u.ID, ActorEmail: u.Email, Action: "user.recovery_code_used", Target: u.Email})
	})
}

// RequiresTOTP reports whether a project requires its members' second factor.
func (s *Store) RequiresTOTP(ctx context.Context, projectID string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT require_totp FROM console_project_policies WHERE project_id = $1), false)`, projectID).Scan(&ok)
	return ok, err
}

// SetRequireTOTP sets whether a project requires its members' second
// factor, and logs the change by actor.
func (s *Store) SetRequireTOTP(ctx context.Context, actor User, projectID string, on bool, now time.Time) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var before bool
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT require_totp FROM console_project_policies WHERE project_id = $1 FOR UPDATE), false)`, projectID).Scan(&before); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO console_project_policies (project_id, require_totp) VALUES ($1, $2)
			ON CONFLICT (project_id) DO UPDATE SET require_totp = EXCLUDED.require_totp`, projectID, on); err != nil {
			return fmt.Errorf("set the project's second-factor requirement: %w", err)
		}
		return Record(ctx, tx, Entry{At: now, ProjectID: projectID, ActorID: actor.ID, ActorEmail: actor.Email, Action: "project.require_totp",
			Before: map[string]any{"requireTotp": before}, After: map[string]any{"requireTotp": on}})
	})
}

// PasswordOK reports whether pw is the password of the user (asked again
// before a guarded change).
func (s *Store) PasswordOK(ctx context.Context, userID, pw string) (bool, error) {
	var hash *string
	err := s.pool.QueryRow(ctx, `SELECT password_hash FROM console_users WHERE id = $1`, userID).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && hash == nil) {
		VerifyPassword(dummyHash, pw)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if len(pw) > MaxPasswordLen {
		return false, nil
	}
	return VerifyPassword(*hash, pw), nil
}

// OwnerEmails lists the e-mail addresses of a project's owners.
func (s *Store) OwnerEmails(ctx context.Context, projectID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT u.email FROM console_memberships m JOIN console_users u ON u.id = m.user_id
		WHERE m.project_id = $1 AND m.role = 'owner' ORDER BY u.email`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// StartPendingSession creates a session of u that waits for the second
// factor: it opens no page but the code's.
func (s *Store) StartPendingSession(ctx context.Context, u User, now time.Time) (string, error) {
	id := NewToken()
	_, err := s.pool.Exec(ctx, `INSERT INTO console_sessions (id_hash, user_id, csrf_token, created_at, last_seen_at, second_factor_pending) VALUES ($1, $2, $3, $4, $4, true)`,
		HashToken(id), u.ID, NewToken(), now)
	return id, err
}

// SetViewTest chooses the data a session looks at: test (true) or live.
func (s *Store) SetViewTest(ctx context.Context, sessionID string, test bool) error {
	_, err := s.pool.Exec(ctx, `UPDATE console_sessions SET view_test = $2 WHERE id_hash = $1`, HashToken(sessionID), test)
	return err
}
