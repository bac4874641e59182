package invoicing_test

import (
	"context"
	"net/mail"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestMailerProjectSender: the invoice e-mail's From header carries the
// project's sender name (RFC 2047-encoded when not ASCII) on the service's
// own address, and its Reply-To is the project's reply address, else the
// invoice contact; as the real SMTP sink receives it.
func TestMailerProjectSender(t *testing.T) {
	t.Parallel()
	a := mailArchive(t)
	v := newInvoicing(t, false, func(s *project.Settings) { s.ContactEmail = "kontakt@example.com" })
	m := testMailer(t, v, a, testenv.Env("O2I_SMTP_URL"))
	ctx := context.Background()

	for _, tc := range []struct {
		name, fromName, replyTo string
		wantName, wantReplyTo   string
		encoded                 bool // the raw header holds an encoded word
	}{
		{"none: the service's name", "", "", "Test", "kontakt@example.com", false},
		{"ASCII", "Muster Handel Rechnungen", "", "Muster Handel Rechnungen", "kontakt@example.com", false},
		{"non-ASCII and quotes", `Müller & Söhne "Rechnung"`, "buchhaltung@example.com", `Müller & Söhne "Rechnung"`, "buchhaltung@example.com", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := project.Set(ctx, v.pool, v.project, map[string]string{"mailFromName": tc.fromName, "mailReplyTo": tc.replyTo}, nil); err != nil {
				t.Fatal(err)
			}
			// A mailer of a service running beside the tests may send the
			// delivery first, with its own sender name: then another one.
			var to string
			for try := 1; ; try++ {
				to = "sender-" + uuid.NewString()[:8] + "@example.com"
				id := mailed(t, v, a, to)
				ours := false
				testenv.Eventually(t, 60*time.Second, "the delivery sent", func() bool {
					n, err := m.SendDue(ctx, 100)
					if err != nil {
						t.Fatal(err)
					}
					ours = ours || n > 0 // this project's one delivery due: claimed by this mailer
					return delivery(t, v, id).status == "sent"
				})
				if ours {
					break
				}
				if try == 3 {
					t.Fatal("every delivery was sent by another mailer")
				}
			}
			got := testenv.Mails(t, to)
			if len(got) != 1 {
				t.Fatalf("%d messages to %s, want 1", len(got), to)
			}
			from, err := got[0].Header.AddressList("From")
			if err != nil || len(from) != 1 {
				t.Fatalf("From %q: %v", got[0].Header.Get("From"), err)
			}
			if from[0].Name != tc.wantName || from[0].Address != "rechnung@localhost" {
				t.Errorf("From %q (name %q, address %q), want name %q on rechnung@localhost", got[0].Header.Get("From"), from[0].Name, from[0].Address, tc.wantName)
			}
			if r, err := mail.ParseAddress(got[0].Header.Get("Reply-To")); err != nil || r.Address != tc.wantReplyTo {
				t.Errorf("Reply-To %q, want %s", got[0].Header.Get("Reply-To"), tc.wantReplyTo)
			}
			raw, err := os.ReadFile(got[0].File)
			if err != nil {
				t.Fatal(err)
			}
			line := headerLine(string(raw), "From")
			if enc := strings.Contains(line, "=?utf-8?") || strings.Contains(line, "=?UTF-8?"); enc != tc.encoded {
				t.Errorf("raw From header %q: encoded word %v, want %v", line, enc, tc.encoded)
			}
			for _, r := range line {
				if r > 0x7e {
					t.Errorf("raw From header %q is not ASCII", line)
					break
				}
			}
		})
	}
}

// headerLine is the raw header name of a message, unfolded.
func headerLine(raw, name string) string {
	head, _, _ := strings.Cut(strings.ReplaceAll(raw, "\r\n", "\n"), "\n\n")
	var out []string
	in := false
	for _, l := range strings.Split(head, "\n") {
		switch {
		case strings.HasPrefix(strings.ToLower(l), strings.ToLower(name)+":"):
			in = true
			out = append(out, l)
		case in && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")):
			out = append(out, strings.TrimSpace(l))
		default:
			in = false
		}
	}
	return strings.Join(out, " ")
}
