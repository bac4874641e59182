package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/query"
)

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// projectPage is one page or form of a project: its route, the action the
// member's role must allow, and its handler. A new page is one more row.
type projectPage struct {
	pattern string
	action  account.Action
	handle  projectHandler
}

// projectPages are the project's pages and forms; Routes lists them for the
// role matrix test.
var projectPages []projectPage

func init() {
	projectPages = []projectPage{
		{"GET /console/p/{project}/{$}", account.ViewProject, (*Console).overview},
		{"GET /console/p/{project}/keys", account.ViewKeys, (*Console).keys},
		{"POST /console/p/{project}/keys", account.ManageKeys, (*Console).createKey},
		{"POST /console/p/{project}/keys/{key}/revoke", account.ManageKeys, (*Console).revokeKey},
		{"POST /console/p/{project}/keys/{key}/rotate", account.ManageKeys, (*Console).rotateKey},
		{"GET /console/p/{project}/members", account.ViewMembers, (*Console).members},
		{"POST /console/p/{project}/members", account.ManageMembers, (*Console).invite},
		{"POST /console/p/{project}/members/{user}/role", account.ManageMembers, (*Console).setRole},
		{"POST /console/p/{project}/members/{user}/remove", account.ManageMembers, (*Console).removeMember},
		{"POST /console/p/{project}/invitations/{invitation}/withdraw", account.ManageMembers, (*Console).withdraw},
		{"GET /console/p/{project}/tasks", account.ViewTasks, (*Console).tasks},
		{"POST /console/p/{project}/tasks/{task}/recheck", account.ActOnTasks, (*Console).recheckTask},
		{"POST /console/p/{project}/tasks/{task}/dismiss", account.ActOnTasks, (*Console).dismissTask},
		{"GET /console/p/{project}/audit", account.ViewAuditLog, (*Console).auditLog},
		{"GET /console/p/{project}/settings", account.ViewSettings, (*Console).settings},
		{"POST /console/p/{project}/settings/seller", account.EditSeller, saveSettings("seller")},
		{"POST /console/p/{project}/settings/contact", account.EditSeller, saveSettings("contact")},
		{"POST /console/p/{project}/settings/accounting", account.EditSeller, saveSettings("accounting")},
		{"POST /console/p/{project}/settings/payment", account.EditSeller, saveSettings("payment")},
		{"POST /console/p/{project}/settings/bank", account.EditBank, saveSettings("bank")},
		{"POST /console/p/{project}/settings/provider", account.EditProvider, saveSettings("provider")},
		{"POST /console/p/{project}/settings/live", account.GoLive, saveSettings("live")},
		{"POST /console/p/{project}/settings/require-totp", account.RequireTOTP, (*Console).requireTOTP},
		{"POST /console/p/{project}/view", account.SwitchTestMode, (*Console).switchView},
		{"POST /console/p/{project}/test-data/reset", account.ResetTestData, (*Console).resetTestData},
		{"GET /console/p/{project}/orders", account.ViewOrders, (*Console).orders},
		{"GET /console/p/{project}/orders/{order}", account.ViewOrders, (*Console).order},
		{"GET /console/p/{project}/order", account.ViewOrders, (*Console).order}, // ?no=: "." and ".."
		{"GET /console/p/{project}/invoices", account.ViewInvoices, (*Console).invoices},
		{"GET /console/p/{project}/invoices/{invoice}", account.ViewInvoices, (*Console).invoice},
		{"GET /console/p/{project}/invoices/{invoice}/pdf", account.ViewInvoices, (*Console)(nil).documentFile("pdf")},
		{"GET /console/p/{project}/invoices/{invoice}/xml", account.ViewInvoices, (*Console)(nil).documentFile("xml")},
		{"GET /console/p/{project}/activity", account.ViewActivity, (*Console).activity},
		{"GET /console/p/{project}/activity/{request}", account.ViewActivity, (*Console).request},
		{"GET /console/p/{project}/exports", account.Export, (*Console).exports},
		{"GET /console/p/{project}/exports/datev", account.Export, (*Console)(nil).download(query.DownloadDATEV)},
		{"GET /console/p/{project}/exports/oss", account.Export, (*Console)(nil).download(query.DownloadOSS)},
		{"GET /console/p/{project}/exports/ecsl", account.Export, (*Console)(nil).download(query.DownloadECSL)},
		{"GET /console/p/{project}/archive", account.ViewArchive, (*Console).archive},
		{"GET /console/p/{project}/archive/verify", account.ViewArchive, (*Console).verify},
		{"GET /console/p/{project}/archive/export", account.ViewArchive, (*Console)(nil).download(query.DownloadArchive)},
	}
}

