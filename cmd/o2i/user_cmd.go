package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/console"
	"github.com/o2i-service/o2i/internal/account"
)

// signInLink is what `user invite --unless-member` prints for a member who
// has set a password: where to sign in (no new invitation).
type signInLink struct {
	Link      string       `json:"link"`
	Email     string       `json:"email"`
	ProjectID string       `json:"projectId"`
	Role      account.Role `json:"role"`
	Member    bool         `json:"member"`
}

// userCmd: `o2i user invite` invites a person to a project's console, the
// way an owner does in the console: an e-mail with a one-time link (72 h),
// and the link printed as the first field of the JSON.
func userCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "invite" {
		fmt.Fprint(stderr, "usage: o2i user invite --project ID --email X --role owner|developer|accountant|auditor [--audit-years 2024,2025 --ends-on YYYY-MM-DD]\n")
		return errUsage
	}
	f := newAdminFlags("user invite", cfg, stderr)
	id := f.String("project", "", "project id (required)")
	email := f.String("email", "", "the invitee's e-mail address (required)")
	roleFlag := f.String("role", "", "owner, developer, accountant or auditor (required)")
	yearsFlag := f.String("audit-years", "", "auditors: the years under audit, comma-separated")
	endsFlag := f.String("ends-on", "", "auditors: the last day of the membership, YYYY-MM-DD")
	unlessMember := f.Bool("unless-member", false, "when the address is already a member with a password, print the sign-in link instead of inviting")
	noMail := f.Bool("no-mail", false, "do not send the e-mail (the printed link is the only copy)")
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if *id == "" || *email == "" || *roleFlag == "" {
		fmt.Fprint(stderr, "--project, --email and --role are required\n")
		return errUsage
	}
	role, err := account.ParseRole("role", *roleFlag)
	if err != nil {
		return err
	}
	var years []int
	for _, p := range strings.Split(*yearsFlag, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		y, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("--audit-years: not a year: %q", p)
		}
		years = append(years, y)
	}
	var ends *time.Time
	if *endsFlag != "" {
		t, err := time.Parse("2006-01-02", *endsFlag)
		if err != nil {
			return fmt.Errorf("--ends-on: a date YYYY-MM-DD, got %q", *endsFlag)
		}
		ends = &t
	}
	return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
		acc := account.New(pool)
		now := time.Now()
		if *unlessMember {
			if u, err := acc.UserByEmail(ctx, *email); err == nil {
				has, err := acc.HasPassword(ctx, u.Email)
				if err != nil {
					return nil, err
				}
				if m, err := acc.Membership(ctx, u.ID, *id, now); err == nil && has {
					return signInLink{Link: cfg.PublicURL + console.Prefix + "sign-in?email=" + url.QueryEscape(u.Email), Email: u.Email, ProjectID: m.ProjectID, Role: m.Role, Member: true}, nil
				}
			}
		}
		var sender account.Sender
		if !*noMail {
			sender = mailSender(cfg)
		}
		return acc.SendInvitation(ctx, sender, cfg.PublicURL, *id, *email, role, years, ends, account.User{}, now)
	})
}
