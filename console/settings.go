package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/project"
)

// settingField is one setting as the settings page shows it.
type settingField struct {
	Name    string // the JSON name, the form field's name
	Kind    string
	Value   string // as typed or stored; a secret's never
	Secret  bool
	Set     bool     // a secret has a value
	Options []string // a choice's values
	Error   string
}

type settingsGroup struct {
	Name    string
	Fields  []settingField
	CanEdit bool
	Guarded bool // password again (and the second factor when on); e-mailed to every owner
}

type settingsData struct {
	Groups      []settingsGroup
	WebhookURL  string
	TestMode    bool
	RequireTOTP bool
	ProjectName string
	Reset       any // the counts of a reset just done
}

// choices are the values of the settings chosen from a list.
var choices = map[string][]string{
	"accounting":      {project.Accrual, project.Cash},
	"chartOfAccounts": {"", "SKR03", "SKR04"},
	"debtors":         {"", "collective", "per_customer"},
	"testMode":        {"true", "false"},
	"ossRegistered":   {"false", "true"},
}

// webhookPath is the path of the payment provider's webhook of a project
// (command's route POST /v1/webhooks/stripe/{projectId}).
func webhookPath(projectID string) string { return "/v1/webhooks/stripe/" + projectID }

// settingsPage renders the settings with typed values (nil: the stored
// ones) of one group.
func (c *Console) settingsPage(w http.ResponseWriter, r *http.Request, v *view, status int, group string, typed url.Values) error {
	p, err := project.Get(r.Context(), c.pool, v.Member.ProjectID)
	if err != nil {
		return err
	}
	req, err := c.acc.RequiresTOTP(r.Context(), p.ID)
	if err != nil {
		return err
	}
	d := settingsData{WebhookURL: c.cfg.PublicURL + webhookPath(p.ID), TestMode: p.TestMode, RequireTOTP: req, ProjectName: p.Name}
	for _, g := range project.Groups {
		a, _ := account.SettingAction(g)
		sg := settingsGroup{Name: g, CanEdit: account.Allows(v.Member.Role, a), Guarded: account.Guarded(g)}
		for _, f := range project.FieldsOf(g) {
			sf := settingField{Name: f.Name, Kind: f.Kind, Secret: f.Secret, Set: p.SecretSet(f.Name), Options: choices[f.Name], Error: v.FieldError(f.Name)}
			sf.Value = p.Value(f.Name)
			if g == group && typed != nil && !f.Secret {
				if _, ok := typed[f.Name]; ok {
					sf.Value = typed.Get(f.Name)
				}
			}
			sg.Fields = append(sg.Fields, sf)
		}
		d.Groups = append(d.Groups, sg)
	}
	if s := r.URL.Query().Get("saved"); s != "" {
		v.Notice = fmt.Sprintf(v.T("settings.saved"), v.T("settings."+s))
	}
	v.Title = v.T("settings.title")
	v.Data = d
	c.render(w, status, "settings", v)
	return nil
}

func (c *Console) settings(w http.ResponseWriter, r *http.Request, v *view) error {
	return c.settingsPage(w, r, v, http.StatusOK, "", nil)
}

// saveSettings is the form of one group of settings: the changed values
// (a secret: only when a new one is typed) go through internal/project's
// rules, as `o2i project set`'s do, and are recorded in the change log in
// the same transaction; a guarded group needs the password again (and the
// second factor when on) and is e-mailed to every owner.
func saveSettings(group string) projectHandler {
	return func(c *Console, w http.ResponseWriter, r *http.Request, v *view) error {
		return c.saveSettings(w, r, v, group)
	}
}

func (c *Console) saveSettings(w http.ResponseWriter, r *http.Request, v *view, group string) error {
	ctx := r.Context()
	f := r.PostForm
	refuse := func(status int, err error) error {
		if err := v.fieldError(err); err != nil {
			return err
		}
		return c.settingsPage(w, r, v, status, group, f)
	}
	if account.Guarded(group) {
		if err := c.reauthenticate(ctx, v, f.Get("password"), f.Get("code")); err != nil {
			return refuse(http.StatusUnprocessableEntity, err)
		}
	}
	p, err := project.Get(ctx, c.pool, v.Member.ProjectID)
	if err != nil {
		return err
	}
	values := map[string]string{}
	for _, fl := range project.FieldsOf(group) {
		if _, ok := f[fl.Name]; !ok {
			continue
		}
		val := f.Get(fl.Name)
		switch {
		case fl.Secret:
			if val != "" {
				values[fl.Name] = val
			}
		case fl.Name == "accountingFrom":
			if strings.TrimSpace(val) != "" {
				values[fl.Name] = val
				values["accounting"] = f.Get("accounting")
			}
		case strings.TrimSpace(val) != p.Value(fl.Name):
			values[fl.Name] = val
		}
	}
	if len(values) == 0 {
		http.Redirect(w, r, v.Base()+"settings?saved="+group, http.StatusSeeOther)
		return nil
	}
	actor := c.actor(v)
	now := c.cfg.Now()
	_, err = project.Set(ctx, c.pool, p.ID, values, func(ctx context.Context, tx pgx.Tx, before, after project.Project) error {
		b, a := map[string]any{}, map[string]any{}
		for name := range values {
			fl, _ := project.FieldNamed(name)
			if fl.Secret {
				b[name] = map[bool]string{true: "set", false: "not set"}[before.SecretSet(name)]
				a[name] = "replaced"
				continue
			}
			b[name], a[name] = before.Value(name), after.Value(name)
		}
		return account.Record(ctx, tx, account.Entry{At: now, ProjectID: p.ID, ActorID: actor.ID, ActorEmail: actor.Email,
			Action: "settings." + group, Target: p.Name, Before: b, After: a})
	})
	if err != nil {
		return refuse(http.StatusUnprocessableEntity, err)
	}
	if account.Guarded(group) {
		c.tellOwners(ctx, p, group, actor)
	}
	http.Redirect(w, r, v.Base()+"settings?saved="+group, http.StatusSeeOther)
	return nil
}