// Route is one project page or form of the console (for tests and the README).
type Route struct {
	Method, Path string // Path with {project} and other placeholders
	Action       account.Action
}

// Routes lists the project pages and forms with the action each needs.
func Routes() []Route {
	out := make([]Route, 0, len(projectPages))
	for _, p := range projectPages {
		m, path, _ := strings.Cut(p.pattern, " ")
		out = append(out, Route{Method: m, Path: strings.TrimSuffix(path, "{$}"), Action: p.action})
	}
	return out
}

// projectHandler is a handler method of a project page.
type projectHandler func(c *Console, w http.ResponseWriter, r *http.Request, v *view) error

// nav lists the pages the member's role may see.
var nav = []struct {
	path, label string
	action      account.Action
}{
	{"", "nav.overview", account.ViewProject},
	{"tasks", "nav.tasks", account.ViewTasks},
	{"keys", "nav.keys", account.ViewKeys},
	{"members", "nav.members", account.ViewMembers},
	{"audit", "nav.audit", account.ViewAuditLog},
	{"settings", "nav.settings", account.ViewSettings},
	{"orders", "nav.orders", account.ViewOrders},
	{"invoices", "nav.invoices", account.ViewInvoices},
	{"exports", "nav.exports", account.Export},
	{"archive", "nav.archive", account.ViewArchive},
	{"activity", "nav.activity", account.ViewActivity},
}

// project checks, for every project page and form: a session, a membership
// in force in that project (else 404: another project's pages do not
// exist for the user), the role's right to the action (else 403), and for
// a POST the form token.
func (c *Console) project(action account.Action, h projectHandler) handler {
	return func(w http.ResponseWriter, r *http.Request, v *view) error {
		if err := requireSession(v); err != nil {
			return err
		}
		m, err := c.acc.Membership(r.Context(), v.Session.User.ID, r.PathValue("project"), c.cfg.Now())
		if errors.Is(err, account.ErrNotFound) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		v.Member = &m
		if !v.Session.ViewChosen { // the project's mode until the session chooses
			p, err := project.Get(r.Context(), c.pool, m.ProjectID)
			if err != nil {
				return err
			}
			v.Session.ViewTest = p.TestMode
		}
		base := Prefix + "p/" + m.ProjectID + "/"
		for _, n := range nav {
			if account.Allows(m.Role, n.action) {
				v.Nav = append(v.Nav, navItem{Href: base + n.path, Label: v.T(n.label), Current: r.URL.Path == base+n.path})
			}
		}
		if !account.Allows(m.Role, action) {
			return errForbidden
		}
		if sent, err := c.needsTOTP(w, r, v); err != nil || sent {
			return err
		}
		if r.Method == http.MethodPost {
			if err := checkForm(r, v); err != nil {
				return err
			}
		}
		return h(c, w, r, v)
	}
}

// base is the path of the view's project.
func (v *view) Base() string { return Prefix + "p/" + v.Member.ProjectID + "/" }

// Can reports whether the member may do action (templates show only what is allowed).
func (v *view) Can(action string) bool {
	return v.Member != nil && account.Allows(v.Member.Role, account.Action(action))
}

func (c *Console) actor(v *view) account.User { return v.Session.User }

type overviewData struct {
	TestMode  bool
	OpenTasks int
	MoreTasks bool
	Stats     *stats // orders, documents, waiting and lag (roles that see orders)
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, v *view) error {
	var d overviewData
	p, err := project.Get(r.Context(), c.pool, v.Member.ProjectID)
	if err != nil {
		return err
	}
	d.TestMode = p.TestMode
	if v.Can(string(account.ViewTasks)) && c.queries != nil {
		ts, _, more, err := c.queries.PageTasks(r.Context(), v.Member.ProjectID, query.TaskFilter{Status: "open"}, "", query.MaxLimit)
		if err != nil {
			return err
		}
		d.OpenTasks, d.MoreTasks = len(ts), more
	}
	if v.Can(string(account.ViewOrders)) && c.queries != nil {
		st, err := c.queries.ProjectOverview(r.Context(), v.Member.ProjectID, c.cfg.Now())
		if err != nil {
			return err
		}
		d.Stats = newStats(st)
	}
	v.Title = v.T("overview.title")
	v.Data = d
	c.render(w, http.StatusOK, "overview", v)
	return nil
}

