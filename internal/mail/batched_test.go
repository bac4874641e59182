package mail

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestBatchedConn: writes are held until the client reads or closes, then
// sent in order; a failed send is reported by the read that follows.
func TestBatchedConn(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe() // synchronous: an unheld write would block here
	defer server.Close()
	c := newBatchedConn(client)
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	_ = server.SetDeadline(time.Now().Add(10 * time.Second))
	for _, s := range []string{"MAIL FROM:<r@example.com>\r\n", "RCPT TO:<k@example.com>\r\n"} {
		if n, err := c.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("write %q: %d, %v (held writes return at once)", s, n, err)
		}
	}
	got := make(chan string, 1)
	go func() {
		r := bufio.NewReader(server)
		a, _ := r.ReadString('\n')
		b, _ := r.ReadString('\n')
		got <- a + b
		_, _ = server.Write([]byte("250 ok\r\n"))
	}()
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "250 ok\r\n" {
		t.Fatalf("read after the held writes: %q, %v", buf[:n], err)
	}
	if s := <-got; s != "MAIL FROM:<r@example.com>\r\nRCPT TO:<k@example.com>\r\n" {
		t.Errorf("the relay received %q", s)
	}

	// Close sends what is held.
	if _, err := c.Write([]byte("QUIT\r\n")); err != nil {
		t.Fatal(err)
	}
	go func() {
		line, _ := bufio.NewReader(server).ReadString('\n')
		got <- line
	}()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if s := <-got; s != "QUIT\r\n" {
		t.Errorf("the relay received %q before the close, want QUIT", s)
	}

	// A connection the relay closed: the held write fails at the next read.
	client2, server2 := net.Pipe()
	c2 := newBatchedConn(client2)
	_ = server2.Close()
	if _, err := c2.Write([]byte("NOOP\r\n")); err != nil {
		t.Fatalf("held write: %v", err)
	}
	if _, err := c2.Read(buf); err == nil || !(errors.Is(err, io.ErrClosedPipe) || errors.Is(err, io.EOF)) {
		t.Errorf("read after a failed send: %v, want the send's error", err)
	}
	_ = c2.Close()
}
