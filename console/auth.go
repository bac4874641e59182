package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
)

var (
	errRateLimited = apperr.New(apperr.RateLimited, "rate_limited", "too many attempts")
	errResetGone   = apperr.New(apperr.NotFound, "reset_not_found", "this reset link is unknown, used or expired")
)

// home lists the signed-in user's projects.
func (c *Console) home(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := requireSession(v); err != nil {
		return err
	}
	ms, err := c.acc.Projects(r.Context(), v.Session.User.ID, c.cfg.Now())
	if err != nil {
		return err
	}
	v.Title = v.T("projects.title")
	v.Data = ms
	c.render(w, http.StatusOK, "projects", v)
	return nil
}

type signInData struct {
	Email, Next string
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request, v *view) error {
	if v.Session != nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return nil
	}
	v.Title = v.T("signin.title")
	if r.URL.Query().Get("signed_out") != "" {
		v.Notice = v.T("signout.done")
	}
	if r.URL.Query().Get("reset") != "" {
		v.Notice = v.T("reset.done")
	}
	v.Data = signInData{Email: r.URL.Query().Get("email"), Next: r.URL.Query().Get("next")}
	c.render(w, http.StatusOK, "signin", v)
	return nil
}

// signIn checks the limits, then the password; every failure gets the same
// answer, whether the account exists or not.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "bad_form", "the form could not be read")
	}
	ctx := r.Context()
	now := c.cfg.Now()
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	password := r.PostForm.Get("password")
	accSubject, ipSubject := "acc:"+email, "ip:"+c.clientAddr(r)
	since := now.Add(-SignInWindow)
	nAcc, err := c.acc.Failures(ctx, accSubject, since, now)
	if err != nil {
		return err
	}
	nIP, err := c.acc.Failures(ctx, ipSubject, since, now)
	if err != nil {
		return err
	}
	data := signInData{Email: r.PostForm.Get("email"), Next: r.PostForm.Get("next")}
	v.Title = v.T("signin.title")
	v.Data = data
	if nAcc >= MaxFailuresPerAcc || nIP >= MaxFailuresPerIP {
		w.Header().Set("Retry-After", fmt.Sprint(int(SignInWindow.Seconds())))
		v.Error = v.T("error.rate_limited")
		c.render(w, http.StatusTooManyRequests, "signin", v)
		return nil
	}
	if len(password) > account.MaxPasswordLen {
		password = ""
	}
	u, ok, err := c.acc.Authenticate(ctx, email, password)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.acc.RecordFailure(ctx, now, accSubject, ipSubject); err != nil {
			return err
		}
		slog.InfoContext(ctx, "console sign-in failed", "addr", c.clientAddr(r))
		v.Error = v.T("signin.failed")
		c.render(w, http.StatusUnauthorized, "signin", v)
		return nil
	}
	totp, err := c.acc.HasTOTP(ctx, u.ID)
	if err != nil {
		return err
	}
	if totp { // the second factor next: a session that opens only the code's page
		if v.sessionID != "" {
			if err := c.acc.EndSession(ctx, v.sessionID, now); err != nil {
				return err
			}
		}
		id, err := c.acc.StartPendingSession(ctx, u, now)
		if err != nil {
			return err
		}
		c.setSession(w, id)
		http.Redirect(w, r, Prefix+"sign-in/code?next="+urlQueryEscape(safeNext(data.Next)), http.StatusSeeOther)
		return nil
	}
	_ = c.acc.ClearFailures(ctx, accSubject)
	return c.startSession(w, r, v, u, safeNext(data.Next))
}

// startSession ends the session the browser had (a new id at every
// sign-in) and starts a new one.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, v *view, u account.User, next string) error {
	now := c.cfg.Now()
	if v.sessionID != "" {
		if err := c.acc.EndSession(r.Context(), v.sessionID, now); err != nil {
			return err
		}
	}
	id, err := c.acc.StartSession(r.Context(), u, now)
	if err != nil {
		return err
	}
	c.setSession(w, id)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := checkForm(r, v); err != nil {
		return err
	}
	if err := c.acc.EndSession(r.Context(), v.sessionID, c.cfg.Now()); err != nil {
		return err
	}
	c.clearSession(w)
	http.Redirect(w, r, Prefix+"sign-in?signed_out=1", http.StatusSeeOther)
	return nil
}

func (c *Console) signOutEverywhere(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := checkForm(r, v); err != nil {
		return err
	}
	now := c.cfg.Now()
	n, err := c.acc.EndAllSessions(r.Context(), v.Session.User.ID, now)
	if err != nil {
		return err
	}
	if err := c.acc.Record(r.Context(), account.Entry{At: now, ActorID: v.Session.User.ID, ActorEmail: v.Session.User.Email,
		Action: "user.sign_out_everywhere", Target: v.Session.User.Email, After: map[string]any{"sessionsEnded": n}}); err != nil {
		return err
	}
	c.clearSession(w)
	http.Redirect(w, r, Prefix+"sign-in?signed_out=1", http.StatusSeeOther)
	return nil
}