// keyRow is one key of the listing.
type keyRow struct {
	apikey.Info
	Expired bool
}

type keysData struct {
	Keys    []keyRow
	Created *apikey.Created // the new key, shown this once
	FormID  string          // makes the create form one-time
	Name    string
	Scopes  []string
	All     []string
	Expires []string
}

func (c *Console) keysData(ctx context.Context, v *view) (*keysData, error) {
	list, err := apikey.List(ctx, c.pool, v.Member.ProjectID, c.cfg.Now())
	if err != nil {
		return nil, err
	}
	d := &keysData{FormID: account.NewToken(), Expires: []string{"30d", "90d", "365d", "never"}}
	for _, s := range httpx.Scopes {
		d.All = append(d.All, string(s))
	}
	now := c.cfg.Now()
	for _, k := range list {
		d.Keys = append(d.Keys, keyRow{Info: k, Expired: k.ExpiresAt != nil && !k.ExpiresAt.After(now)})
	}
	return d, nil
}

// Has reports whether the form had scope s checked.
func (d *keysData) Has(s string) bool {
	for _, x := range d.Scopes {
		if x == s {
			return true
		}
	}
	return false
}

func (c *Console) keys(w http.ResponseWriter, r *http.Request, v *view) error {
	d, err := c.keysData(r.Context(), v)
	if err != nil {
		return err
	}
	if id := r.URL.Query().Get("revoked"); id != "" {
		v.Notice = fmt.Sprintf(v.T("keys.revoked_notice"), id)
	}
	v.Title = v.T("keys.title")
	v.Data = d
	c.render(w, http.StatusOK, "keys", v)
	return nil
}

// createKey creates a key with the rules of the command line (scopes,
// expiry) and shows its secret in this answer only; a resubmitted form
// creates nothing.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	f := r.PostForm
	name := strings.TrimSpace(f.Get("name"))
	scopes := f["scopes"]
	render := func(status int, created *apikey.Created) error {
		d, err := c.keysData(ctx, v)
		if err != nil {
			return err
		}
		d.Created = created
		if created == nil {
			d.Name, d.Scopes = name, scopes
		}
		v.Title = v.T("keys.title")
		v.Data = d
		c.render(w, status, "keys", v)
		return nil
	}
	sc, err := apikey.ParseScopes(strings.Join(scopes, ","))
	if err == nil && len(name) > 200 {
		err = apperr.Field("name", "the name may have at most 200 characters")
	}
	var life time.Duration
	if err == nil {
		life, err = apikey.ParseExpiry(f.Get("expires"))
	}
	if err != nil {
		if err := v.fieldError(err); err != nil {
			return err
		}
		return render(http.StatusUnprocessableEntity, nil)
	}
	if formID := f.Get("form_id"); formID != "" {
		fresh, err := c.acc.UseForm(ctx, "key:"+formID)
		if err != nil {
			return err
		}
		if !fresh {
			v.Notice = v.T("keys.shown_once")
			return render(http.StatusConflict, nil)
		}
	}
	created, err := apikey.Create(ctx, c.pool, v.Member.ProjectID, sc, life, name, apikey.Prefix)
	if err != nil {
		return err
	}
	if err := c.acc.Record(ctx, account.Entry{At: c.cfg.Now(), ProjectID: v.Member.ProjectID, ActorID: v.Session.User.ID, ActorEmail: v.Session.User.Email,
		Action: "key.create", Target: created.Prefix,
		After: map[string]any{"id": created.ID, "name": created.Name, "prefix": created.Prefix, "scopes": created.Scopes, "expiresAt": created.ExpiresAt}}); err != nil {
		return err
	}
	return render(http.StatusOK, &created)
}