// errReauth: the password (or the second factor) typed again is wrong.
var errReauth = apperr.Field("password", "the password is wrong; a change of the bank account or the payment provider's connection needs your password")

// reauthenticate checks the password typed again (and the second factor's
// code when on); failures count as failed sign-ins of the account.
func (c *Console) reauthenticate(ctx context.Context, v *view, password, code string) error {
	now := c.cfg.Now()
	subject := "reauth:" + v.Session.User.ID
	n, err := c.acc.Failures(ctx, subject, now.Add(-SignInWindow), now)
	if err != nil {
		return err
	}
	if n >= MaxFailuresPerAcc {
		return apperr.Field("password", "too many wrong attempts; try again in %d minutes", int(SignInWindow.Minutes()))
	}
	ok, err := c.acc.PasswordOK(ctx, v.Session.User.ID, password)
	if err != nil {
		return err
	}
	if !ok {
		_ = c.acc.RecordFailure(ctx, now, subject)
		return errReauth
	}
	if v.Session.TOTP {
		if err := c.acc.VerifySecondFactor(ctx, v.Session.User, code, now); err != nil {
			_ = c.acc.RecordFailure(ctx, now, subject)
			return err
		}
	}
	return nil
}

// tellOwners e-mails every owner of the project that a guarded group was
// changed (no value in it: the change log has who and when).
func (c *Console) tellOwners(ctx context.Context, p project.Project, group string, actor account.User) {
	if c.cfg.Sender == nil {
		return
	}
	owners, err := c.acc.OwnerEmails(ctx, p.ID)
	if err != nil {
		slog.WarnContext(ctx, "console: owners not told of a guarded change", "project", p.ID, "err", err)
		return
	}
	at := c.cfg.Now().UTC().Format("2006-01-02 15:04 UTC")
	de, en := "Die Bankverbindung", "The bank account"
	if group == "provider" {
		de, en = "Die Verbindung zum Zahlungsdienstleister", "The payment provider's connection"
	}
	link := c.cfg.PublicURL + Prefix + "p/" + p.ID + "/audit"
	for _, to := range owners {
		m := mail.Message{To: to,
			Subject: fmt.Sprintf("%s von %s wurde geändert / %s of %s was changed", de, p.Name, en, p.Name),
			Text: fmt.Sprintf(`%[1]s des Projekts „%[2]s“ wurde am %[3]s von %[4]s geändert.
War das nicht abgesprochen, prüfen Sie es sofort im Änderungsprotokoll: %[5]s

%[6]s of the project "%[2]s" was changed at %[3]s by %[4]s.
If this was not agreed, check it at once in the change log: %[5]s
`, de, p.Name, at, actor.Email, link, en)}
		if err := c.cfg.Sender.Send(ctx, m); err != nil {
			slog.WarnContext(ctx, "console: owner not told of a guarded change", "project", p.ID, "err", err)
		}
	}
}

// switchView chooses the data the session looks at (test or live); the
// header shows it.
func (c *Console) switchView(w http.ResponseWriter, r *http.Request, v *view) error {
	test := r.PostForm.Get("view") == "test"
	if err := c.acc.SetViewTest(r.Context(), v.sessionID, test); err != nil {
		return err
	}
	http.Redirect(w, r, safeNext(r.PostForm.Get("next")), http.StatusSeeOther)
	return nil
}

// resetTestData discards the project's test data after the project's name
// was typed as confirmation.
func (c *Console) resetTestData(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	if r.PostForm.Get("confirm") != v.Member.ProjectName {
		return c.refuseSettings(w, r, v, apperr.Field("confirm", "type the project's name exactly to confirm the reset"))
	}
	if c.cfg.ResetTestData == nil {
		return apperr.New(apperr.Unavailable, "unavailable", "the reset of test data is not available in this process")
	}
	res, err := c.cfg.ResetTestData(ctx, v.Member.ProjectID)
	if err != nil {
		return err
	}
	if err := c.acc.Record(ctx, account.Entry{At: c.cfg.Now(), ProjectID: v.Member.ProjectID, ActorID: v.Session.User.ID, ActorEmail: v.Session.User.Email,
		Action: "testdata.reset", Target: v.Member.ProjectName, After: res}); err != nil {
		return err
	}
	http.Redirect(w, r, v.Base()+"settings?saved=reset", http.StatusSeeOther)
	return nil
}

func (c *Console) refuseSettings(w http.ResponseWriter, r *http.Request, v *view, err error) error {
	if err := v.fieldError(err); err != nil {
		return err
	}
	return c.settingsPage(w, r, v, http.StatusUnprocessableEntity, "", nil)
}

// requireTOTP is the owner's choice whether the project's members need the
// second factor.
func (c *Console) requireTOTP(w http.ResponseWriter, r *http.Request, v *view) error {
	on := r.PostForm.Get("requireTotp") == "true"
	if on && !v.Session.TOTP {
		return c.refuseSettings(w, r, v, apperr.Field("requireTotp", "turn on your own second factor first"))
	}
	if err := c.acc.SetRequireTOTP(r.Context(), c.actor(v), v.Member.ProjectID, on, c.cfg.Now()); err != nil {
		return err
	}
	http.Redirect(w, r, v.Base()+"settings?saved=security", http.StatusSeeOther)
	return nil
}
