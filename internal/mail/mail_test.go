package mail

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
// and each attachment with its type; an unusable recipient, Reply-To or
// content type is permanent.
func TestCompose(t *testing.T) {
	t.Parallel()
	s, err := NewSender("smtp://127.0.0.1:25", "Rechnungen <r@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	b := composed(t, s, Message{To: "kunde@example.com", ReplyTo: "kontakt@example.com", Subject: "Ihre Rechnung RE-1",
		Text: "Grüße", Attachments: []Attachment{{Name: "RE-1.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.7")}}})
	for _, want := range []string{"Reply-To: <kontakt@example.com>", "To: <kunde@example.com>", "Subject: Ihre Rechnung RE-1",
		"Content-Type: application/pdf", `filename="RE-1.pdf"`, "charset=UTF-8"} {
		if !strings.Contains(b, want) {
			t.Errorf("message lacks %q:\n%s", want, b)
		}
	}
	for name, m := range map[string]Message{
		"bad recipient":    {To: "not an address", Subject: "x"},
		"bad Reply-To":     {To: "kunde@example.com", ReplyTo: "not an address", Subject: "x"},
		"bad content type": {To: "kunde@example.com", Subject: "x", Attachments: []Attachment{{Name: "a.pdf", ContentType: "application/pdf; x", Data: []byte("x")}}},
	} {
		_, err = s.Compose(m)
		var pe *PermanentError
		if !errors.As(err, &pe) {
			t.Errorf("%s: %v, want a *PermanentError", name, err)
		}
	}
}

// TestMessageID: a message given a Message-ID carries exactly it (every
// resend the same), one without gets a new one; new ones are unique and in
// the domain of the sender's address; an unusable one is permanent.
func TestMessageID(t *testing.T) {
	t.Parallel()
	s, err := NewSender("smtp://127.0.0.1:25", "Rechnungen <rechnung@shop.example.com>")
	if err != nil {
		t.Fatal(err)
	}
	id := s.NewMessageID()
	if !strings.HasSuffix(id, "@shop.example.com") || !validMessageID(id) || s.NewMessageID() == id {
		t.Errorf("new Message-ID %q: want a unique local@shop.example.com", id)
	}
	header := func(m Message) string {
		t.Helper()
		b := composed(t, s, m)
		for _, line := range strings.Split(b, "\r\n") {
			if v, ok := strings.CutPrefix(line, "Message-Id: "); ok {
				return v
			}
			if v, ok := strings.CutPrefix(line, "Message-ID: "); ok {
				return v
			}
		}
		t.Fatalf("no Message-ID:\n%s", b)
		return ""
	}
	m := Message{MessageID: id, To: "kunde@example.com", Subject: "Ihre Rechnung RE-1", Text: "x"}
	if a, b := header(m), header(m); a != "<"+id+">" || b != a {
		t.Errorf("Message-IDs %q and %q, want <%s> both times", a, b, id)
	}
	m.MessageID = ""
	if a, b := header(m), header(m); a == b || a == "<"+id+">" {
		t.Errorf("without a Message-ID: %q and %q, want two new ones", a, b)
	}
	m.MessageID = "no at sign"
	var pe *PermanentError
	if _, err := s.Compose(m); !errors.As(err, &pe) {
		t.Errorf("unusable Message-ID: %v, want a *PermanentError", err)
	}
	if d := mustSender(t, "smtp://h:25", "r@localhost").NewMessageID(); !strings.HasSuffix(d, "@localhost") {
		t.Errorf("Message-ID %q of a sender at localhost", d)
	}
}

