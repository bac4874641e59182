package mail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/textproto"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"
)

// errConnClosed: the check (NOOP) of a kept connection failed, the relay
// had closed it; nothing of the message was sent.
var errConnClosed = errors.New("connection closed by the relay")

// transmit sends msg over sc: MAIL, RCPT and DATA under a phase's deadline,
// after a check (NOOP) when the connection is a kept one. It is go-mail's
// SendWithSMTPClient but for the message's bytes, which go through
// dotWriter instead of net/textproto's dot-writer (a byte at a time: half
// the CPU of an e-mail with a PDF). delivered: the relay accepted the
// message (its answer to the end of data), whatever fails after.
func (c *Conn) transmit(sc *smtp.Client, msg *gomail.Msg, kept bool) (delivered bool, err error) {
	if kept {
		if err := sc.Noop(); err != nil {
			return false, fmt.Errorf("%w: %w", errConnClosed, err)
		}
	}
	if err := sc.UpdateDeadline(c.s.phase()); err != nil {
		return false, err
	}
	from, err := msg.GetSender(false)
	if err != nil {
		return false, fmt.Errorf("sender: %w", err)
	}
	rcpts, err := msg.GetRecipients()
	if err != nil {
		return false, fmt.Errorf("recipients: %w", err)
	}
	if err := sc.Mail(from); err != nil {
		return false, fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, r := range rcpts {
		if err := sc.Rcpt(r); err != nil {
			return false, fmt.Errorf("RCPT TO %s: %w", r, err)
		}
	}
	id, err := sc.Text.Cmd("DATA")
	if err != nil {
		return false, fmt.Errorf("DATA: %w", err)
	}
	sc.Text.StartResponse(id)
	_, _, err = sc.Text.ReadResponse(354)
	sc.Text.EndResponse(id)
	if err != nil {
		return false, fmt.Errorf("DATA: %w", err)
	}
	w := newDotWriter(sc.Text.W)
	if _, err := msg.WriteTo(w); err != nil {
		return false, fmt.Errorf("message: %w", err)
	}
	if err := w.Close(); err != nil {
		return false, fmt.Errorf("end of data: %w", err)
	}
	if _, _, err := sc.Text.ReadResponse(250); err != nil {
		return false, fmt.Errorf("end of data: %w", err)
	}
	return true, nil
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
