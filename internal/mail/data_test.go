package mail

import (
	"bufio"
	"bytes"
	"net/textproto"
	"strings"
	"testing"
)

// TestDotWriter: a message's bytes as DATA text, in one write and cut into
// writes at every position: CRLF line ends (a bare LF gets its CR), a dot
// doubled at the start of a line only, the end of data after a line end.
// Each case is also checked against net/textproto's DotWriter, which it
// replaces.
func TestDotWriter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "\r\n.\r\n"},
		{"a", "a\r\n.\r\n"},
		{"a\r\n", "a\r\n.\r\n"},
		{"a\nb\n", "a\r\nb\r\n.\r\n"},
		{"a\r\nb", "a\r\nb\r\n.\r\n"},
		{".", "..\r\n.\r\n"},
		{".\r\n", "..\r\n.\r\n"},
		{"a\r\n.b\r\n..c\r\nd.e\r\n", "a\r\n..b\r\n...c\r\nd.e\r\n.\r\n"},
		{"\n.\n", "\r\n..\r\n.\r\n"},
		{"\r\n\r\n.", "\r\n\r\n..\r\n.\r\n"},
		{"a\r", "a\r\n.\r\n"},
		{"a\rb\r\n", "a\rb\r\n.\r\n"},
		{"Grüße\r\n.ß\r\n", "Grüße\r\n..ß\r\n.\r\n"},
	} {
		if ref := viaTextproto(t, tc.in); ref != tc.want {
			t.Fatalf("case %q: textproto writes %q, the table says %q", tc.in, ref, tc.want)
		}
		for cut := 0; cut <= len(tc.in); cut++ {
			var out bytes.Buffer
			bw := bufio.NewWriter(&out)
			w := newDotWriter(bw)
			for _, part := range []string{tc.in[:cut], tc.in[cut:]} {
				if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
					t.Fatalf("write %q: %d, %v", part, n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("%q written as %q and %q: %q, want %q", tc.in, tc.in[:cut], tc.in[cut:], out.String(), tc.want)
			}
		}
	}
}

func viaTextproto(t *testing.T, in string) string {
	t.Helper()
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	w := textproto.NewWriter(bw).DotWriter()
	if _, err := w.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestDotWriterReportsAFailedWrite: a connection that fails is reported by
// the write, not lost in the buffer.
func TestDotWriterReportsAFailedWrite(t *testing.T) {
	t.Parallel()
	w := newDotWriter(bufio.NewWriterSize(failingWriter{}, 16))
	if _, err := w.Write([]byte(strings.Repeat("line\r\n", 10))); err == nil {
		t.Error("60 bytes through a 16-byte buffer to a failing connection: no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }
