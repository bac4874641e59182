// Package account keeps the people of the seller console: users (argon2id
// password hashes), their memberships (user × project × role), one-time
// invitation and password-reset links, server-side sessions, failed
// sign-ins, the second factor (TOTP, with recovery codes) and the
// append-only log of console changes. The role × action table and the role
// × setting table (authz.go) are pure. It imports internal/apperr,
// internal/mail (the message of an invitation), internal/store
// (transactions), pgx and pquerna/otp (TOTP codes).
package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/store"
)

// Lifetimes of the one-time links.
const (
	InvitationTTL = 72 * time.Hour
	ResetTTL      = time.Hour
)

func fieldErr(field, format string, args ...any) error { return apperr.Field(field, format, args...) }

// ErrNotFound: no such invitation, session, membership or user (or one the
// caller may not see).
var ErrNotFound = apperr.New(apperr.NotFound, "not_found", "not found")

// Store reads and writes the console's people.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool is the store's connection pool (for the callers that share it).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// NewToken returns a random URL-safe token of 32 bytes.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on a supported platform
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is the stored form of a token.
func HashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// NormalizeEmail checks an address, naming the field, and lower-cases it.
func NormalizeEmail(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fieldErr(field, "an e-mail address is required")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", fieldErr(field, "not an e-mail address: %q", s)
	}
	return strings.ToLower(s), nil
}

// User is a person who signs in.
type User struct {
	ID    string
	Email string
}

// Membership is a user's role in one project.
type Membership struct {
	UserID      string
	Email       string
	ProjectID   string
	ProjectName string
	Role        Role
	AuditYears  []int
	EndsOn      *time.Time
	CreatedAt   time.Time
}

// Active reports whether the membership is in force on day now: an
// auditor's ends after its end date.
func (m Membership) Active(now time.Time) bool {
	if m.EndsOn == nil {
		return true
	}
	y, mo, d := now.UTC().Date()
	today := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	return !today.After(*m.EndsOn)
}

// AuditScope checks an auditor's years and end date (other roles have none).
func AuditScope(role Role, years []int, endsOn *time.Time) error {
	if role != Auditor {
		if len(years) > 0 || endsOn != nil {
			return fieldErr("auditYears", "only an auditor's membership names audit years and an end date")
		}
		return nil
	}
	if len(years) == 0 {
		return fieldErr("auditYears", "an auditor's membership names the years under audit")
	}
	for _, y := range years {
		if y < 2000 || y > 2999 {
			return fieldErr("auditYears", "not a year: %d", y)
		}
	}
	if endsOn == nil {
		return fieldErr("endsOn", "an auditor's membership needs an end date")
	}
	return nil
}

// Invitation is a pending invitation, found by its token.
type Invitation struct {
	ProjectID   string
	ProjectName string
	Email       string
	Role        Role
	AuditYears  []int
	EndsOn      *time.Time
	ExpiresAt   time.Time
}

// Invite stores a new invitation and returns its token (shown once, in the
// link). invitedBy is empty for the command line.
func (s *Store) Invite(ctx context.Context, projectID, email string, role Role, years []int, endsOn *time.Time, invitedBy string, now time.Time) (string, Invitation, error) {
	if _, err := uuid.Parse(projectID); err != nil {
		return "", Invitation{}, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	email, err := NormalizeEmail("email", email)
	if err != nil {
		return "", Invitation{}, err
	}
	if err := AuditScope(role, years, endsOn); err != nil {
		return "", Invitation{}, err
	}
	tok := NewToken()
	inv := Invitation{ProjectID: projectID, Email: email, Role: role, AuditYears: years, EndsOn: endsOn, ExpiresAt: now.Add(InvitationTTL)}
	var by *string
	if invitedBy != "" {
		by = &invitedBy
	}
	if years == nil {
		years = []int{}
	}
	err = s.pool.QueryRow(ctx, `INSERT INTO console_invitations (token_hash, project_id, email, role, audit_years, ends_on, invited_by, created_at, expires_at)
		SELECT $1, id, $3, $4, $5, $6, $7, $8, $9 FROM projects WHERE id = $2 RETURNING (SELECT name FROM projects WHERE id = $2)`,
		HashToken(tok), projectID, email, string(role), years, endsOn, by, now, inv.ExpiresAt).Scan(&inv.ProjectName)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", Invitation{}, apperr.New(apperr.NotFound, "project_not_found", "no project %q", projectID)
	}
	if err != nil {
		return "", Invitation{}, fmt.Errorf("store invitation: %w", err)
	}
	return tok, inv, nil
}

