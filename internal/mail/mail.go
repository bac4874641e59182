// Package mail sends e-mail through an SMTP relay: a message with a plain
// text body and attachments, to one recipient, bounded in time. It knows
// nothing of invoices; command composes the messages and keeps the
// delivery records. It imports go-mail only.
package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// Attachment is one file of a message.
type Attachment struct {
	Name        string // file name shown to the recipient
	ContentType string // for example application/pdf
	Data        []byte
}

// Message is one e-mail to one recipient.
type Message struct {
	// MessageID, when set, is the message's Message-ID without the angle
	// brackets (local@domain): a resend of the same message carries the same
	// one, so the receiver can tell it is the same. Empty: a new one.
	MessageID   string
	To          string
	ReplyTo     string // empty: none
	Subject     string
	Text        string // the plain text body
	Attachments []Attachment
}

// Sender delivers messages to the relay of an smtp:// or smtps:// URL.
type Sender struct {
	host     string
	port     int
	implicit bool // smtps: TLS from the first byte; smtp: STARTTLS when the relay offers it
	user     string
	pass     string
	from     string
	domain   string // of the sender's address: the right side of the Message-IDs
	// Timeout bounds one SMTP session as a whole: go-mail gives each of its
	// three phases (the connection; greeting, STARTTLS and login; the message
	// with its data and QUIT) a deadline of a third of it, so that no session
	// outlasts it.
	Timeout time.Duration
}

// DefaultTimeout bounds one SMTP session unless the Sender says otherwise
// (15 s for each of its phases).
const DefaultTimeout = 45 * time.Second

// sessionPhases is how many deadlines of go-mail's client an SMTP session
// runs under, one after the other: the dial; the greeting, STARTTLS and
// login; and the message (its check, MAIL, RCPT, DATA and QUIT).
const sessionPhases = 3

// NewSender parses rawURL (smtp://user:pass@host:port, STARTTLS when the relay
// offers it; smtps://... for TLS from the start; the port defaults to 587 and
// 465) and returns a sender whose messages come from from (an address,
// optionally with a display name: "Rechnungen <rechnung@example.com>").
func NewSender(rawURL, from string) (*Sender, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("SMTP URL: %w", err)
	}
	s := &Sender{host: u.Hostname(), from: from, Timeout: DefaultTimeout}
	switch u.Scheme {
	case "smtp":
		s.port = 587
	case "smtps":
		s.port, s.implicit = 465, true
	default:
		return nil, fmt.Errorf("SMTP URL: scheme must be smtp or smtps, got %q", u.Scheme)
	}
	if s.host == "" {
		return nil, errors.New("SMTP URL: host missing")
	}
	if p := u.Port(); p != "" {
		if s.port, err = strconv.Atoi(p); err != nil || s.port <= 0 || s.port > 65535 {
			return nil, fmt.Errorf("SMTP URL: bad port %q", p)
		}
	}
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	if strings.TrimSpace(from) == "" {
		return nil, errors.New("sender address missing")
	}
	if err := gomail.NewMsg().From(from); err != nil {
		return nil, fmt.Errorf("sender address %q: %w", from, err)
	}
	s.domain = "localhost"
	if a, err := netmail.ParseAddress(from); err == nil {
		if at := strings.LastIndexByte(a.Address, '@'); at >= 0 && at < len(a.Address)-1 {
			s.domain = a.Address[at+1:]
		}
	}
	return s, nil
}

// Addr is the relay's host:port, for logs.
func (s *Sender) Addr() string { return s.host + ":" + strconv.Itoa(s.port) }

// SessionTimeout is the longest one Send may talk to the relay.
func (s *Sender) SessionTimeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultTimeout
	}
	return s.Timeout
}

// NewMessageID returns a new Message-ID (without the angle brackets) in the
// domain of the sender's address: random on the left, so that it is unique.
func (s *Sender) NewMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "o2i." + hex.EncodeToString(b[:]) + "@" + s.domain
}

// Compose renders m as the bytes of an RFC 5322 message (MIME multipart when
// it has attachments), as the relay receives it.
func (s *Sender) Compose(m Message) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithCharset(gomail.CharsetUTF8))
	if err := msg.From(s.from); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, &PermanentError{fmt.Errorf("recipient %q: %w", m.To, err)}
	}
	if m.ReplyTo != "" {
		if err := msg.ReplyTo(m.ReplyTo); err != nil {
			return nil, &PermanentError{fmt.Errorf("reply-to %q: %w", m.ReplyTo, err)}
		}
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	if m.MessageID != "" {
		if !validMessageID(m.MessageID) {
			return nil, &PermanentError{fmt.Errorf("message id %q: not local@domain", m.MessageID)}
		}
		msg.SetMessageIDWithValue(m.MessageID)
	} else {
		msg.SetMessageID()
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	for _, a := range m.Attachments {
		if err := msg.AttachReader(a.Name, bytes.NewReader(a.Data), gomail.WithFileContentType(gomail.ContentType(a.ContentType))); err != nil {
			return nil, fmt.Errorf("attach %s: %w", a.Name, err)
		}
	}
	return msg, nil
}

// validMessageID reports whether id can stand between the angle brackets of
// a Message-ID header: local@domain, printable ASCII without spaces or
// brackets.
func validMessageID(id string) bool {
	at := strings.IndexByte(id, '@')
	if at <= 0 || at != strings.LastIndexByte(id, '@') || at == len(id)-1 {
		return false
	}
	for _, r := range id {
		if r <= ' ' || r > '~' || r == '<' || r == '>' {
			return false
		}
	}
	return true
}

// Send delivers m within Timeout (and ctx). A failure the relay calls
// permanent (a 5xx answer) or a message that cannot be addressed is a
// *PermanentError; anything else (the relay down, a 4xx answer) may succeed
// later.
func (s *Sender) Send(ctx context.Context, m Message) error {
	msg, err := s.Compose(m)
	if err != nil {
		return err
	}
	timeout := s.SessionTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// go-mail sets a deadline of its timeout on the connection three times,
	// one after the other (see sessionPhases): a third of ours each keeps
	// the whole session within Timeout.
	opts := []gomail.Option{gomail.WithPort(s.port), gomail.WithTimeout(timeout / sessionPhases)}
	if s.implicit {
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.user != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(s.user), gomail.WithPassword(s.pass))
	}
	c, err := gomail.NewClient(s.host, opts...)
	if err != nil {
		return fmt.Errorf("SMTP client for %s: %w", s.Addr(), err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		var se *gomail.SendError
		if errors.As(err, &se) && se.ErrorCode() >= 500 && se.ErrorCode() < 600 {
			return &PermanentError{fmt.Errorf("SMTP %s: %w", s.Addr(), err)}
		}
		return fmt.Errorf("SMTP %s: %w", s.Addr(), err)
	}
	return nil
}

// PermanentError is a delivery that will fail the same way every time.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }
