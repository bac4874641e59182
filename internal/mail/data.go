package mail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	"github.com/wneessen/go-mail/smtp"
)

// errConnClosed: the check (NOOP) of a kept connection failed, the relay
// had closed it; nothing of the message was sent.
var errConnClosed = errors.New("connection closed by the relay")

// transmit sends msg over sc: MAIL, RCPT and the message under a phase's
// deadline, after a check (NOOP) when the connection is a kept one. It is
// go-mail's SendWithSMTPClient but for the message's bytes: composed into a
// buffer, they go as one BDAT chunk (RFC 3030) when the relay offers
// CHUNKING, as they are, else as DATA through dotWriter (go-mail's goes
// through net/textproto's dot-writer, a byte at a time: half the CPU of an
// e-mail with a PDF; and a relay reads DATA back a byte at a time too). A
// relay that offers PIPELINING (RFC 2920) as well gets the check, MAIL,
// RCPT and the chunk in one write: one round trip a message instead of
// four. delivered: the relay accepted the message, whatever fails after.
func (c *Conn) transmit(sc *smtp.Client, msg *Composed, kept bool) (delivered bool, err error) {
	if err := sc.UpdateDeadline(c.s.phase()); err != nil {
		return false, err
	}
	from, rcpts := msg.Sender(), msg.Recipients()
	buf := messageBuffers.Get().(*bytes.Buffer)
	defer putMessageBuffer(buf)
	buf.Reset()
	if err := msg.WriteMessage(buf); err != nil {
		return false, fmt.Errorf("message: %w", err)
	}
	chunking, _ := sc.Extension("CHUNKING")
	chunking = chunking && crlfOnly(buf.Bytes())
	if pipelining, _ := sc.Extension("PIPELINING"); pipelining && chunking {
		err = sendChunked(sc.Text, kept, envelope(sc, from, rcpts), buf.Bytes())
		return err == nil, err
	}
	if kept {
		if err := sc.Noop(); err != nil {
			return false, fmt.Errorf("%w: %w", errConnClosed, err)
		}
	}
	if err := sc.Mail(from); err != nil {
		return false, fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, r := range rcpts {
		if err := sc.Rcpt(r); err != nil {
			return false, fmt.Errorf("RCPT TO %s: %w", r, err)
		}
	}
	if chunking {
		err = sendChunked(sc.Text, false, nil, buf.Bytes())
	} else {
		err = sendData(sc.Text, buf.Bytes())
	}
	return err == nil, err
}

// command is one line sent to the relay and the answer it must get (as
// go-mail reads it: 25 for RCPT takes 250 and 251).
type command struct {
	line string
	code int
}

// envelope is the MAIL command go-mail's Mail would send (from with its
// angle brackets, the parameters of the relay's extensions) and a RCPT for
// each recipient.
func envelope(sc *smtp.Client, from string, rcpts []string) []command {
	mail := "MAIL FROM:" + from
	if ok, _ := sc.Extension("8BITMIME"); ok {
		mail += " BODY=8BITMIME"
	}
	if ok, _ := sc.Extension("SMTPUTF8"); ok {
		mail += " SMTPUTF8"
	}
	cmds := []command{{mail, 250}}
	for _, r := range rcpts {
		cmds = append(cmds, command{"RCPT TO:" + r, 25})
	}
	return cmds
}

// sendChunked writes the check of a kept connection (NOOP), the commands
// before (the envelope when pipelined, none when they went one by one) and
// the message as its only BDAT chunk at once, then reads their answers in
// order. A relay refuses the chunk of a transaction whose MAIL or every RCPT
// it refused, and the caller drops the connection after any failure, so no
// answer is left unread on a connection used again. A failure of the check
// is errConnClosed: nothing was sent.
func sendChunked(t *textproto.Conn, kept bool, before []command, message []byte) error {
	cmds := make([]command, 0, len(before)+2)
	if kept {
		cmds = append(cmds, command{"NOOP", 250})
	}
	cmds = append(cmds, before...)
	cmds = append(cmds, command{"BDAT " + strconv.Itoa(len(message)) + " LAST", 250})
	for _, c := range cmds {
		if strings.ContainsAny(c.line, "\r\n") {
			return fmt.Errorf("%q: a command must not contain CR or LF", c.line)
		}
	}
	// The lines are buffered, not sent one by one (textproto's Cmd flushes
	// each): the commands and the chunk leave in one write.
	ids := make([]uint, len(cmds))
	for i, c := range cmds {
		ids[i] = t.Next()
		t.StartRequest(ids[i])
		_, _ = t.W.WriteString(c.line + "\r\n")
		t.EndRequest(ids[i])
	}
	_, _ = t.W.Write(message)
	err := t.W.Flush() // reported as the first command's failure below
	for i, c := range cmds {
		if err == nil {
			t.StartResponse(ids[i])
			_, _, err = t.ReadResponse(c.code)
			t.EndResponse(ids[i])
		}
		if err != nil {
			if i == 0 && kept {
				return fmt.Errorf("%w: %w", errConnClosed, err)
			}
			return fmt.Errorf("%s: %w", c.line, err)
		}
	}
	return nil
}

// sendData sends the message as DATA and reads the relay's answer to its
// end.
func sendData(t *textproto.Conn, message []byte) error {
	id, err := t.Cmd("DATA")
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	t.StartResponse(id)
	_, _, err = t.ReadResponse(354)
	t.EndResponse(id)
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	w := newDotWriter(t.W)
	_, _ = w.Write(message)
	if err := w.Close(); err != nil {
		return fmt.Errorf("end of data: %w", err)
	}
	if _, _, err := t.ReadResponse(250); err != nil {
		return fmt.Errorf("end of data: %w", err)
	}
	return nil
}

// crlfOnly reports whether every line feed of b ends a CRLF: a message a
// BDAT chunk may carry as it is (RFC 3030 sends no line ends converted).
// go-mail writes CRLF throughout; this is the check, not the rule.
func crlfOnly(b []byte) bool {
	return bytes.Count(b, []byte("\n")) == bytes.Count(b, []byte("\r\n"))
}

// messageBuffers hold a message while it is sent: one with a PDF is about
// 80 KB.
var messageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putMessageBuffer returns buf to the pool unless a large message grew it.
func putMessageBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 4<<20 {
		messageBuffers.Put(buf)
	}
}

// dotWriter writes a message as the text of SMTP's DATA (RFC 5321 4.5.2):
// every line ends in CRLF (a bare LF gets its CR) and a line that begins
// with a dot gets a second one; Close ends the data with a dot line and
// flushes. It does what net/textproto's DotWriter does, a line at a time.
type dotWriter struct {
	w         *bufio.Writer
	lineStart bool // the next byte begins a line
	cr        bool // the last byte written was a CR within a line
	empty     bool // nothing written yet
}

func newDotWriter(w *bufio.Writer) *dotWriter { return &dotWriter{w: w, lineStart: true, empty: true} }

func (d *dotWriter) Write(p []byte) (int, error) {
	n := len(p)
	if n > 0 {
		d.empty = false
	}
	for len(p) > 0 {
		if d.lineStart && p[0] == '.' {
			_ = d.w.WriteByte('.')
		}
		d.lineStart = false
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			_, _ = d.w.Write(p)
			d.cr = p[len(p)-1] == '\r'
			break
		}
		cr := d.cr
		if i > 0 {
			cr = p[i-1] == '\r'
		}
		_, _ = d.w.Write(p[:i])
		if !cr {
			_ = d.w.WriteByte('\r')
		}
		_ = d.w.WriteByte('\n')
		d.lineStart, d.cr = true, false
		p = p[i+1:]
	}
	// bufio.Writer keeps its first error and returns it from every call
	// after: one look at the end says whether anything failed.
	if _, err := d.w.Write(nil); err != nil {
		return 0, err
	}
	return n, nil
}

// Close ends the last line, writes the end of data (a line of a dot) and
// flushes.
func (d *dotWriter) Close() error {
	switch {
	case d.cr:
		_ = d.w.WriteByte('\n')
	case !d.lineStart, d.empty: // as textproto: an empty message is one empty line
		_, _ = d.w.WriteString("\r\n")
	}
	_, _ = d.w.WriteString(".\r\n")
	return d.w.Flush()
}

// replyCode is the relay's answer code in err (0: none, the failure is not
// the relay's answer).
func replyCode(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}