// Invitation returns the pending invitation of token: unused and not expired.
func (s *Store) Invitation(ctx context.Context, token string, now time.Time) (Invitation, error) {
	return invitation(ctx, s.pool, token, now, false)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

var errInvitationGone = apperr.New(apperr.NotFound, "invitation_not_found", "this invitation link is unknown, used or expired")

func invitation(ctx context.Context, q querier, token string, now time.Time, lock bool) (Invitation, error) {
	sql := `SELECT i.project_id::text, p.name, i.email, i.role, i.audit_years, i.ends_on, i.expires_at
		FROM console_invitations i JOIN projects p ON p.id = i.project_id
		WHERE i.token_hash = $1 AND i.used_at IS NULL AND i.expires_at > $2`
	if lock {
		sql += ` FOR UPDATE OF i`
	}
	var inv Invitation
	var role string
	err := q.QueryRow(ctx, sql, HashToken(token), now).Scan(&inv.ProjectID, &inv.ProjectName, &inv.Email, &role, &inv.AuditYears, &inv.EndsOn, &inv.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Invitation{}, errInvitationGone
	}
	inv.Role = Role(role)
	return inv, err
}

// ErrWrongPassword: an invitation for an existing account was accepted with
// a password that is not the account's.
var ErrWrongPassword = apperr.Field("password", "this account exists already: enter its password to accept the invitation")

// Accept takes up an invitation: a new account gets the password (it must
// be typed twice alike), an existing account proves itself with its
// password; the membership is created or its role replaced; the link is
// used up. The change is logged.
func (s *Store) Accept(ctx context.Context, token, email, password, confirm string, now time.Time) (User, error) {
	var u User
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		inv, err := invitation(ctx, tx, token, now, true)
		if err != nil {
			return err
		}
		e, err := NormalizeEmail("email", email)
		if err != nil {
			return err
		}
		if e != inv.Email {
			return fieldErr("email", "the invitation is for %s", inv.Email)
		}
		var hash *string
		err = tx.QueryRow(ctx, `SELECT id::text, email, password_hash FROM console_users WHERE lower(email) = $1 FOR UPDATE`, e).Scan(&u.ID, &u.Email, &hash)
		switch {
		case errors.Is(err, pgx.ErrNoRows) || (err == nil && hash == nil):
			h, err := newPasswordHash(password, confirm)
			if err != nil {
				return err
			}
			if u.ID == "" {
				u = User{ID: uuid.NewString(), Email: e}
				if _, err := tx.Exec(ctx, `INSERT INTO console_users (id, email, password_hash, created_at) VALUES ($1, $2, $3, $4)`, u.ID, e, h, now); err != nil {
					return err
				}
			} else if _, err := tx.Exec(ctx, `UPDATE console_users SET password_hash = $2 WHERE id = $1`, u.ID, h); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if !VerifyPassword(*hash, password) {
				return ErrWrongPassword
			}
		}
		var before *Membership
		if m, err := membership(ctx, tx, u.ID, inv.ProjectID); err == nil {
			before = &m
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		years := inv.AuditYears
		if years == nil {
			years = []int{}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO console_memberships (user_id, project_id, role, audit_years, ends_on, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (user_id, project_id) DO UPDATE SET role = EXCLUDED.role, audit_years = EXCLUDED.audit_years, ends_on = EXCLUDED.ends_on`,
			u.ID, inv.ProjectID, string(inv.Role), years, inv.EndsOn, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE console_invitations SET used_at = $2 WHERE token_hash = $1`, HashToken(token), now); err != nil {
			return err
		}
		after := map[string]any{"email": e, "role": inv.Role, "auditYears": inv.AuditYears, "endsOn": inv.EndsOn}
		var b any
		if before != nil {
			b = map[string]any{"email": e, "role": before.Role}
		}
		return Record(ctx, tx, Entry{At: now, ProjectID: inv.ProjectID, ActorID: u.ID, ActorEmail: e, Action: "invitation.accept", Target: e, Before: b, After: after})
	})
	return u, err
}

// Authenticate returns the user of email and password. An unknown e-mail
// costs the time of a wrong password and gives the same error.
func (s *Store) Authenticate(ctx context.Context, email, password string) (User, bool, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	var u User
	var hash *string
	err := s.pool.QueryRow(ctx, `SELECT id::text, email, password_hash FROM console_users WHERE lower(email) = $1`, e).Scan(&u.ID, &u.Email, &hash)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && hash == nil) {
		VerifyPassword(dummyHash, password)
		return User{}, false, nil
	}
	if err != nil {
		return User{}, false, err
	}
	if !VerifyPassword(*hash, password) {
		return User{}, false, nil
	}
	return u, true, nil
}

// UserByEmail returns the account of an e-mail address.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	var u User
	err := s.pool.QueryRow(ctx, `SELECT id::text, email FROM console_users WHERE lower(email) = lower($1)`, strings.TrimSpace(email)).Scan(&u.ID, &u.Email)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, ErrNotFound
	}
	return u, err
}

// HasPassword reports whether the account of email exists and has set its password.
func (s *Store) HasPassword(ctx context.Context, email string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM console_users WHERE lower(email) = lower($1) AND password_hash IS NOT NULL)`, email).Scan(&ok)
	return ok, err
}

// RecordFailure notes a failed sign-in for each subject (the account, the
// address) and forgets the subject's failures older than a day.
func (s *Store) RecordFailure(ctx context.Context, now time.Time, subjects ...string) error {
	for _, sub := range subjects {
		if _, err := s.pool.Exec(ctx, `INSERT INTO console_signin_failures (subject, at) VALUES ($1, $2)`, sub, now); err != nil {
			return err
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM console_signin_failures WHERE subject = $1 AND at < $2`, sub, now.Add(-24*time.Hour)); err != nil {
			return err
		}
	}
	return nil
}

// Failures counts the failed sign-ins of subject in the window (since, until].
func (s *Store) Failures(ctx context.Context, subject string, since, until time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM console_signin_failures WHERE subject = $1 AND at > $2 AND at <= $3`, subject, since, until).Scan(&n)
	return n, err
}

// ClearFailures forgets an account's failed sign-ins after it signed in.
func (s *Store) ClearFailures(ctx context.Context, subject string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM console_signin_failures WHERE subject = $1`, subject)
	return err
}

// UseForm records that a one-time form was submitted; false when it was before.
func (s *Store) UseForm(ctx context.Context, formID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO console_form_uses (form_id) VALUES ($1) ON CONFLICT DO NOTHING`, formID)
	return tag.RowsAffected() == 1, err
}

// Session is a signed-in user's server-side session.
type Session struct {
	User      User
	CSRF      string
	CreatedAt time.Time
	LastSeen  time.Time
	ViewTest  bool // the session looks at test data (else live)
	// ViewChosen: the session chose ViewTest with the header's switch;
	// until then a page shows the data of its project's mode.
	ViewChosen bool
	TOTP       bool // the user's second factor is in force
	// Pending: the password was right, the second factor is still to be
	// entered; the session opens no page but the code's.
	Pending bool
}

// Timeouts of a session: idle (no request) and absolute (since sign-in).
type Timeouts struct {
	Idle, Absolute time.Duration
}

// Expired reports whether a session created at created and last seen at
// seen has ended at now. Pure.
func (t Timeouts) Expired(created, seen, now time.Time) bool {
	return now.Sub(seen) > t.Idle || now.Sub(created) > t.Absolute
}

// sessionKept is how long an ended session's row stays (for questions
// about a recent sign-in) before a new sign-in of the user removes it.
const sessionKept = 30 * 24 * time.Hour

// StartSession creates a session for u and returns its id (the cookie's
// value, stored only as its hash). The user's sessions that ended, or
// began, more than sessionKept ago are removed.
func (s *Store) StartSession(ctx context.Context, u User, now time.Time) (string, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE user_id = $1 AND (revoked_at < $2 OR created_at < $2)`, u.ID, now.Add(-sessionKept)); err != nil {
		return "", err
	}
	id := NewToken()
	_, err := s.pool.Exec(ctx, `INSERT INTO console_sessions (id_hash, user_id, csrf_token, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $4)`,
		HashToken(id), u.ID, NewToken(), now)
	return id, err
}