// composed is m as s composes it, the bytes a relay receives.
func composed(t *testing.T, s *Sender, m Message) string {
	t.Helper()
	msg, err := s.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := msg.WriteMessage(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func mustSender(t *testing.T, url, from string) *Sender {
	t.Helper()
	s, err := NewSender(url, from)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestValidMessageID: what may stand between the angle brackets.
func TestValidMessageID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"o2i.0123abcd@rechnung.example.com": true,
		"a@b":                               true,
		"":                                  false,
		"@example.com":                      false,
		"local@":                            false,
		"two@at@example.com":                false,
		"with space@example.com":            false,
		"<bracket>@example.com":             false,
		"umlaut-ä@example.com":              false,
		"line\r\nbreak@example.com":         false,
	} {
		if got := validMessageID(id); got != want {
			t.Errorf("validMessageID(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestSendBoundedBySessionTimeout: a relay that takes the message and never
// answers does not hold Send past the sender's Timeout (go-mail's deadlines
// of a quarter each); the failure may succeed later (not permanent).
func TestSendBoundedBySessionTimeout(t *testing.T) {
	t.Parallel()
	r := newScriptedRelay(t, afterData{silent: true})
	s := mustSender(t, r.url, "r@example.com")
	s.Timeout = 900 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		done <- s.Send(context.Background(), Message{To: "kunde@example.com", Subject: "x", Text: "x"})
	}()
	select {
	case err := <-done:
		var pe *PermanentError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("Send to a silent relay: %v, want a temporary failure", err)
		}
	case <-time.After(30 * s.Timeout):
		t.Fatal("Send to a silent relay did not end: the send is not bounded")
	}
}

// TestConnReusesItsConnection: messages that follow each other go over one
// connection; a relay that closes it after accepting a message has that
// message (Send succeeds) and the next one goes over a new connection.
func TestConnReusesItsConnection(t *testing.T) {
	t.Parallel()
	for _, ext := range relayExtensions {
		t.Run(ext.name, func(t *testing.T) {
			t.Parallel()
			connReusesItsConnection(t, ext.chunking, ext.pipelining)
		})
	}
}

func connReusesItsConnection(t *testing.T, chunking, pipelining bool) {
	r := newScriptedRelay(t, afterData{})
	r.chunking, r.pipelining = chunking, pipelining
	s := mustSender(t, r.url, "r@example.com")
	s.Timeout = 20 * time.Second
	c := s.Conn()
	for i := range 3 {
		if err := c.Send(context.Background(), Message{To: fmt.Sprintf("kunde-%d@example.com", i), Subject: "x", Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if conns, msgs := r.counts(); conns != 1 || msgs != 3 {
		t.Errorf("%d connections for %d messages, want 1 for 3", conns, msgs)
	}
	r.set(afterData{hangUp: true})
	if err := c.Send(context.Background(), Message{To: "kunde-3@example.com", Subject: "x", Text: "x"}); err != nil {
		t.Errorf("message accepted, then the connection closed: %v, want sent", err)
	}
	r.set(afterData{})
	if err := c.Send(context.Background(), Message{To: "kunde-4@example.com", Subject: "x", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if conns, msgs := r.counts(); conns != 2 || msgs != 5 {
		t.Errorf("%d connections for %d messages, want 2 for 5", conns, msgs)
	}
	// A relay that closes the connection after accepting the message (QUIT
	// unanswered): the message is sent.
	r.set(afterData{hangUp: true})
	if err := s.Send(context.Background(), Message{To: "kunde-5@example.com", Subject: "x", Text: "x"}); err != nil {
		t.Errorf("Send, message accepted, then the connection closed: %v, want sent", err)
	}
}

// TestSendOverTheWire: what the relay receives is the message as composed,
// lines that begin with a dot included, as DATA (sent doubled, RFC 5321
// 4.5.2) and as a BDAT chunk (RFC 3030) to a relay that offers CHUNKING; a
// 5xx answer is permanent, a 4xx one not.
func TestSendOverTheWire(t *testing.T) {
	t.Parallel()
	for _, ext := range relayExtensions {
		t.Run(ext.name, func(t *testing.T) {
			t.Parallel()
			sendOverTheWire(t, ext.chunking, ext.pipelining)
		})
	}
}

// relayExtensions are the ways of a relay the tests send to: DATA only,
// CHUNKING, and CHUNKING with PIPELINING (where the scripted relay answers
// a group of commands only once its chunk is in).
var relayExtensions = []struct {
	name                 string
	chunking, pipelining bool
}{{"DATA", false, false}, {"CHUNKING", true, false}, {"CHUNKING and PIPELINING", true, true}}

func sendOverTheWire(t *testing.T, chunking, pipelining bool) {
	r := newScriptedRelay(t, afterData{})
	r.chunking, r.pipelining = chunking, pipelining
	s := mustSender(t, r.url, "r@example.com")
	s.Timeout = 20 * time.Second
	m := Message{MessageID: "o2i.1@example.com", To: "kunde@example.com", Subject: "Rechnung RE-1",
		Text: "Guten Tag,\n.\n.Punkt am Anfang\n..zwei\nEnde", Attachments: []Attachment{{Name: "RE-1.pdf", ContentType: "application/pdf",
			Data: bytes.Repeat([]byte("%PDF-1.7 .\n"), 5000)}}}
	if err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	want := composed(t, s, m)
	r.mu.Lock()
	got, via := r.received, r.via
	r.mu.Unlock()
	if how := map[bool]string{false: "DATA", true: "BDAT"}[chunking]; len(via) != 1 || via[0] != how {
		t.Errorf("the message went as %v, want %s", via, how)
	}
	// The Date header is the second's and the MIME boundary new in each
	// composition: compare without them.
	noDate := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\r\n") {
			if !strings.HasPrefix(l, "Date: ") {
				keep = append(keep, l)
			}
		}
		s = strings.Join(keep, "\r\n")
		if _, rest, ok := strings.Cut(s, "boundary="); ok {
			if b, _, ok := strings.Cut(strings.Trim(rest, `"`), "\r\n"); ok {
				s = strings.ReplaceAll(s, strings.Trim(b, `"`), "BOUNDARY")
			}
		}
		return s
	}
	if len(got) != 1 || noDate(got[0]) != noDate(want) {
		t.Fatalf("the relay received %d messages; the first differs from the composed one (%d and %d bytes)", len(got), len(got[0]), len(want))
	}
	if !strings.Contains(got[0], "\r\n.Punkt am Anfang\r\n..zwei\r\n") {
		t.Errorf("the lines that begin with dots did not arrive as written:\n%s", got[0])
	}

	for _, tc := range []struct {
		answer    string
		permanent bool
	}{
		{"550 5.1.1 mailbox unavailable", true},
		{"451 4.3.0 try again later", false},
	} {
		r.mu.Lock()
		r.rcptReply = tc.answer
		r.mu.Unlock()
		err := s.Send(context.Background(), Message{To: "kunde@example.com", Subject: "x", Text: "x"})
		var pe *PermanentError
		if err == nil || errors.As(err, &pe) != tc.permanent || !strings.Contains(err.Error(), tc.answer[:3]) {
			t.Errorf("RCPT answered %q: %v, want an error naming it, permanent %v", tc.answer, err, tc.permanent)
		}
	}
}

// afterData is what the scripted relay does once a message's data ended.
type afterData struct {
	silent bool // never answers
	hangUp bool // answers 250, then closes the connection
}

// scriptedRelay plays an SMTP relay (greeting, EHLO, MAIL, RCPT, DATA, NOOP,
// RSET, QUIT) on a free port of 127.0.0.1 and counts connections and
// messages.
type scriptedRelay struct {
	url string

	mu          sync.Mutex
	after       afterData
	chunking    bool     // offers CHUNKING (RFC 3030 BDAT)
	pipelining  bool     // offers PIPELINING (RFC 2920)
	rcptReply   string   // the answer to RCPT; empty: 250 ok
	received    []string // each message's data, the dots taken out again
	via         []string // DATA or BDAT, each message's
	conns, msgs int
}

func newScriptedRelay(t *testing.T, after afterData) *scriptedRelay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	r := &scriptedRelay{url: "smtp://" + l.Addr().String(), after: after}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conns++
			r.mu.Unlock()
			go r.serve(c)
		}
	}()
	return r
}

func (r *scriptedRelay) set(a afterData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.after = a
}

func (r *scriptedRelay) counts() (conns, msgs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, r.msgs
}

// taken records a message whose data ended and says what to answer (empty:
// nothing, the relay goes silent) and whether the connection goes on.
func (r *scriptedRelay) taken(message, via string) (answer string, goOn bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs++
	r.received = append(r.received, message)
	r.via = append(r.via, via)
	if r.after.silent {
		return "", false
	}
	return "250 queued", !r.after.hangUp
}

func (r *scriptedRelay) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	r.mu.Lock()
	chunking, pipelining := r.chunking, r.pipelining
	r.mu.Unlock()
	// A pipelining relay here answers NOOP, MAIL and RCPT only once the
	// message's chunk is in (or at DATA or QUIT): a client that waits for
	// an answer before it sends the next command of the group waits in
	// vain.
	var pending []string
	recipient := false // a recipient of the message in hand was accepted
	flush := func() {
		_, _ = c.Write([]byte(strings.Join(pending, "")))
		pending = pending[:0]
	}
	reply := func(s string) {
		pending = append(pending, s+"\r\n")
		if !pipelining {
			flush()
		}
	}
	end := func(message, via string) bool {
		if !recipient {
			reply("554 no valid recipients")
			flush()
			return true
		}
		answer, goOn := r.taken(message, via)
		if answer == "" {
			_, _ = io.Copy(io.Discard, br) // taken, never answered
			return false
		}
		reply(answer)
		flush()
		recipient = false
		return goOn
	}
	reply("220 relay.test ESMTP")
	flush()
	inData := false
	var data strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch cmd := strings.ToUpper(line); {
		case inData && line == ".":
			inData = false
			if !end(data.String(), "DATA") {
				return
			}
			data.Reset()
		case inData:
			data.WriteString(strings.TrimPrefix(line, ".") + "\r\n")
		case strings.HasPrefix(cmd, "BDAT ") && strings.HasSuffix(cmd, " LAST"):
			n, err := strconv.Atoi(strings.Fields(cmd)[1])
			if err != nil || n < 0 {
				reply("501 bad size")
				flush()
				return
			}
			chunk := make([]byte, n)
			if _, err := io.ReadFull(br, chunk); err != nil {
				return
			}
			if !end(string(chunk), "BDAT") {
				return
			}
		case strings.HasPrefix(cmd, "RCPT"):
			r.mu.Lock()
			answer := r.rcptReply
			r.mu.Unlock()
			if answer == "" {
				answer = "250 ok"
			}
			recipient = recipient || answer[0] == '2'
			reply(answer)
		case strings.HasPrefix(cmd, "EHLO"):
			ext := []string{"relay.test"}
			if chunking {
				ext = append(ext, "CHUNKING")
			}
			if pipelining {
				ext = append(ext, "PIPELINING")
			}
			ext = append(ext, "8BITMIME")
			for i, e := range ext {
				if i < len(ext)-1 {
					_, _ = c.Write([]byte("250-" + e + "\r\n"))
				} else {
					_, _ = c.Write([]byte("250 " + e + "\r\n"))
				}
			}
		case strings.HasPrefix(cmd, "DATA") && !recipient:
			reply("554 no valid recipients")
			flush()
		case strings.HasPrefix(cmd, "DATA"):
			inData = true
			reply("354 go ahead")
			flush()
		case strings.HasPrefix(cmd, "QUIT"):
			reply("221 bye")
			flush()
			return
		default:
			reply("250 ok")
		}
	}
}
