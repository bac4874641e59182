package mail

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"testing"
)

// TestComposedMessageReadsBackAsWritten: a composed message, read with the
// standard library's parsers as a mail client reads it, has the sender,
// recipient, Reply-To and subject given (non-ASCII, a line break in the
// subject included, which adds no header), the text and each attachment
// byte for byte with its type and name; CRLF throughout and no line longer
// than RFC 5322's 998 characters, header lines folded at 76 where they can be
// (every one with an encoded word, as RFC 2047 requires).
func TestComposedMessageReadsBackAsWritten(t *testing.T) {
	t.Parallel()
	s := mustSender(t, "smtp://127.0.0.1:25", "Rechnungen <rechnung@shop.example.com>")
	rng := rand.New(rand.NewPCG(1, 2))
	pdf := make([]byte, 100_003) // not a multiple of 57: the last line is short
	for i := range pdf {
		pdf[i] = byte(rng.Uint32())
	}
	xml := []byte("<?xml version=\"1.0\"?>\n<rsm:CrossIndustryInvoice>Grüße</rsm:CrossIndustryInvoice>\n")
	subject := "Ihre Rechnung RE-2026-000001 von Müller & Söhne Feinkost GmbH, Großhandel für Spezialitäten aus Łódź\r\nBcc: evil@example.com"
	text := "Guten Tag,\n\nanbei Ihre Rechnung über 119,00 €.\n.\nMit freundlichen Grüßen\n" + strings.Repeat("sehr lange Zeile ", 20)
	m := Message{MessageID: "o2i.42@shop.example.com", FromName: "Müller & Söhne", To: "kunde@example.com", ReplyTo: "kontakt@shop.example.com",
		Subject: subject, Text: text, Attachments: []Attachment{
			{Name: "RE-2026-000001.pdf", ContentType: "application/pdf", Data: pdf},
			{Name: "Rechnung Łódź.xml", ContentType: "application/xml", Data: xml},
			{Name: "beleg.txt", Data: []byte("ohne Typ")},
		}}
	raw := composed(t, s, m)
	if !crlfOnly([]byte(raw)) {
		t.Error("a line ends without CR")
	}
	head, _, _ := strings.Cut(raw, "\r\n\r\n")
	for _, line := range strings.Split(head, "\r\n") {
		if len(line) > maxHeaderLine && (strings.Contains(strings.TrimLeft(line, " "), " ") || strings.Contains(line, "=?")) {
			t.Errorf("header line of %d characters not folded: %q", len(line), line)
		}
	}
	for _, line := range strings.Split(raw, "\r\n") {
		if len(line) > 998 {
			t.Errorf("line of %d characters", len(line))
		}
	}
	msg, err := netmail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Header["Bcc"]) != 0 {
		t.Errorf("the subject's line break made a header: Bcc %q", msg.Header["Bcc"])
	}
	dec := new(mime.WordDecoder)
	gotSubject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || gotSubject != subject {
		t.Errorf("subject %q (%v), want %q", gotSubject, err, subject)
	}
	from, err := msg.Header.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Müller & Söhne" || from[0].Address != "rechnung@shop.example.com" {
		t.Errorf("From %v %v", from, err)
	}
	for field, want := range map[string]string{"To": "kunde@example.com", "Reply-To": "kontakt@shop.example.com"} {
		if a, err := msg.Header.AddressList(field); err != nil || len(a) != 1 || a[0].Address != want {
			t.Errorf("%s %v %v, want %s", field, a, err, want)
		}
	}
	if got := msg.Header.Get("Message-ID"); got != "<o2i.42@shop.example.com>" {
		t.Errorf("Message-ID %q", got)
	}
	if _, err := msg.Header.Date(); err != nil {
		t.Errorf("Date %q: %v", msg.Header.Get("Date"), err)
	}
	if c, err := s.Compose(m); err != nil || c.Sender() != "<rechnung@shop.example.com>" || len(c.Recipients()) != 1 || c.Recipients()[0] != "<kunde@example.com>" {
		t.Errorf("envelope %v %v", c, err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("Content-Type %q %v", msg.Header.Get("Content-Type"), err)
	}
	type part struct {
		contentType, name string
		data              []byte
	}
	var parts []part
	r := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var body io.Reader = p
		switch enc := p.Header.Get("Content-Transfer-Encoding"); enc {
		case "base64":
			body = base64Reader(p)
		case "quoted-printable":
			body = quotedprintable.NewReader(p)
		default:
			t.Errorf("part encoded %q", enc)
		}
		data, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		ct, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		_, disp, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		parts = append(parts, part{ct, disp["filename"], data})
	}
	want := []part{
		{"text/plain", "", []byte(strings.ReplaceAll(text, "\n", "\r\n"))},
		{"application/pdf", "RE-2026-000001.pdf", pdf},
		{"application/xml", "Rechnung Łódź.xml", xml},
		{"text/plain", "beleg.txt", []byte("ohne Typ")},
	}
	if len(parts) != len(want) {
		t.Fatalf("%d parts, want %d", len(parts), len(want))
	}
	for i, w := range want {
		if g := parts[i]; g.contentType != w.contentType || g.name != w.name || !bytes.Equal(g.data, w.data) {
			t.Errorf("part %d: %s %q (%d bytes), want %s %q (%d bytes)", i, g.contentType, g.name, len(g.data), w.contentType, w.name, len(w.data))
		}
	}
}

// base64Reader decodes a base64 body, its lines of at most 76 characters
// (RFC 2045 6.8) checked.
func base64Reader(r io.Reader) io.Reader {
	b, err := io.ReadAll(r)
	if err != nil {
		return errReader{err}
	}
	var joined []byte
	for _, line := range bytes.Split(b, []byte("\r\n")) {
		if len(line) > base64Line {
			return errReader{errors.New("base64 line longer than 76")}
		}
		joined = append(joined, line...)
	}
	data, err := base64.StdEncoding.DecodeString(string(joined))
	if err != nil {
		return errReader{err}
	}
	return bytes.NewReader(data)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
