package main

import (
	"bytes"
	"errors"
	"net"
	"net/smtp"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSMTPSink: the sink keeps each accepted message as one .eml file with
// exactly the bytes it received, and its test recipients fail as named:
// tempfail- with 451, reject- with 550, flaky1- with 451 once, then accepted.
func TestSMTPSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := newSMTPSink(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	body := "Subject: Hallo\r\nTo: kunde@example.com\r\n\r\nGrüße\r\n"
	if err := smtp.SendMail(addr, nil, "shop@example.com", []string{"kunde@example.com"}, []byte(body)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	got, err := os.ReadFile(files[0])
	if err != nil || !bytes.Equal(got, []byte(body)) {
		t.Errorf("stored %q (%v), want %q", got, err, body)
	}

	code := func(to string) int {
		err := smtp.SendMail(addr, nil, "shop@example.com", []string{to}, []byte(body))
		var pe *textproto.Error
		if errors.As(err, &pe) {
			return pe.Code
		}
		if err != nil {
			t.Fatalf("%s: %v", to, err)
		}
		return 250
	}
	for _, tc := range []struct {
		to   string
		want int
	}{{"tempfail-a@example.com", 451}, {"reject-a@example.com", 550}, {"flaky1-a@example.com", 451}, {"flaky1-a@example.com", 250}, {"flaky1-a@example.com", 250}} {
		if got := code(tc.to); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.to, got, tc.want)
		}
	}
	files, _ = filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(files) != 3 || strings.Contains(strings.Join(files, ""), ".tmp") {
		t.Errorf("files %v, want 3", files)
	}
}