func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	info, err := apikey.RevokeIn(ctx, c.pool, v.Member.ProjectID, r.PathValue("key"))
	if err != nil {
		return err
	}
	if err := c.acc.Record(ctx, account.Entry{At: c.cfg.Now(), ProjectID: v.Member.ProjectID, ActorID: v.Session.User.ID, ActorEmail: v.Session.User.Email,
		Action: "key.revoke", Target: info.Prefix,
		Before: map[string]any{"id": info.ID, "revokedAt": nil}, After: map[string]any{"id": info.ID, "revokedAt": info.RevokedAt}}); err != nil {
		return err
	}
	http.Redirect(w, r, v.Base()+"keys?revoked="+url.QueryEscape(info.Prefix), http.StatusSeeOther)
	return nil
}

func (c *Console) rotateKey(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	if formID := r.PostForm.Get("form_id"); formID != "" {
		fresh, err := c.acc.UseForm(ctx, "rotate:"+formID)
		if err != nil {
			return err
		}
		if !fresh {
			http.Redirect(w, r, v.Base()+"keys", http.StatusSeeOther)
			return nil
		}
	}
	created, old, err := apikey.Rotate(ctx, c.pool, v.Member.ProjectID, r.PathValue("key"))
	if err != nil {
		return err
	}
	if err := c.acc.Record(ctx, account.Entry{At: c.cfg.Now(), ProjectID: v.Member.ProjectID, ActorID: v.Session.User.ID, ActorEmail: v.Session.User.Email,
		Action: "key.rotate", Target: old.Prefix,
		Before: map[string]any{"id": old.ID, "prefix": old.Prefix}, After: map[string]any{"id": created.ID, "prefix": created.Prefix, "expiresAt": created.ExpiresAt}}); err != nil {
		return err
	}
	d, err := c.keysData(ctx, v)
	if err != nil {
		return err
	}
	d.Created = &created
	v.Title = v.T("keys.title")
	v.Data = d
	c.render(w, http.StatusOK, "keys", v)
	return nil
}

type membersData struct {
	Members []account.Membership
	Pending []account.Pending
	Roles   []account.Role
	Email   string
	Role    string
	Years   string
	EndsOn  string
}

func (c *Console) renderMembers(w http.ResponseWriter, r *http.Request, v *view, status int, d *membersData) error {
	ms, err := c.acc.Members(r.Context(), v.Member.ProjectID)
	if err != nil {
		return err
	}
	d.Members, d.Roles = ms, account.Roles
	if d.Pending, err = c.acc.PendingInvitations(r.Context(), v.Member.ProjectID, c.cfg.Now()); err != nil {
		return err
	}
	v.Title = v.T("members.title")
	v.Data = d
	c.render(w, status, "members", v)
	return nil
}

func (c *Console) members(w http.ResponseWriter, r *http.Request, v *view) error {
	if e := r.URL.Query().Get("invited"); e != "" {
		v.Notice = fmt.Sprintf(v.T("members.invited"), e)
	}
	return c.renderMembers(w, r, v, http.StatusOK, &membersData{Role: string(account.Accountant)})
}

// auditScope reads an auditor's years (comma-separated) and end date from a form.
func auditScope(role account.Role, yearsField, endsField string) ([]int, *time.Time, error) {
	if role != account.Auditor {
		return nil, nil, nil
	}
	var years []int
	for _, p := range strings.Split(yearsField, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		y, err := strconv.Atoi(p)
		if err != nil {
			return nil, nil, apperr.Field("auditYears", "not a year: %q", p)
		}
		years = append(years, y)
	}
	sort.Ints(years)
	var ends *time.Time
	if endsField != "" {
		t, err := time.Parse("2006-01-02", endsField)
		if err != nil {
			return nil, nil, apperr.Field("endsOn", "a date YYYY-MM-DD, got %q", endsField)
		}
		ends = &t
	}
	return years, ends, account.AuditScope(role, years, ends)
}

func (c *Console) invite(w http.ResponseWriter, r *http.Request, v *view) error {
	f := r.PostForm
	d := &membersData{Email: f.Get("email"), Role: f.Get("role"), Years: f.Get("auditYears"), EndsOn: f.Get("endsOn")}
	role, err := account.ParseRole("role", f.Get("role"))
	var years []int
	var ends *time.Time
	if err == nil {
		years, ends, err = auditScope(role, d.Years, d.EndsOn)
	}
	var inv account.Invited
	if err == nil {
		inv, err = c.acc.SendInvitation(r.Context(), c.cfg.Sender, c.cfg.PublicURL, v.Member.ProjectID, f.Get("email"), role, years, ends, c.actor(v), c.cfg.Now())
	}
	if err != nil {
		if err := v.fieldError(err); err != nil {
			return err
		}
		return c.renderMembers(w, r, v, http.StatusUnprocessableEntity, d)
	}
	http.Redirect(w, r, v.Base()+"members?invited="+url.QueryEscape(inv.Email), http.StatusSeeOther)
	return nil
}

