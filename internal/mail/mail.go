// Package mail sends e-mail through an SMTP relay: a message with a plain
// text body and attachments, to one recipient, with a Message-ID of the
// caller's choosing (the same on every resend), bounded in time; a Conn keeps
// a worker's connection open between messages. It knows nothing of
// invoices; command composes the messages and keeps the delivery records.
// It imports go-mail only (its SMTP client; the message is composed with
// the standard library, see compose.go).
package mail

import (
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
	"github.com/wneessen/go-mail/smtp"
)

// Attachment is one file of a message.
type Attachment struct {
	Name        string // file name shown to the recipient
	ContentType string // a media type without parameters, for example application/pdf; empty: by the name's extension
	Data        []byte
}

// Message is one e-mail to one recipient.
type Message struct {
	// MessageID, when set, is the message's Message-ID without the angle
	// brackets (local@domain): a resend of the same message carries the same
	// one, so the receiver can tell it is the same. Empty: a new one.
	MessageID string
	// FromName, when set, is the From header's display name; the address
	// stays the sender's (its domain is the one SPF and DKIM vouch for).
	FromName    string
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
	from     *netmail.Address // the sender's address, with its display name if it has one
	domain   string           // of the sender's address: the right side of the Message-IDs
	// Timeout bounds one Send as a whole: go-mail gives each of its phases
	// (see sessionPhases) a deadline of a quarter of it, so that no Send
	// outlasts it.
	Timeout time.Duration
}

// DefaultTimeout bounds one Send unless the Sender says otherwise (15 s for
// each of its phases).
const DefaultTimeout = time.Minute

// sessionPhases is how many deadlines of go-mail's client one Send runs
// under at most, one after the other: on an open connection, what is left of
// its last deadline for the check (NOOP) that finds it closed; then the
// dial; the greeting, STARTTLS and login; and the message (the check, MAIL,
// RCPT, DATA and QUIT).
const sessionPhases = 4

// NewSender parses rawURL (smtp://user:pass@host:port, STARTTLS when the relay
// offers it; smtps://... for TLS from the start; the port defaults to 587 and
// 465) and returns a sender whose messages come from from (an address,
// optionally with a display name: "Rechnungen <rechnung@example.com>").
func NewSender(rawURL, from string) (*Sender, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("SMTP URL: %w", err)
	}
	s := &Sender{host: u.Hostname(), Timeout: DefaultTimeout}
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
	if s.from, err = netmail.ParseAddress(from); err != nil {
		return nil, fmt.Errorf("sender address %q: %w", from, err)
	}
	s.domain = "localhost"
	if at := strings.LastIndexByte(s.from.Address, '@'); at >= 0 && at < len(s.from.Address)-1 {
		s.domain = s.from.Address[at+1:]
	}
	return s, nil
}

// Addr is the relay's host:port, for logs.
func (s *Sender) Addr() string { return s.host + ":" + strconv.Itoa(s.port) }

// SessionTimeout is the longest one Send (of a Sender or a Conn) may talk to
// the relay.
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

// Send delivers m within Timeout (and ctx) over a connection of its own. A
// failure the relay calls permanent (a 5xx answer) or a message that cannot
// be addressed is a *PermanentError; anything else (the relay down, a 4xx
// answer) may succeed later. A message the relay accepted is sent, whatever
// happens to the connection afterwards.
func (s *Sender) Send(ctx context.Context, m Message) error {
	c := s.Conn()
	defer c.Close()
	return c.Send(ctx, m)
}

// Conn is one SMTP connection of a worker that sends one message after
// another: it stays open from one message to the next while they follow
// each other within a phase's deadline (a quarter of Timeout), and is
// dialled again when it was idle longer, when the relay closed it, or after
// a failure. Each Send is bounded by Timeout as a whole. A Conn is used by
// one goroutine at a time; Close ends it.
type Conn struct {
	s      *Sender
	client *gomail.Client
	smtp   *smtp.Client
	last   time.Time // when the last message on smtp began: its deadline is a phase later
}

// Conn returns a connection of s, dialled at its first Send.
func (s *Sender) Conn() *Conn { return &Conn{s: s} }

// phase is the deadline set on the connection for each phase (go-mail's
// for the dial and the greeting, transmit's for the message).
func (s *Sender) phase() time.Duration { return s.SessionTimeout() / sessionPhases }

// Send delivers m within the sender's Timeout (and ctx, while connecting),
// over the open connection when there is one, else over a new one; errors as
// Sender.Send.
func (c *Conn) Send(ctx context.Context, m Message) error {
	msg, err := c.s.Compose(m)
	if err != nil {
		return err
	}
	if c.smtp != nil && time.Since(c.last) >= c.s.phase() {
		c.drop() // idle past its deadline: the check of it would fail
	}
	if c.smtp != nil {
		c.last = time.Now()
		delivered, err := c.transmit(c.smtp, msg, true)
		if err == nil || delivered {
			if err != nil {
				c.drop()
			}
			return nil
		}
		c.drop()
		if !errors.Is(err, errConnClosed) {
			return c.s.classify(err)
		}
		// The relay had closed the connection (the check before the
		// message failed): nothing was sent, dial again.
	}
	ctx, cancel := context.WithTimeout(ctx, c.s.SessionTimeout())
	defer cancel()
	opts := []gomail.Option{gomail.WithPort(c.s.port), gomail.WithTimeout(c.s.phase()), gomail.WithoutRset()}
	if c.s.implicit {
		opts = append(opts, gomail.WithSSL()) // go-mail's own TLS dialer
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic), gomail.WithDialContextFunc(dialBatched))
	}
	if c.s.user != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(c.s.user), gomail.WithPassword(c.s.pass))
	}
	client, err := gomail.NewClient(c.s.host, opts...)
	if err != nil {
		return fmt.Errorf("SMTP client for %s: %w", c.s.Addr(), err)
	}
	sc, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("SMTP %s: dial failed: %w", c.s.Addr(), err)
	}
	c.client, c.smtp = client, sc
	c.last = time.Now()
	delivered, err := c.transmit(sc, msg, false)
	if err != nil {
		c.drop()
		if !delivered {
			return c.s.classify(err)
		}
	}
	return nil
}

// Close ends the connection with QUIT (within what is left of its deadline).
func (c *Conn) Close() {
	if c.smtp != nil {
		_ = c.client.CloseWithSMTPClient(c.smtp)
	}
	c.drop()
}

// drop closes the connection without a word to the relay.
func (c *Conn) drop() {
	if c.smtp != nil {
		_ = c.smtp.Close()
	}
	c.client, c.smtp = nil, nil
}

// classify makes a failure the relay calls permanent (a 5xx answer) a
// *PermanentError.
func (s *Sender) classify(err error) error {
	err = fmt.Errorf("SMTP %s: %w", s.Addr(), err)
	if code := replyCode(err); code >= 500 && code < 600 {
		return &PermanentError{err}
	}
	return err
}

// PermanentError is a delivery that will fail the same way every time.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }
