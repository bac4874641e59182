package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/project"
)

// TestTaskActions: recheck and dismiss on the Tasks page call the API's use
// cases with their answers: a hold is rechecked (not dismissed), an
// informational task dismissed (not rechecked), another project's task is
// 404, auditors and developers are refused, a form without its token too,
// and each action is in the change log.
func TestTaskActions(t *testing.T) {
	e := newEnv(t, "", time.Time{})
	ctx := context.Background()
	pid, other := e.project(), e.project()
	hold, info, foreign := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, row := range []struct{ id, pid, kind, subject string }{
		{hold, pid, project.CauseSellerData, project.SharedSubject},
		{info, pid, "payment_amount_mismatch", "ORDER-T1"},
		{foreign, other, "payment_amount_mismatch", "ORDER-T2"},
	} {
		if _, err := e.pool.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details) VALUES ($1, $2, $3, $4, jsonb_build_object('orderNo', $4::text))`,
			row.id, row.pid, row.kind, row.subject); err != nil {
			t.Fatal(err)
		}
	}
	base := "/console/p/" + pid + "/tasks/"
	acc, _ := e.member(pid, account.Accountant)

	p := acc.get("/console/p/" + pid + "/tasks")
	for _, want := range []string{base + hold + "/recheck", base + info + "/dismiss", `href="/console/p/` + pid + `/settings#sellerName"`,
		"Fill in the missing fields in Settings"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the tasks page lacks %s", want)
		}
	}
	if strings.Contains(p.body, base+hold+"/dismiss") || strings.Contains(p.body, base+info+"/recheck") {
		t.Error("a hold offers dismiss or an informational task recheck")
	}
	for _, r := range []account.Role{account.Auditor, account.Developer} {
		b, _ := e.member(pid, r)
		if p := b.post(base+info+"/dismiss", nil); p.status != http.StatusForbidden {
			t.Errorf("%s dismisses: %d, want 403", r, p.status)
		}
		if p := b.get("/console/p/" + pid + "/tasks"); strings.Contains(p.body, "/dismiss") {
			t.Errorf("%s is offered dismiss", r)
		}
	}
	if p := acc.do("POST", base+info+"/dismiss", url.Values{"csrf": {"wrong"}}, nil); p.status != http.StatusForbidden {
		t.Errorf("dismiss without the form token: %d, want 403", p.status)
	}
	if p := acc.post("/console/p/"+pid+"/tasks/"+foreign+"/dismiss", nil); p.status != http.StatusNotFound {
		t.Errorf("another project's task through this project: %d, want 404", p.status)
	}
	if p := acc.post("/console/p/"+other+"/tasks/"+foreign+"/dismiss", nil); p.status != http.StatusNotFound {
		t.Errorf("another project's page: %d, want 404", p.status)
	}
	if p := acc.post(base+"not-a-uuid/recheck", nil); p.status != http.StatusNotFound {
		t.Errorf("an unknown task: %d, want 404", p.status)
	}
	if p := acc.post(base+hold+"/dismiss", nil); p.status != http.StatusConflict || !strings.Contains(p.body, "holds orders back") {
		t.Errorf("dismiss of a hold: %d, want 409", p.status)
	}
	if p := acc.post(base+info+"/recheck", nil); p.status != http.StatusConflict || !strings.Contains(p.body, "holds no order back") {
		t.Errorf("recheck of an informational task: %d, want 409", p.status)
	}
	var status string
	_ = e.pool.QueryRow(ctx, `SELECT status FROM tasks WHERE id = $1`, info).Scan(&status)
	if status != "open" {
		t.Fatalf("refused actions changed the task: %s", status)
	}

	// The project's seller data complete: the recheck reports the cause
	// fixed; the owner dismisses the informational task (twice: the second
	// is answered as it is).
	if p := acc.post(base+hold+"/recheck", nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/p/"+pid+"/tasks?done=recheck" {
		t.Errorf("recheck: %d %s", p.status, p.header.Get("Location"))
	}
	owner, _ := e.member(pid, account.Owner)
	for range 2 {
		if p := owner.post(base+info+"/dismiss", nil); p.status != http.StatusSeeOther {
			t.Errorf("dismiss: %d", p.status)
		}
	}
	var resolution string
	_ = e.pool.QueryRow(ctx, `SELECT status, coalesce(resolution, '') FROM tasks WHERE id = $1`, info).Scan(&status, &resolution)
	if status != "resolved" || resolution != "dismissed" {
		t.Errorf("dismissed task: %s %s", status, resolution)
	}
	var fixes int
	_ = e.pool.QueryRow(ctx, `SELECT count(*) FROM cause_fixes WHERE task_id = $1`, hold).Scan(&fixes)
	if fixes == 0 {
		t.Error("the recheck reported no fix")
	}
	for _, a := range []struct{ action, target string }{{"task.recheck", hold}, {"task.dismiss", info}} {
		var n int
		_ = e.pool.QueryRow(ctx, `SELECT count(*) FROM console_audit_log WHERE project_id = $1 AND action = $2 AND target = $3`, pid, a.action, a.target).Scan(&n)
		if n == 0 {
			t.Errorf("no %s in the change log", a.action)
		}
	}
	// History: the dismissed task among the resolved ones.
	if p := acc.get("/console/p/" + pid + "/tasks?status=resolved"); !strings.Contains(p.body, "t-"+info) || !strings.Contains(p.body, "dismissed") {
		t.Error("the resolved tasks do not show the dismissed task")
	}
}