func (c *Console) setRole(w http.ResponseWriter, r *http.Request, v *view) error {
	f := r.PostForm
	role, err := account.ParseRole("role", f.Get("role"))
	var years []int
	var ends *time.Time
	if err == nil {
		years, ends, err = auditScope(role, f.Get("auditYears"), f.Get("endsOn"))
	}
	if err == nil {
		err = c.acc.SetRole(r.Context(), c.actor(v), v.Member.ProjectID, r.PathValue("user"), role, years, ends, c.cfg.Now())
	}
	return c.afterMemberChange(w, r, v, err)
}

func (c *Console) removeMember(w http.ResponseWriter, r *http.Request, v *view) error {
	err := c.acc.RemoveMember(r.Context(), c.actor(v), v.Member.ProjectID, r.PathValue("user"), c.cfg.Now())
	return c.afterMemberChange(w, r, v, err)
}

// afterMemberChange answers a change of a membership: the members page
// again on success, 404 for a member of no such project, the page with the
// refusal next to its field otherwise.
func (c *Console) afterMemberChange(w http.ResponseWriter, r *http.Request, v *view, err error) error {
	if err != nil {
		if errors.Is(err, account.ErrNotFound) {
			return errNotFound
		}
		if err := v.fieldError(err); err != nil {
			return err
		}
		return c.renderMembers(w, r, v, http.StatusUnprocessableEntity, &membersData{Role: string(account.Accountant)})
	}
	http.Redirect(w, r, v.Base()+"members", http.StatusSeeOther)
	return nil
}

func (c *Console) withdraw(w http.ResponseWriter, r *http.Request, v *view) error {
	err := c.acc.Withdraw(r.Context(), c.actor(v), v.Member.ProjectID, r.PathValue("invitation"), c.cfg.Now())
	if errors.Is(err, account.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, v.Base()+"members", http.StatusSeeOther)
	return nil
}

type taskGroup struct {
	Type  string
	Tasks []query.Task
	Held  int    // the orders affected: those its tasks hold back now, and the orders of its tasks of one order
	Fix   string // the Settings field that fixes the cause ("" when none)
}

type tasksData struct {
	Status string
	Groups []taskGroup
	Next   string // the cursor of the next page; "" when none
	Done   string // recheck or dismiss: the action just taken
	CanAct bool
}

// IsHold reports whether a task of type kind holds orders back (recheck)
// rather than informs (dismiss): command/orders' own answer.
func (tasksData) IsHold(kind string) bool { return orders.IsHold(kind) }

// Do is the plain words of what to do about a task type.
func (tasksData) Do(v *view, kind string) string {
	if t := v.T("tasks.do." + kind); t != "tasks.do."+kind {
		return t
	}
	return v.T("tasks.do.other")
}

// taskFixes is the Settings field (its id on the Settings page) that fixes
// a cause of the project; the first field its details name as missing
// comes first.
var taskFixes = map[string]string{
	project.CauseSellerData:   "sellerName",
	project.CauseContactPhone: "contactPhone",
	"provider_rights_missing": "stripeApiKey",
}

// fixField is the Settings field that fixes task t ("" when none).
func fixField(t query.Task) string {
	f, ok := taskFixes[t.Type]
	if !ok {
		return ""
	}
	var d struct {
		Missing []string `json:"missing"`
	}
	if json.Unmarshal(t.Details, &d) != nil || len(d.Missing) == 0 {
		return f
	}
	// "sellerVatId or sellerTaxNumber": either will do, the first is the link.
	first, _, _ := strings.Cut(d.Missing[0], " or ")
	if first == "" || strings.ContainsAny(first, " /{") {
		return f
	}
	return first
}

// taskPage is how many tasks one page lists.
const taskPage = 100

