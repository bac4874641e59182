package mail

import (
	"bufio"
	"io"
	"net/textproto"
	"testing"
)

// BenchmarkComposeAndWrite composes a message with a PDF-sized attachment
// and writes it as the text of DATA: through the line-wise dotWriter a send
// uses, and through net/textproto's DotWriter (go-mail's, a byte at a time)
// for comparison.
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
				if _, err := msg.WriteTo(d); err != nil {
					b.Fatal(err)
				}
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
