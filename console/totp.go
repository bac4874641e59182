package console

import (
	"net/http"
	"net/url"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
)

type securityData struct {
	TOTP      bool
	Enrolment *account.Enrolment // the new secret, shown this once
	Codes     []string           // the recovery codes, shown this once
	Required  bool               // a project requires the second factor: enrol first
	Next      string
}

// security is the user's second factor: on or off, enrolment.
func (c *Console) security(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := requireSession(v); err != nil {
		return err
	}
	d := securityData{TOTP: v.Session.TOTP, Required: r.URL.Query().Get("required") != "", Next: r.URL.Query().Get("next")}
	return c.renderSecurity(w, v, http.StatusOK, d)
}

func (c *Console) renderSecurity(w http.ResponseWriter, v *view, status int, d securityData) error {
	v.Title = v.T("security.title")
	if d.Required && !d.TOTP {
		v.Notice = v.T("security.required")
	}
	v.Data = d
	c.render(w, status, "security", v)
	return nil
}

// startTOTP shows a new secret (text, otpauth URI and QR code) to enter in
// an authenticator app, with the form for its first code.
func (c *Console) startTOTP(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := checkForm(r, v); err != nil {
		return err
	}
	if v.Session.TOTP {
		return c.renderSecurity(w, v, http.StatusConflict, securityData{TOTP: true})
	}
	e, err := c.acc.StartTOTP(r.Context(), v.Session.User, "Order-to-Invoice")
	if err != nil {
		return err
	}
	return c.renderSecurity(w, v, http.StatusOK, securityData{Enrolment: &e, Next: r.PostForm.Get("next")})
}

// confirmTOTP puts the second factor in force with a code of the app and
// shows the recovery codes once.
func (c *Console) confirmTOTP(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := checkForm(r, v); err != nil {
		return err
	}
	codes, err := c.acc.ConfirmTOTP(r.Context(), v.Session.User, r.PostForm.Get("code"), c.cfg.Now())
	if err != nil {
		if err := v.fieldError(err); err != nil {
			return err
		}
		return c.renderSecurity(w, v, http.StatusUnprocessableEntity, securityData{Next: r.PostForm.Get("next")})
	}
	return c.renderSecurity(w, v, http.StatusOK, securityData{TOTP: true, Codes: codes, Next: safeNext(r.PostForm.Get("next"))})
}

// codePage asks a session waiting for the second factor for its code.
func (c *Console) codePage(w http.ResponseWriter, r *http.Request, v *view) error {
	if v.pending == nil {
		http.Redirect(w, r, Prefix+"sign-in", http.StatusSeeOther)
		return nil
	}
	v.Title = v.T("code.title")
	v.Data = signInData{Next: r.URL.Query().Get("next")}
	c.render(w, http.StatusOK, "code", v)
	return nil
}

// code checks the second factor of a waiting session; right, the session
// is replaced by a full one (a new id), wrong, it counts as a failed
// sign-in of the account.
func (c *Console) code(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "bad_form", "the form could not be read")
	}
	if v.pending == nil {
		http.Redirect(w, r, Prefix+"sign-in", http.StatusSeeOther)
		return nil
	}
	ctx := r.Context()
	now := c.cfg.Now()
	subject := "acc:" + v.pending.User.Email
	n, err := c.acc.Failures(ctx, subject, now.Add(-SignInWindow), now)
	if err != nil {
		return err
	}
	next := r.PostForm.Get("next")
	v.Title = v.T("code.title")
	v.Data = signInData{Next: next}
	if n >= MaxFailuresPerAcc {
		v.Error = v.T("error.rate_limited")
		c.render(w, http.StatusTooManyRequests, "code", v)
		return nil
	}
	if err := c.acc.VerifySecondFactor(ctx, v.pending.User, r.PostForm.Get("code"), now); err != nil {
		if err := v.fieldError(err); err != nil {
			return err
		}
		if err := c.acc.RecordFailure(ctx, now, subject); err != nil {
			return err
		}
		c.render(w, http.StatusUnauthorized, "code", v)
		return nil
	}
	_ = c.acc.ClearFailures(ctx, subject)
	return c.startSession(w, r, v, v.pending.User, safeNext(next))
}

// needsTOTP sends a member without a second factor to enrol when the
// project requires one.
func (c *Console) needsTOTP(w http.ResponseWriter, r *http.Request, v *view) (bool, error) {
	if v.Session.TOTP {
		return false, nil
	}
	req, err := c.acc.RequiresTOTP(r.Context(), v.Member.ProjectID)
	if err != nil || !req {
		return false, err
	}
	next := ""
	if r.Method == http.MethodGet {
		next = "&next=" + url.QueryEscape(r.URL.RequestURI())
	}
	http.Redirect(w, r, Prefix+"account/security?required=1"+next, http.StatusSeeOther)
	return true, nil
}
