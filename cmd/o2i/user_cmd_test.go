package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/account"
	"github.com/o2i-service/o2i/internal/testenv"
)

func TestUserInviteCommand(t *testing.T) {
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	addr := "cli-" + uuid.NewString()[:8] + "@example.com"

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--email", addr, "--role", "owner"}, "--project, --email and --role are required"},
		{[]string{"--project", pid, "--email", addr, "--role", "admin"}, "role must be one of owner, developer, accountant, auditor"},
		{[]string{"--project", pid, "--email", "not-an-address", "--role", "owner"}, "email"},
		{[]string{"--project", pid, "--email", addr, "--role", "auditor", "--audit-years", "2025"}, "endsOn"},
		{[]string{"--project", uuid.NewString(), "--email", addr, "--role", "owner"}, "no project"},
	} {
		_, err := runCmd(t, append([]string{"user", "invite"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("user invite %v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}

	out, err := runCmd(t, "user", "invite", "--project", pid, "--email", addr, "--role", "owner", "--unless-member", "--no-mail")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "{\n  \"link\": ") {
		t.Errorf("link is not the first field: %s", out)
	}
	var inv account.Invited
	if err := json.Unmarshal([]byte(out), &inv); err != nil {
		t.Fatal(err)
	}
	if inv.Mailed || inv.Role != account.Owner || inv.Email != addr || !strings.Contains(inv.Link, "/console/invite/") {
		t.Errorf("invitation %+v", inv)
	}
	if d := time.Until(inv.ExpiresAt); d < 71*time.Hour || d > 73*time.Hour {
		t.Errorf("the invitation expires in %s, want 72h", d)
	}
	// Accepted, --unless-member prints where to sign in, with no new invitation.
	tok := inv.Link[strings.LastIndex(inv.Link, "/")+1:]
	if _, err := account.New(pool).Accept(context.Background(), tok, addr, "a long enough password", "a long enough password", time.Now()); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, "user", "invite", "--project", pid, "--email", addr, "--role", "owner", "--unless-member")
	if err != nil {
		t.Fatal(err)
	}
	var again struct {
		Link   string
		Member bool
	}
	if err := json.Unmarshal([]byte(out), &again); err != nil || !again.Member || !strings.Contains(again.Link, "/console/sign-in?email=") {
		t.Errorf("--unless-member for a member: %s", out)
	}
	// The invitation is in the project's change log, by the command line.
	es, _, err := account.New(pool).AuditLog(context.Background(), pid, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var invited bool
	for _, e := range es {
		invited = invited || (e.Action == "member.invite" && e.ActorEmail == "(command line)" && e.Target == addr)
	}
	if !invited {
		t.Errorf("no member.invite entry by the command line: %+v", es)
	}
}