// Session returns the live session of id and marks it seen (at most once a
// minute, to spare writes). An ended session is ErrNotFound.
func (s *Store) Session(ctx context.Context, id string, t Timeouts, now time.Time) (Session, error) {
	var ses Session
	var view *bool
	err := s.pool.QueryRow(ctx, `SELECT u.id::text, u.email, s.csrf_token, s.created_at, s.last_seen_at, s.view_test,
			u.totp_confirmed_at IS NOT NULL, s.second_factor_pending
		FROM console_sessions s JOIN console_users u ON u.id = s.user_id
		WHERE s.id_hash = $1 AND s.revoked_at IS NULL`, HashToken(id)).
		Scan(&ses.User.ID, &ses.User.Email, &ses.CSRF, &ses.CreatedAt, &ses.LastSeen, &view, &ses.TOTP, &ses.Pending)
	if view != nil {
		ses.ViewTest, ses.ViewChosen = *view, true
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, err
	}
	if t.Expired(ses.CreatedAt, ses.LastSeen, now) {
		_, _ = s.pool.Exec(ctx, `UPDATE console_sessions SET revoked_at = $2 WHERE id_hash = $1 AND revoked_at IS NULL`, HashToken(id), now)
		return Session{}, ErrNotFound
	}
	if now.Sub(ses.LastSeen) > time.Minute {
		if _, err := s.pool.Exec(ctx, `UPDATE console_sessions SET last_seen_at = $2 WHERE id_hash = $1`, HashToken(id), now); err != nil {
			return Session{}, err
		}
	}
	return ses, nil
}

// EndSession ends one session.
func (s *Store) EndSession(ctx context.Context, id string, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE console_sessions SET revoked_at = $2 WHERE id_hash = $1 AND revoked_at IS NULL`, HashToken(id), now)
	return err
}

// EndAllSessions ends every session of a user ("sign out everywhere").
func (s *Store) EndAllSessions(ctx context.Context, userID string, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE console_sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`, userID, now)
	return tag.RowsAffected(), err
}

const membershipCols = `m.user_id::text, u.email, m.project_id::text, p.name, m.role, m.audit_years, m.ends_on, m.created_at`

func scanMembership(row pgx.Row) (Membership, error) {
	var m Membership
	var role string
	err := row.Scan(&m.UserID, &m.Email, &m.ProjectID, &m.ProjectName, &role, &m.AuditYears, &m.EndsOn, &m.CreatedAt)
	m.Role = Role(role)
	return m, err
}

func membership(ctx context.Context, q querier, userID, projectID string) (Membership, error) {
	if _, err := uuid.Parse(projectID); err != nil {
		return Membership{}, ErrNotFound
	}
	m, err := scanMembership(q.QueryRow(ctx, `SELECT `+membershipCols+` FROM console_memberships m
		JOIN console_users u ON u.id = m.user_id JOIN projects p ON p.id = m.project_id
		WHERE m.user_id = $1 AND m.project_id = $2`, userID, projectID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Membership{}, ErrNotFound
	}
	return m, err
}

// Membership returns the user's membership in force in a project;
// ErrNotFound when there is none (or an auditor's has ended).
func (s *Store) Membership(ctx context.Context, userID, projectID string, now time.Time) (Membership, error) {
	m, err := membership(ctx, s.pool, userID, projectID)
	if err != nil {
		return Membership{}, err
	}
	if !m.Active(now) {
		return Membership{}, ErrNotFound
	}
	return m, nil
}

// Projects returns the user's memberships in force, by project name.
func (s *Store) Projects(ctx context.Context, userID string, now time.Time) ([]Membership, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+membershipCols+` FROM console_memberships m
		JOIN console_users u ON u.id = m.user_id JOIN projects p ON p.id = m.project_id
		WHERE m.user_id = $1 ORDER BY p.name, p.id`, userID)
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Membership, error) { return scanMembership(r) })
	var out []Membership
	for _, m := range all {
		if m.Active(now) {
			out = append(out, m)
		}
	}
	return out, err
}

// Members returns the members of a project, by e-mail.
func (s *Store) Members(ctx context.Context, projectID string) ([]Membership, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+membershipCols+` FROM console_memberships m
		JOIN console_users u ON u.id = m.user_id JOIN projects p ON p.id = m.project_id
		WHERE m.project_id = $1 ORDER BY u.email LIMIT 1000`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Membership, error) { return scanMembership(r) })
}

