package mail

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/textproto"
	"testing"
)

// BenchmarkComposeAndWrite composes a message with a PDF-sized attachment
// and writes it as a send does: as a BDAT chunk (the message as it is,
// checked for bare line feeds), as the text of DATA through the line-wise
// dotWriter, and, for comparison, through net/textproto's DotWriter
// (go-mail's, a byte at a time).
func BenchmarkComposeAndWrite(b *testing.B) {
	s, err := NewSender("smtp://127.0.0.1:25", "billing@example.com")
	if err != nil {
		b.Fatal(err)
	}
	pdf := make([]byte, 41<<10)
	for i := range pdf {
		pdf[i] = byte(i * 7)
	}
	m := Message{To: "buyer@example.com", Subject: "Rechnung RE-1", Text: "Guten Tag",
		Attachments: []Attachment{{Name: "RE-1.pdf", ContentType: "application/pdf", Data: pdf}}}
	for _, w := range []struct {
		name string
		data func(*bufio.Writer) io.WriteCloser
	}{
		{"chunk", func(bw *bufio.Writer) io.WriteCloser {
			c := messageBuffers.Get().(*bytes.Buffer) // as a send takes one
			c.Reset()
			return &chunkWriter{w: bw, buf: c}
		}},
		{"lines", func(bw *bufio.Writer) io.WriteCloser { return newDotWriter(bw) }},
		{"textproto", func(bw *bufio.Writer) io.WriteCloser { return textproto.NewWriter(bw).DotWriter() }},
	} {
		b.Run(w.name, func(b *testing.B) {
			bw := bufio.NewWriter(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				msg, err := s.Compose(m)
				if err != nil {
					b.Fatal(err)
				}
				d := w.data(bw)
				if err := msg.WriteMessage(d); err != nil {
					b.Fatal(err)
				}
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// chunkWriter writes as a BDAT chunk is sent: composed into a buffer, checked,
// written out.
type chunkWriter struct {
	w   *bufio.Writer
	buf *bytes.Buffer
}

func (c *chunkWriter) Write(p []byte) (int, error) { return c.buf.Write(p) }

func (c *chunkWriter) Close() error {
	defer putMessageBuffer(c.buf)
	if !crlfOnly(c.buf.Bytes()) {
		return errors.New("bare line feed")
	}
	_, _ = c.w.Write(c.buf.Bytes())
	return c.w.Flush()
}
