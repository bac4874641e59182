package mail

import (
	"io"
	"testing"
)

// BenchmarkComposeAndWrite composes a message with a PDF-sized attachment
// and writes it out, as a send does before the SMTP dot-encoding.
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
	b.ReportAllocs()
	for b.Loop() {
		msg, err := s.Compose(m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := msg.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
