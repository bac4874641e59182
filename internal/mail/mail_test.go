package mail

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestNewSender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url, from string
		addr            string
		implicit        bool
		user, pass      string
		wantErr         string
	}{
		{name: "local sink", url: "smtp://127.0.0.1:22525", from: "a@localhost", addr: "127.0.0.1:22525"},
		{name: "relay with credentials, submission port by default", url: "smtp://user%40example.com:p%3Ass@smtp.example.com", from: "Rechnungen <r@example.com>",
			addr: "smtp.example.com:587", user: "user@example.com", pass: "p:ss"},
		{name: "implicit TLS", url: "smtps://u:p@smtp.example.com", from: "r@example.com", addr: "smtp.example.com:465", implicit: true, user: "u", pass: "p"},
		{name: "wrong scheme", url: "http://smtp.example.com", from: "r@example.com", wantErr: "scheme"},
		{name: "no host", url: "smtp://:25", from: "r@example.com", wantErr: "host"},
		{name: "bad port", url: "smtp://h:99999", from: "r@example.com", wantErr: "port"},
		{name: "no sender", url: "smtp://h:25", from: " ", wantErr: "sender"},
		{name: "bad sender", url: "smtp://h:25", from: "not an address", wantErr: "sender"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewSender(tc.url, tc.from)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one about %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Addr() != tc.addr || s.implicit != tc.implicit || s.user != tc.user || s.pass != tc.pass {
				t.Errorf("sender %s implicit %v user %q pass %q", s.Addr(), s.implicit, s.user, s.pass)
			}
		})
	}
}

// TestCompose: the message carries the German text as UTF-8, the Reply-To
// and each attachment with its type; an unusable recipient is permanent.
func TestCompose(t *testing.T) {
	t.Parallel()
	s, err := NewSender("smtp://127.0.0.1:25", "Rechnungen <r@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.Compose(Message{To: "kunde@example.com", ReplyTo: "kontakt@example.com", Subject: "Ihre Rechnung RE-1",
		Text: "Grüße", Attachments: []Attachment{{Name: "RE-1.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.7")}}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := msg.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Reply-To: <kontakt@example.com>", "To: <kunde@example.com>", "Subject: Ihre Rechnung RE-1",
		"Content-Type: application/pdf", `filename="RE-1.pdf"`, "charset=UTF-8"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("message lacks %q:\n%s", want, b.String())
		}
	}
	_, err = s.Compose(Message{To: "not an address", Subject: "x"})
	var pe *PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("bad recipient: %v, want a *PermanentError", err)
	}
}
