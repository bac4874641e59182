package account

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/o2i-service/o2i/internal/mail"
)

// Sender delivers one e-mail (internal/mail.Sender).
type Sender interface {
	Send(ctx context.Context, m mail.Message) error
}

// Invited is what an invitation gives its creator: the link first (the
// command line prints it as the first field).
type Invited struct {
	Link      string    `json:"link"`
	Email     string    `json:"email"`
	ProjectID string    `json:"projectId"`
	Role      Role      `json:"role"`
	ExpiresAt time.Time `json:"expiresAt"`
	Mailed    bool      `json:"mailed"`
}

// InvitationPath is the console path of an invitation link.
func InvitationPath(token string) string { return "/console/invite/" + token }

// ResetPath is the console path of a password-reset link.
func ResetPath(token string) string { return "/console/reset/" + token }

// SendInvitation stores an invitation, e-mails its link (built on the
// service's public URL) to the invitee and logs it. The console and the
// command line both invite through it.
func (s *Store) SendInvitation(ctx context.Context, sender Sender, publicURL, projectID, email string, role Role, years []int, endsOn *time.Time, actor User, now time.Time) (Invited, error) {
	tok, inv, err := s.Invite(ctx, projectID, email, role, years, endsOn, actor.ID, now)
	if err != nil {
		return Invited{}, err
	}
	out := Invited{Link: strings.TrimRight(publicURL, "/") + InvitationPath(tok), Email: inv.Email, ProjectID: inv.ProjectID, Role: inv.Role, ExpiresAt: inv.ExpiresAt}
	actorEmail := actor.Email
	if actorEmail == "" {
		actorEmail = "(command line)"
	}
	if err := s.Record(ctx, Entry{At: now, ProjectID: projectID, ActorID: actor.ID, ActorEmail: actorEmail, Action: "member.invite", Target: inv.Email,
		After: map[string]any{"email": inv.Email, "role": role, "auditYears": years, "endsOn": endsOn, "expiresAt": inv.ExpiresAt}}); err != nil {
		return Invited{}, err
	}
	if sender != nil {
		if err := sender.Send(ctx, InvitationMessage(inv, out.Link)); err != nil {
			return out, fmt.Errorf("send the invitation to %s: %w", inv.Email, err)
		}
		out.Mailed = true
	}
	return out, nil
}

// InvitationMessage is the e-mail of an invitation, German then English.
func InvitationMessage(inv Invitation, link string) mail.Message {
	until := inv.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC")
	return mail.Message{
		To:      inv.Email,
		Subject: fmt.Sprintf("Einladung zu %s / Invitation to %s", inv.ProjectName, inv.ProjectName),
		Text: fmt.Sprintf(`Sie wurden als %[1]s zum Projekt „%[2]s“ eingeladen.
Legen Sie Ihr Passwort über diesen Link fest (einmal gültig, bis %[3]s):

%[4]s

You have been invited to the project "%[2]s" as %[1]s.
Set your password with this link (valid once, until %[3]s):

%[4]s
`, inv.Role, inv.ProjectName, until, link),
	}
}

// ResetMessage is the e-mail of a password reset, German then English.
func ResetMessage(to, link string, expires time.Time) mail.Message {
	until := expires.UTC().Format("2006-01-02 15:04 UTC")
	return mail.Message{
		To:      to,
		Subject: "Passwort zurücksetzen / Reset your password",
		Text: fmt.Sprintf(`Über diesen Link legen Sie ein neues Passwort fest (einmal gültig, bis %[1]s):

%[2]s

Set a new password with this link (valid once, until %[1]s):

%[2]s

Wenn Sie das nicht angefordert haben, ignorieren Sie diese Nachricht. / If you did not ask for this, ignore this message.
`, until, link),
	}
}