// tasks lists the tasks of a status (open by default) a page at a time from
// the read model, grouped by cause within the page.
func (c *Console) tasks(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	f := query.TaskFilter{Status: q.Get("status")}
	if f.Status == "" {
		f.Status = "open"
	}
	ts, next, more, err := c.queries.PageTasks(r.Context(), v.Member.ProjectID, f, q.Get("cursor"), taskPage)
	if err != nil {
		return err
	}
	d := tasksData{Status: f.Status, CanAct: v.Can(string(account.ActOnTasks))}
	if done := q.Get("done"); done == "recheck" || done == "dismiss" {
		d.Done = done
	}
	if more {
		d.Next = next
	}
	idx := map[string]int{}
	for _, t := range ts {
		i, ok := idx[t.Type]
		if !ok {
			i = len(d.Groups)
			idx[t.Type] = i
			d.Groups = append(d.Groups, taskGroup{Type: t.Type, Fix: fixField(t)})
		}
		d.Groups[i].Tasks = append(d.Groups[i].Tasks, t)
		switch {
		case t.HeldOrders > 0:
			d.Groups[i].Held += t.HeldOrders
		case t.OrderNo != nil:
			d.Groups[i].Held++ // a task of one order that holds it not (or no more)
		}
	}
	v.Title = v.T("tasks.title")
	v.Data = d
	c.render(w, http.StatusOK, "tasks", v)
	return nil
}

// recheckTask evaluates the orders a hold holds again: the use case of
// POST /v1/tasks/{id}/recheck, with its answers (404 another project's or
// an unknown task, 409 a cause not fixed or a task that holds nothing).
func (c *Console) recheckTask(w http.ResponseWriter, r *http.Request, v *view) error {
	if c.cfg.RecheckTask == nil {
		return apperr.New(apperr.Unavailable, "unavailable", "the recheck of tasks is not available in this process")
	}
	res, enqueued, err := c.cfg.RecheckTask(r.Context(), v.Member.ProjectID, r.PathValue("task"))
	if err != nil {
		return err
	}
	if enqueued {
		if err := c.acc.Record(r.Context(), account.Entry{At: c.cfg.Now(), ProjectID: v.Member.ProjectID, ActorID: v.Session.User.ID,
			ActorEmail: v.Session.User.Email, Action: "task.recheck", Target: r.PathValue("task"), After: res}); err != nil {
			return err
		}
	}
	http.Redirect(w, r, v.Base()+"tasks?done=recheck", http.StatusSeeOther)
	return nil
}

// dismissTask resolves an informational task as dismissed: the use case of
// POST /v1/tasks/{id}/dismiss, with its answers (409 for a hold).
func (c *Console) dismissTask(w http.ResponseWriter, r *http.Request, v *view) error {
	if c.cfg.DismissTask == nil {
		return apperr.New(apperr.Unavailable, "unavailable", "the dismissal of tasks is not available in this process")
	}
	res, err := c.cfg.DismissTask(r.Context(), v.Member.ProjectID, r.PathValue("task"))
	if err != nil {
		return err
	}
	if err := c.acc.Record(r.Context(), account.Entry{At: c.cfg.Now(), ProjectID: v.Member.ProjectID, ActorID: v.Session.User.ID,
		ActorEmail: v.Session.User.Email, Action: "task.dismiss", Target: r.PathValue("task"), After: res}); err != nil {
		return err
	}
	http.Redirect(w, r, v.Base()+"tasks?done=dismiss", http.StatusSeeOther)
	return nil
}

type auditData struct {
	Entries []account.Entry
	Older   int64 // the cursor of the next page; 0: none
}

// JSON shows a recorded value.
func (auditData) JSON(v any) string {
	if v == nil {
		return ""
	}
	switch b := v.(type) {
	case json.RawMessage:
		return string(b)
	case []byte:
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

const auditPage = 50

func (c *Console) auditLog(w http.ResponseWriter, r *http.Request, v *view) error {
	var before int64
	if s := r.URL.Query().Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return apperr.Field("before", "a positive entry number, got %q", s)
		}
		before = n
	}
	es, more, err := c.acc.AuditLog(r.Context(), v.Member.ProjectID, before, auditPage)
	if err != nil {
		return err
	}
	d := auditData{Entries: es}
	if more {
		d.Older = es[len(es)-1].ID
	}
	v.Title = v.T("audit.title")
	v.Data = d
	c.render(w, http.StatusOK, "audit", v)
	return nil
}
