package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The SMTP sink: a real SMTP server (emersion/go-smtp) that keeps every
// message it accepts as one .eml file (the bytes the relay received, exactly)
// under .dev/mail/, so that tests and scripts read what a relay got. It
// accepts any sender, no authentication is needed (AUTH PLAIN with any
// credentials is accepted too) and it offers no STARTTLS. Recipient
// prefixes act as failing relays for tests: "tempfail-..." is refused with
// 451 (try again later), "reject-..." with 550 (permanent), and
// "flakyN-..." (N a digit) with 451 the first N times, then accepted.

// runSMTP hosts the sink in the foreground until SIGTERM or SIGINT. `devstack
// up` starts it in the background.
func runSMTP(args []string) error {
	fs := flag.NewFlagSet("smtp", flag.ContinueOnError)
	port := fs.Int("port", 22525, "listen port (127.0.0.1)")
	dir := fs.String("dir", ".dev/mail", "directory of the received .eml files")
	pidFile := fs.String("pidfile", "", "write the pid here (removed on exit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	srv := newSMTPSink(*dir)
	return serveForeground("smtp", *port, *pidFile, "sink writing to "+*dir, srv.Serve, srv.Close)
}

// newSMTPSink returns the sink's server writing into dir.
func newSMTPSink(dir string) *smtp.Server {
	s := smtp.NewServer(&sinkBackend{dir: dir, refused: map[string]int{}})
	s.Domain = "localhost"
	s.ReadTimeout = 30 * time.Second
	s.WriteTimeout = 30 * time.Second
	s.MaxMessageBytes = 50 << 20
	s.MaxRecipients = 100
	s.AllowInsecureAuth = true
	return s
}

type sinkBackend struct {
	dir string
	seq atomic.Int64

	mu      sync.Mutex
	refused map[string]int // flakyN- recipient → times refused
}

// flaky reports whether a flakyN- recipient is to be refused this time.
func (b *sinkBackend) flaky(to string, n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused[to] >= n {
		return false
	}
	b.refused[to]++
	return true
}

func (b *sinkBackend) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{b: b}, nil }

type sinkSession struct {
	b  *sinkBackend
	to []string
}

func (s *sinkSession) AuthMechanisms() []string { return []string{"PLAIN"} }

func (s *sinkSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(string, string, string) error { return nil }), nil
}

func (s *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }

func (s *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch local := strings.ToLower(to); {
	case strings.HasPrefix(local, "tempfail-"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "sink: temporary failure for " + to}
	case strings.HasPrefix(local, "reject-"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "sink: mailbox unavailable: " + to}
	case len(local) > 7 && strings.HasPrefix(local, "flaky") && local[5] >= '0' && local[5] <= '9' && local[6] == '-':
		if s.b.flaky(local, int(local[5]-'0')) {
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "sink: flaky, try again: " + to}
		}
	}
	s.to = append(s.to, to)
	return nil
}

// Data writes the message, atomically: a reader never sees half a file. It
// streams into the file (no copy of the whole message in memory).
func (s *sinkSession) Data(r io.Reader) error {
	name := fmt.Sprintf("%d-%06d.eml", time.Now().UnixNano(), s.b.seq.Add(1))
	tmp := filepath.Join(s.b.dir, "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(s.b.dir, name))
}

func (s *sinkSession) Reset()        { s.to = nil }
func (s *sinkSession) Logout() error { return nil }

func smtpAddr(cfg *config) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.smtpPort))
}

// smtpReady checks that the sink greets with 220.
func smtpReady(cfg *config) error {
	conn, err := net.DialTimeout("tcp", smtpAddr(cfg), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "220") {
		return fmt.Errorf("greeting %q", strings.TrimSpace(string(buf[:n])))
	}
	return nil
}

func ensureSMTP(cfg *config, deadline time.Time) error {
	start := time.Now()
	pidPath := cfg.path("smtp.pid")
	logPath := cfg.path("smtp.log")
	if _, ok := runningPid(pidPath, "smtp"); ok {
		if err := smtpReady(cfg); err != nil {
			return fmt.Errorf("running (pid file %s) but no greeting on %s: %v", cfg.rel(pidPath), smtpAddr(cfg), err)
		}
		logf("smtp: already running on %s", smtpAddr(cfg))
		return nil
	}
	if portOpen(cfg.smtpPort) {
		return fmt.Errorf("port %d is in use by another process (no live pid in %s)", cfg.smtpPort, cfg.rel(pidPath))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"smtp", "-port", strconv.Itoa(cfg.smtpPort), "-dir", cfg.path("mail"), "-pidfile", pidPath}
	proc, err := startDetached(self, args, os.Environ(), logPath, pidPath)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	alive := func() bool { return pidAlive(proc.Pid, "smtp") }
	if err := waitFor("an SMTP greeting on "+smtpAddr(cfg), limitFor(30*time.Second, deadline), alive, func() error {
		return smtpReady(cfg)
	}); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	logf("smtp: sink started on %s in %s (pid %d, messages in %s)", smtpAddr(cfg), time.Since(start).Round(100*time.Millisecond),
		proc.Pid, cfg.rel(cfg.path("mail")))
	return nil
}

func stopSMTP(cfg *config) error {
	return stopPid("smtp", cfg.path("smtp.pid"), "smtp", 10*time.Second)
}

func stateSMTP(cfg *config) string {
	pid, ok := runningPid(cfg.path("smtp.pid"), "smtp")
	if !ok {
		return "stopped"
	}
	return fmt.Sprintf("running  pid %d  %s  messages in %s", pid, smtpAddr(cfg), cfg.rel(cfg.path("mail")))
}
