package invoicing_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/testenv"
)

// fakeRelay is a fake of the EXTERNAL SMTP relay the mailer talks to (an
// emersion/go-smtp server on a free port of 127.0.0.1): it keeps what it
// receives in memory, answers DATA as slowly as a test asks and counts the
// sessions that are in DATA at once.
type fakeRelay struct {
	url string

	mu       sync.Mutex
	got      []relayed // every message received, in order
	inData   int       // sessions between receiving a message and answering it
	maxData  int       // the most of them at once
	delay    time.Duration
	holdFor  int           // answers wait until this many sessions are in DATA at once (or holdMax)
	holdMax  time.Duration // the longest an answer waits for holdFor
	gathered chan struct{} // closed once holdFor sessions were in DATA at once
	// stall, when set, is called with each received message before it is
	// answered (the relay has it then, whatever the answer); true: the
	// relay hangs up instead of answering.
	stall func(relayed) (hangUp bool)
}

// relayed is one message the fake relay received.
type relayed struct {
	to, messageID string
}

func newFakeRelay(t *testing.T) *fakeRelay {
	t.Helper()
	r := &fakeRelay{gathered: make(chan struct{})}
	s := smtp.NewServer(r)
	s.Domain = "relay.test"
	s.ReadTimeout, s.WriteTimeout = 30*time.Second, 30*time.Second
	s.AllowInsecureAuth = true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	r.url = "smtp://" + l.Addr().String()
	return r
}

func (r *fakeRelay) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &relaySession{r: r, conn: c}, nil
}

type relaySession struct {
	r    *fakeRelay
	conn *smtp.Conn
	to   string
}

func (s *relaySession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = to
	return nil
}
func (s *relaySession) Reset()        { s.to = "" }
func (s *relaySession) Logout() error { return nil }

func (s *relaySession) Data(body io.Reader) error {
	raw, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	got := relayed{to: s.to, messageID: strings.Trim(m.Header.Get("Message-ID"), "<>")}
	r := s.r
	r.mu.Lock()
	r.got = append(r.got, got)
	r.inData++
	r.maxData = max(r.maxData, r.inData)
	if r.holdFor > 0 && r.inData >= r.holdFor {
		select {
		case <-r.gathered:
		default:
			close(r.gathered)
		}
	}
	delay, holdFor, holdMax, stall := r.delay, r.holdFor, r.holdMax, r.stall
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inData--
		r.mu.Unlock()
	}()
	if stall != nil && stall(got) {
		_ = s.conn.Close()
		return errors.New("hung up")
	}
	if holdFor > 0 {
		select {
		case <-r.gathered:
		case <-time.After(holdMax):
		}
	}
	time.Sleep(delay)
	return nil
}

// received returns the Message-IDs the relay received for to, in order.
func (r *fakeRelay) received(to string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, g := range r.got {
		if g.to == to {
			ids = append(ids, g.messageID)
		}
	}
	return ids
}

// everywhere is the Message-IDs of the messages to `to` that reached any
// relay: the fake and the stack's sink (a service running beside the tests
// sends what it claims through the sink).
func everywhere(t *testing.T, r *fakeRelay, to string) []string {
	t.Helper()
	ids := r.received(to)
	for _, m := range testenv.Mails(t, to) {
		ids = append(ids, strings.Trim(m.Header.Get("Message-ID"), "<>"))
	}
	return ids
}

// taskDeliveries records n deliveries of kind task (a notice of a task to
// the invoice contact: composing it reads the task only) to n recipients,
// not yet due: due() makes them due right before a test's mailers claim,
// so that a mailer of a service running beside the tests has the least
// chance to take them. It returns the recipients and the delivery ids.
func taskDeliveries(t *testing.T, pool *pgxpool.Pool, projectID string, n int) (recipients, ids []string) {
	t.Helper()
	ctx := context.Background()
	for range n {
		taskID, id := uuid.NewString(), uuid.NewString()
		subject := "MAIL-" + uuid.NewString()[:8]
		to := "once-" + uuid.NewString()[:8] + "@example.com"
		if _, err := pool.Exec(ctx, `INSERT INTO tasks (id, project_id, kind, subject, details) VALUES ($1, $2, 'validation_failed', $3, '{}')`,
			taskID, projectID, subject); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO mail_deliveries (id, project_id, kind, task_id, order_no, recipient, status, next_attempt_at)
			VALUES ($1, $2, 'task', $3, $4, $5, 'pending', now() + interval '1 hour')`, id, projectID, taskID, subject, to); err != nil {
			t.Fatal(err)
		}
		recipients, ids = append(recipients, to), append(ids, id)
	}
	return recipients, ids
}

// due makes the deliveries due now.
func due(t *testing.T, pool *pgxpool.Pool, ids []string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE mail_deliveries SET next_attempt_at = now() WHERE id = ANY($1::uuid[]) AND status = 'pending'`,
		ids); err != nil {
		t.Fatal(err)
	}
}

type storedDelivery struct {
	status, messageID string
	attempts          int
}

func deliveryByID(t *testing.T, pool *pgxpool.Pool, id string) storedDelivery {
	t.Helper()
	var d storedDelivery
	var mid *string
	if err := pool.QueryRow(context.Background(), `SELECT status, message_id, attempts FROM mail_deliveries WHERE id = $1`, id).
		Scan(&d.status, &mid, &d.attempts); err != nil {
		t.Fatal(err)
	}
	if mid != nil {
		d.messageID = *mid
	}
	return d
}