// ErrLastOwner: a project keeps at least one owner.
var ErrLastOwner = apperr.Field("role", "the project's last owner cannot be removed or given another role")

// SetRole changes a member's role (an auditor's years and end date with it)
// and logs the change by actor.
func (s *Store) SetRole(ctx context.Context, actor User, projectID, userID string, role Role, years []int, endsOn *time.Time, now time.Time) error {
	if err := AuditScope(role, years, endsOn); err != nil {
		return err
	}
	if years == nil {
		years = []int{}
	}
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := lockMember(ctx, tx, projectID, userID)
		if err != nil {
			return err
		}
		if before.Role == Owner && role != Owner {
			if err := keepOwner(ctx, tx, projectID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE console_memberships SET role = $3, audit_years = $4, ends_on = $5 WHERE project_id = $1 AND user_id = $2`,
			projectID, userID, string(role), years, endsOn); err != nil {
			return err
		}
		return Record(ctx, tx, Entry{At: now, ProjectID: projectID, ActorID: actor.ID, ActorEmail: actor.Email, Action: "member.role", Target: before.Email,
			Before: map[string]any{"role": before.Role, "auditYears": before.AuditYears, "endsOn": before.EndsOn},
			After:  map[string]any{"role": role, "auditYears": years, "endsOn": endsOn}})
	})
}

// RemoveMember removes a member from the project and logs it.
func (s *Store) RemoveMember(ctx context.Context, actor User, projectID, userID string, now time.Time) error {
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		before, err := lockMember(ctx, tx, projectID, userID)
		if err != nil {
			return err
		}
		if before.Role == Owner {
			if err := keepOwner(ctx, tx, projectID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_memberships WHERE project_id = $1 AND user_id = $2`, projectID, userID); err != nil {
			return err
		}
		return Record(ctx, tx, Entry{At: now, ProjectID: projectID, ActorID: actor.ID, ActorEmail: actor.Email, Action: "member.remove", Target: before.Email,
			Before: map[string]any{"role": before.Role}})
	})
}

func lockMember(ctx context.Context, tx pgx.Tx, projectID, userID string) (Membership, error) {
	if _, err := uuid.Parse(userID); err != nil {
		return Membership{}, ErrNotFound
	}
	// The project's memberships are locked together, so that two owners
	// demoting each other at once leave one.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM console_memberships WHERE project_id = $1 FOR UPDATE`, projectID); err != nil {
		return Membership{}, err
	}
	return membership(ctx, tx, userID, projectID)
}

func keepOwner(ctx context.Context, tx pgx.Tx, projectID string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM console_memberships WHERE project_id = $1 AND role = 'owner'`, projectID).Scan(&n); err != nil {
		return err
	}
	if n <= 1 {
		return ErrLastOwner
	}
	return nil
}

// Entry is one change recorded in the console's log.
type Entry struct {
	ID         int64
	At         time.Time
	ProjectID  string // empty: not of one project
	ActorID    string // empty: the command line
	ActorEmail string
	Action     string
	Target     string
	Before     any // JSON; nil: none
	After      any
}

// Record appends an entry to the console's log (in the caller's transaction
// when q is one).
func Record(ctx context.Context, q querier, e Entry) error {
	enc := func(v any) ([]byte, error) {
		if v == nil {
			return nil, nil
		}
		return json.Marshal(v)
	}
	b, err := enc(e.Before)
	if err != nil {
		return err
	}
	a, err := enc(e.After)
	if err != nil {
		return err
	}
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	_, err = q.Exec(ctx, `INSERT INTO console_audit_log (at, project_id, actor_id, actor_email, action, target, before, after)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.At, nullable(e.ProjectID), nullable(e.ActorID), e.ActorEmail, e.Action, e.Target, b, a)
	if err != nil {
		return fmt.Errorf("record console change: %w", err)
	}
	return nil
}

// Record appends an entry to the console's log.
func (s *Store) Record(ctx context.Context, e Entry) error { return Record(ctx, s.pool, e) }

// AuditLog returns a project's log, newest first: up to limit entries with
// an id below before (0: from the newest), and whether more follow.
func (s *Store) AuditLog(ctx context.Context, projectID string, before int64, limit int) ([]Entry, bool, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, coalesce(actor_id::text, ''), actor_email, action, target, before, after
		FROM console_audit_log WHERE project_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, projectID, before, limit+1)
	if err != nil {
		return nil, false, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Entry, error) {
		var e Entry
		var b, a []byte
		err := r.Scan(&e.ID, &e.At, &e.ActorID, &e.ActorEmail, &e.Action, &e.Target, &b, &a)
		if b != nil {
			e.Before = json.RawMessage(b)
		}
		if a != nil {
			e.After = json.RawMessage(a)
		}
		e.ProjectID = projectID
		return e, err
	})
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// StartReset stores a password-reset link for the account of email and
// returns its token; ok is false when no account with a password has that
// address (the caller answers the same either way).
func (s *Store) StartReset(ctx context.Context, email string, now time.Time) (tok string, u User, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT id::text, email FROM console_users WHERE lower(email) = lower($1) AND password_hash IS NOT NULL`,
		strings.TrimSpace(email)).Scan(&u.ID, &u.Email)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", User{}, false, nil
	}
	if err != nil {
		return "", User{}, false, err
	}
	tok = NewToken()
	_, err = s.pool.Exec(ctx, `INSERT INTO console_password_resets (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		HashToken(tok), u.ID, now, now.Add(ResetTTL))
	return tok, u, err == nil, err
}

// ResetValid reports whether a reset token is unused and not expired.
func (s *Store) ResetValid(ctx context.Context, tok string, now time.Time) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM console_password_resets WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2)`,
		HashToken(tok), now).Scan(&ok)
	return ok, err
}

// Reset sets a new password through a reset link, uses the link up, ends
// every session of the account and logs the change.
func (s *Store) Reset(ctx context.Context, tok, password, confirm string, now time.Time) (User, error) {
	var u User
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT u.id::text, u.email FROM console_password_resets r JOIN console_users u ON u.id = r.user_id
			WHERE r.token_hash = $1 AND r.used_at IS NULL AND r.expires_at > $2 FOR UPDATE OF r`, HashToken(tok), now).Scan(&u.ID, &u.Email)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.New(apperr.NotFound, "reset_not_found", "this reset link is unknown, used or expired")
		}
		if err != nil {
			return err
		}
		h, err := newPasswordHash(password, confirm)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE console_users SET password_hash = $2 WHERE id = $1`, u.ID, h); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE console_password_resets SET used_at = $2 WHERE token_hash = $1`, HashToken(tok), now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE console_sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`, u.ID, now); err != nil {
			return err
		}
		return Record(ctx, tx, Entry{At: now, ActorID: u.ID, ActorEmail: u.Email, Action: "user.password_reset", Target: u.Email})
	})
	return u, err
}

// Pending is an invitation not yet accepted and not expired, as owners see
// it (its token is never shown again).
type Pending struct {
	ID        string // the hex of the token's hash: names it in forms
	Email     string
	Role      Role
	ExpiresAt time.Time
}

// PendingInvitations lists a project's open invitations, newest first.
func (s *Store) PendingInvitations(ctx context.Context, projectID string, now time.Time) ([]Pending, error) {
	rows, err := s.pool.Query(ctx, `SELECT encode(token_hash, 'hex'), email, role, expires_at FROM console_invitations
		WHERE project_id = $1 AND used_at IS NULL AND expires_at > $2 ORDER BY created_at DESC LIMIT 200`, projectID, now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Pending, error) {
		var p Pending
		var role string
		err := r.Scan(&p.ID, &p.Email, &role, &p.ExpiresAt)
		p.Role = Role(role)
		return p, err
	})
}

// Withdraw ends an open invitation of the project (its link no longer
// works) and logs it.
func (s *Store) Withdraw(ctx context.Context, actor User, projectID, id string, now time.Time) error {
	if b, err := hex.DecodeString(id); err != nil || len(b) != sha256.Size {
		return ErrNotFound
	}
	return store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var email, role string
		err := tx.QueryRow(ctx, `UPDATE console_invitations SET expires_at = $3
			WHERE project_id = $1 AND token_hash = decode($2, 'hex') AND used_at IS NULL AND expires_at > $3
			RETURNING email, role`, projectID, id, now).Scan(&email, &role)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		return Record(ctx, tx, Entry{At: now, ProjectID: projectID, ActorID: actor.ID, ActorEmail: actor.Email, Action: "member.withdraw", Target: email,
			Before: map[string]any{"email": email, "role": role, "pending": true}, After: map[string]any{"pending": false}})
	})
}
