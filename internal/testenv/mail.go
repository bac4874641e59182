package testenv

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Mail is one message the local stack's SMTP sink received (an .eml file
// under .dev/mail/), decoded.
type Mail struct {
	File        string
	Header      mail.Header
	Subject     string            // decoded
	Text        string            // the text/plain body
	Attachments map[string][]byte // file name → decoded content
	Types       map[string]string // file name → content type
}

// MailDir is the directory the SMTP sink of the local stack writes to:
// .dev/mail at the repository root.
func MailDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".dev", "mail")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Mails returns the messages of the sink addressed to `to` (its To header
// contains it), oldest first.
func Mails(t testing.TB, to string) []Mail {
	t.Helper()
	dir := MailDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []Mail
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(to)) {
			continue
		}
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(m.Header.Get("To"), to) {
			continue
		}
		dec := new(mime.WordDecoder)
		subject, err := dec.DecodeHeader(m.Header.Get("Subject"))
		if err != nil {
			t.Fatalf("%s: subject: %v", f, err)
		}
		got := Mail{File: f, Header: m.Header, Subject: subject, Attachments: map[string][]byte{}, Types: map[string]string{}}
		if err := got.part(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), "", m.Body); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, got)
	}
	return out
}

func (m *Mail) part(contentType, encoding, disposition string, body io.Reader) error {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		r := multipart.NewReader(body, params["boundary"])
		for {
			p, err := r.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := m.part(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p.Header.Get("Content-Disposition"), p); err != nil {
				return err
			}
		}
	}
	switch strings.ToLower(encoding) {
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, &newlineStripper{r: body})
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	_, dparams, _ := mime.ParseMediaType(disposition)
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if name != "" {
		m.Attachments[name] = data
		m.Types[name] = mt
		return nil
	}
	if mt == "text/plain" {
		m.Text += string(data)
	}
	return nil
}

// newlineStripper drops CR and LF, which base64 bodies wrap lines with.
type newlineStripper struct{ r io.Reader }

func (n *newlineStripper) Read(p []byte) (int, error) {
	for {
		k, err := n.r.Read(p)
		j := 0
		for _, b := range p[:k] {
			if b != '\r' && b != '\n' {
				p[j] = b
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}
