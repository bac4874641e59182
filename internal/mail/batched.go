package mail

import (
	"bufio"
	"context"
	"net"
	"sync"
)

// batchedWriteSize is how much a connection holds before it sends. go-mail
// writes through net/textproto's 4 KiB buffer: a PDF attachment of 60 KiB
// (80 KiB in base64) would leave in twenty writes.
const batchedWriteSize = 64 << 10

// batchedConn holds what the SMTP client writes until it next reads or
// closes, and sends it then in one write. The client reads the relay's
// answer to every command before it goes on (SMTP has no pipelining here),
// so nothing the relay has to see is held back, and a write that failed is
// reported by the read that follows, still within the command it belongs
// to: whether a message was accepted is decided, as before, by the answer
// to its end of data.
type batchedConn struct {
	net.Conn
	mu sync.Mutex
	w  *bufio.Writer
}

func newBatchedConn(c net.Conn) *batchedConn {
	return &batchedConn{Conn: c, w: bufio.NewWriterSize(c, batchedWriteSize)}
}

// dialBatched dials the relay in plain TCP (STARTTLS, when offered, wraps
// the batched connection: TLS records are batched the same way).
func dialBatched(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return newBatchedConn(c), nil
}

func (c *batchedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

// Read sends what is held, then reads.
func (c *batchedConn) Read(p []byte) (int, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// Close sends what is held (within the connection's deadline), then closes.
func (c *batchedConn) Close() error {
	ferr := c.flush()
	if err := c.Conn.Close(); err != nil {
		return err
	}
	return ferr
}

func (c *batchedConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Flush()
}