type inviteData struct {
	Invitation account.Invitation
	Intro      string
	Existing   bool // the invitee has an account: the password proves it
	Email      string
}

func (c *Console) invitation(r *http.Request, v *view) (inviteData, error) {
	inv, err := c.acc.Invitation(r.Context(), r.PathValue("token"), c.cfg.Now())
	if err != nil {
		return inviteData{}, err
	}
	existing, err := c.acc.HasPassword(r.Context(), inv.Email)
	if err != nil {
		return inviteData{}, err
	}
	return inviteData{Invitation: inv, Existing: existing, Email: inv.Email,
		Intro: fmt.Sprintf(v.T("invite.intro"), inv.ProjectName, v.T("role."+string(inv.Role)))}, nil
}

func (c *Console) invitePage(w http.ResponseWriter, r *http.Request, v *view) error {
	d, err := c.invitation(r, v)
	if err != nil {
		return err
	}
	v.Title = v.T("invite.title")
	v.Data = d
	c.render(w, http.StatusOK, "invite", v)
	return nil
}

func (c *Console) acceptInvite(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "bad_form", "the form could not be read")
	}
	d, err := c.invitation(r, v)
	if err != nil {
		return err
	}
	f := r.PostForm
	u, err := c.acc.Accept(r.Context(), r.PathValue("token"), f.Get("email"), f.Get("password"), f.Get("password_confirm"), c.cfg.Now())
	if err != nil {
		if err := v.fieldError(err); err != nil {
			return err
		}
		d.Email = f.Get("email")
		v.Title = v.T("invite.title")
		v.Data = d
		c.render(w, http.StatusUnprocessableEntity, "invite", v)
		return nil
	}
	return c.startSession(w, r, v, u, Prefix+"p/"+d.Invitation.ProjectID+"/")
}

func (c *Console) resetRequestPage(w http.ResponseWriter, r *http.Request, v *view) error {
	v.Title = v.T("reset.title")
	c.render(w, http.StatusOK, "reset_request", v)
	return nil
}

// resetRequest sends a reset link when the address has an account and
// answers the same when it has none. Requests count as failures of the
// sign-in limits, so that the form cannot flood a mailbox.
func (c *Console) resetRequest(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "bad_form", "the form could not be read")
	}
	ctx := r.Context()
	now := c.cfg.Now()
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	accSubject, ipSubject := "reset:"+email, "reset-ip:"+c.clientAddr(r)
	nAcc, err := c.acc.Failures(ctx, accSubject, now.Add(-SignInWindow), now)
	if err != nil {
		return err
	}
	nIP, err := c.acc.Failures(ctx, ipSubject, now.Add(-SignInWindow), now)
	if err != nil {
		return err
	}
	v.Title = v.T("reset.title")
	if nAcc >= 3 || nIP >= MaxFailuresPerIP {
		return errRateLimited
	}
	if err := c.acc.RecordFailure(ctx, now, accSubject, ipSubject); err != nil {
		return err
	}
	tok, u, ok, err := c.acc.StartReset(ctx, email, now)
	if err != nil {
		return err
	}
	if ok && c.cfg.Sender != nil {
		link := c.cfg.PublicURL + account.ResetPath(tok)
		if err := c.cfg.Sender.Send(ctx, account.ResetMessage(u.Email, link, now.Add(account.ResetTTL))); err != nil {
			slog.WarnContext(ctx, "console: reset mail not sent", "err", err)
		}
	}
	v.Notice = v.T("reset.sent")
	c.render(w, http.StatusOK, "reset_request", v)
	return nil
}

func (c *Console) resetPage(w http.ResponseWriter, r *http.Request, v *view) error {
	ok, err := c.acc.ResetValid(r.Context(), r.PathValue("token"), c.cfg.Now())
	if err != nil {
		return err
	}
	if !ok {
		return errResetGone
	}
	v.Title = v.T("reset.new")
	c.render(w, http.StatusOK, "reset", v)
	return nil
}

func (c *Console) reset(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "bad_form", "the form could not be read")
	}
	u, err := c.acc.Reset(r.Context(), r.PathValue("token"), r.PostForm.Get("password"), r.PostForm.Get("password_confirm"), c.cfg.Now())
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Kind == apperr.NotFound {
			return errResetGone
		}
		if err := v.fieldError(err); err != nil {
			return err
		}
		v.Title = v.T("reset.new")
		c.render(w, http.StatusUnprocessableEntity, "reset", v)
		return nil
	}
	c.clearSession(w)
	http.Redirect(w, r, Prefix+"sign-in?reset=1&email="+urlQueryEscape(u.Email), http.StatusSeeOther)
	return nil
}
