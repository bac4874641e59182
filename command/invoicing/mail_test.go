package invoicing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/testenv"
)

// mailed issues and archives a goods order with e-mail to and returns the
// document's id; archiving records its delivery.
func mailed(t *testing.T, v *invoicingEnv, a *archive.Archive, to string) string {
	t.Helper()
	body := strings.Replace(simpleOrder("M-"+uuid.NewString()[:8], ""), `{"orderNo"`, fmt.Sprintf(`{"email":%q,"orderNo"`, to), 1)
	doc := v.issue(v.place(body))[0]
	if err := v.svc.ArchiveInvoice(context.Background(), a, v.project, doc.ID); err != nil {
		t.Fatal(err)
	}
	return doc.ID
}

type deliveryRow struct {
	status    string
	attempts  int
	lastError *string
	sentAt    *time.Time
}

func delivery(t *testing.T, v *invoicingEnv, invoiceID string) deliveryRow {
	t.Helper()
	var d deliveryRow
	if err := v.pool.QueryRow(context.Background(), `SELECT status, attempts, last_error, sent_at FROM mail_deliveries WHERE invoice_id = $1`,
		invoiceID).Scan(&d.status, &d.attempts, &d.lastError, &d.sentAt); err != nil {
		t.Fatalf("delivery of %s: %v", invoiceID, err)
	}
	return d
}

func deliveryTask(t *testing.T, v *invoicingEnv, invoiceID string) (status string) {
	t.Helper()
	_ = v.pool.QueryRow(context.Background(), `SELECT t.status FROM tasks t JOIN invoices i ON i.project_id = t.project_id AND i.order_no = t.subject
		WHERE i.id = $1 AND t.kind = $2 ORDER BY t.created_at DESC LIMIT 1`, invoiceID, invoicing.TaskMailDeliveryFailed).Scan(&status)
	return status
}

func testMailer(t *testing.T, v *invoicingEnv, a *archive.Archive, relay string) *invoicing.Mailer {
	t.Helper()
	sender, err := mail.NewSender(relay, "Test <rechnung@localhost>")
	if err != nil {
		t.Fatal(err)
	}
	sender.Timeout = 5 * time.Second
	m := invoicing.NewMailer(v.svc, a, sender)
	m.Attempts, m.Backoff, m.MaxBackoff, m.Timeout = 2, time.Millisecond, time.Millisecond, 10*time.Second
	m.ProjectID = v.project
	return m
}

// mailArchive is the stack's archive bucket, the one a service running
// beside the tests reads too: its mailer may claim these deliveries as well.
func mailArchive(t *testing.T) *archive.Archive {
	t.Helper()
	a := archive.New(testenv.S3(t), testenv.Env("O2I_S3_BUCKET"))
	if err := a.EnsureBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestMailerRetriesOpensTaskAndRecovers: a relay that refuses for a while
// (the sink answers 451 twice) is retried; the attempt that reaches
// Attempts opens a mail_delivery_failed task with the error, and the
// delivery that finally goes out is recorded as sent and resolves it.
func TestMailerRetriesOpensTaskAndRecovers(t *testing.T) {
	t.Parallel()
	a := mailArchive(t)
	// A service running beside the tests polls the same deliveries with
	// five attempts before a task; when it takes one of a delivery's
	// attempts, this mailer's count of two is not reached by its own, and
	// the test starts again with a new project and delivery.
	for try := 1; !retriedByOneMailer(t, a); try++ {
		if try == 3 {
			t.Fatal("another mailer took an attempt of each of three deliveries")
		}
	}
}

// retriedByOneMailer runs TestMailerRetriesOpensTaskAndRecovers with a new
// project and delivery; false (nothing asserted) when another mailer took
// one of its attempts.
func retriedByOneMailer(t *testing.T, a *archive.Archive) bool {
	t.Helper()
	v := newInvoicing(t, false, nil)
	to := "flaky2-" + uuid.NewString()[:8] + "@example.com"
	id := mailed(t, v, a, to)
	if d := delivery(t, v, id); d.status != "pending" || d.attempts != 0 {
		t.Fatalf("new delivery %+v", d)
	}
	m := testMailer(t, v, a, testenv.Env("O2I_SMTP_URL"))
	// A failed attempt is due again only in an hour: the test makes it due
	// right before each of this mailer's claims.
	m.Backoff, m.MaxBackoff = time.Hour, time.Hour
	ctx := context.Background()
	mine := 0
	// tryNow has m try the delivery (the project's only one) once and
	// reports whether every attempt recorded is still m's.
	tryNow := func() bool {
		t.Helper()
		if _, err := v.pool.Exec(ctx, `UPDATE mail_deliveries SET next_attempt_at = now() WHERE invoice_id = $1 AND status = 'pending'`, id); err != nil {
			t.Fatal(err)
		}
		n, err := m.SendDue(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		mine += n
		return delivery(t, v, id).attempts == mine
	}
	for mine < 2 {
		if !tryNow() {
			return false
		}
	}
	if d := delivery(t, v, id); d.status != "pending" || d.lastError == nil || !strings.Contains(*d.lastError, "451") {
		t.Errorf("after two refusals %+v", d)
	}
	if s := deliveryTask(t, v, id); s != "open" {
		t.Errorf("task after two refusals: %q", s)
	}
	if !tryNow() {
		return false
	}
	if d := delivery(t, v, id); d.status != "sent" || d.attempts != 3 || d.sentAt == nil {
		t.Errorf("delivery after the relay took it %+v", d)
	}
	if s := deliveryTask(t, v, id); s != "resolved" {
		t.Errorf("task after sending: %q", s)
	}
	if n := len(testenv.Mails(t, to)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
	return true
}

// TestMailerRelayDownAndPermanentRefusal: with the relay unreachable the
// delivery stays pending with the error (nothing is lost); a recipient the
// relay refuses for good (550) opens the task at once.
func TestMailerRelayDownAndPermanentRefusal(t *testing.T) {
	t.Parallel()
	a := mailArchive(t)
	v := newInvoicing(t, false, nil)
	ctx := context.Background()

	rejected := mailed(t, v, a, "reject-"+uuid.NewString()[:8]+"@example.com")
	m := testMailer(t, v, a, testenv.Env("O2I_SMTP_URL"))
	testenv.Eventually(t, 90*time.Second, "the refused attempt", func() bool {
		if _, err := m.SendDue(ctx, 100); err != nil {
			t.Fatal(err)
		}
		return delivery(t, v, rejected).attempts >= 1
	})
	if d := delivery(t, v, rejected); d.status != "pending" || d.lastError == nil || !strings.Contains(*d.lastError, "550") {
		t.Errorf("refused delivery %+v", d)
	}
	if s := deliveryTask(t, v, rejected); s != "open" {
		t.Errorf("task after a permanent refusal: %q", s)
	}

	dead := testMailer(t, v, a, "smtp://127.0.0.1:1")
	// Due again only in an hour: no other mailer sends it before it is read.
	dead.Attempts, dead.Backoff, dead.MaxBackoff = 100, time.Hour, time.Hour
	// The dead relay's mailer claims the delivery at once. A mailer of a
	// service running beside the tests may take it first and send it: then
	// another one.
	for try := 1; ; try++ {
		down := mailed(t, v, a, "kunde-"+uuid.NewString()[:8]+"@example.com")
		if _, err := dead.SendDue(ctx, 100); err != nil {
			t.Fatal(err)
		}
		d := delivery(t, v, down)
		if d.lastError == nil || !strings.Contains(*d.lastError, "127.0.0.1:1") { // another mailer's
			if try == 3 {
				t.Fatal("every delivery was taken by another mailer")
			}
			continue
		}
		if d.status != "pending" || d.attempts != 1 {
			t.Errorf("delivery with the relay down %+v", d)
		}
		break
	}
}

// onceMailer is a mailer of the test's project through relay with
// concurrency workers, a short lease (half a second and a margin of half a
// second, renewed over the session right before each send) and SMTP
// sessions of at most sessionTimeout; its sender's domain is
// rechnung.example.
func onceMailer(t *testing.T, v *invoicingEnv, relay string, concurrency int, sessionTimeout time.Duration) *invoicing.Mailer {
	t.Helper()
	sender, err := mail.NewSender(relay, "Test <rechnung@rechnung.example>")
	if err != nil {
		t.Fatal(err)
	}
	sender.Timeout = sessionTimeout
	m := invoicing.NewMailer(v.svc, nil, sender)
	m.Attempts, m.Backoff, m.MaxBackoff = 100, time.Millisecond, time.Millisecond
	m.Timeout, m.LeaseMargin, m.Concurrency = 500*time.Millisecond, 500*time.Millisecond, concurrency
	m.ProjectID = v.project
	return m
}

// TestMailerTwoMailersSlowRelaySendOnce: two mailers with pools over the
// same deliveries, a relay that answers each message only after 300 ms,
// claims whose lease (one second) is shorter than what a batch of them
// takes: every delivery reaches a relay exactly once, with the Message-ID
// stored for it (in the sender's domain), and is recorded as sent once.
func TestMailerTwoMailersSlowRelaySendOnce(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, false, nil)
	relay := newFakeRelay(t)
	relay.delay = 300 * time.Millisecond
	recipients, ids := taskDeliveries(t, v.pool, v.project, 12)
	m1 := onceMailer(t, v, relay.url, 3, 10*time.Second)
	m2 := onceMailer(t, v, relay.url, 3, 10*time.Second)
	ctx := context.Background()
	due(t, v.pool, ids)
	testenv.Eventually(t, 120*time.Second, "every delivery sent", func() bool {
		errs := make(chan error, 2)
		for _, m := range []*invoicing.Mailer{m1, m2} {
			go func() {
				_, err := m.SendDue(ctx, 100)
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			if deliveryByID(t, v.pool, id).status != "sent" {
				return false
			}
		}
		return true
	})
	for i, to := range recipients {
		d := deliveryByID(t, v.pool, ids[i])
		got := everywhere(t, relay, to)
		ours := len(relay.received(to)) == 1 // else a mailer beside the tests sent it, with a Message-ID of its domain
		if len(got) != 1 || got[0] != d.messageID || ours && !strings.HasSuffix(d.messageID, "@rechnung.example") {
			t.Errorf("delivery to %s (Message-ID %q): received %q, want it once", to, d.messageID, got)
		}
	}
}

// TestMailerResendAfterCrashKeepsMessageID: the relay has the message but
// the mailer does not learn it: either the process dies in the middle of the
// send (nothing recorded, the claim stays until its lease runs out) or the
// relay's answer never arrives (a failed attempt recorded). Another try
// sends the delivery again with the same Message-ID, and records it.
func TestMailerResendAfterCrashKeepsMessageID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		crash    bool // the mailer's process dies while the relay has the message
		attempts int  // recorded once sent
	}{
		{"the process dies in the middle of the send", true, 1},
		{"the relay's answer never arrives", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newInvoicing(t, false, nil)
			relay := newFakeRelay(t)
			received := make(chan struct{}, 1)
			release := make(chan struct{})
			var stallOnce sync.Once
			relay.stall = func(relayed) (hangUp bool) {
				stallOnce.Do(func() {
					received <- struct{}{}
					<-release
					hangUp = true
				})
				return hangUp
			}
			var to, id string
			// A mailer of a service running beside the tests may claim the
			// delivery first; then the test tries with another.
			for try := 0; ; try++ {
				recipients, ids := taskDeliveries(t, v.pool, v.project, 1)
				to, id = recipients[0], ids[0]
				first := onceMailer(t, v, relay.url, 1, 10*time.Second)
				ctx, crash := context.WithCancel(context.Background())
				done := make(chan error, 1)
				due(t, v.pool, ids)
				go func() {
					_, err := first.SendDue(ctx, 1)
					done <- err
				}()
				select {
				case <-received:
					if tc.crash {
						crash() // the process dies while the relay has the message
					}
					close(release)
					err := <-done
					crash()
					if err != nil {
						t.Fatal(err)
					}
				case err := <-done:
					crash()
					if err != nil || try == 2 {
						t.Fatalf("the relay received nothing (%v)", err)
					}
					continue
				}
				break
			}
			first := deliveryByID(t, v.pool, id)
			if first.status != "pending" || first.attempts != tc.attempts-1 || first.messageID == "" {
				t.Fatalf("after the first send %+v, want it pending, %d attempts recorded, with its Message-ID", first, tc.attempts-1)
			}
			m := onceMailer(t, v, relay.url, 1, 10*time.Second)
			testenv.Eventually(t, 60*time.Second, "the delivery sent again", func() bool {
				if _, err := m.SendDue(context.Background(), 1); err != nil {
					t.Fatal(err)
				}
				return deliveryByID(t, v.pool, id).status == "sent"
			})
			got := everywhere(t, relay, to)
			if len(got) != 2 || got[0] != first.messageID || got[1] != first.messageID {
				t.Errorf("received %q, want the message twice with Message-ID %q", got, first.messageID)
			}
			if d := deliveryByID(t, v.pool, id); d.messageID != first.messageID || d.attempts != tc.attempts {
				t.Errorf("sent delivery %+v, want Message-ID %q and %d attempts", d, first.messageID, tc.attempts)
			}
		})
	}
}

// TestMailerPoolSessionsAtOnce: a mailer of four workers holds four SMTP
// sessions at once (the relay answers no message before four are in DATA
// together, or ten seconds passed), never more.
func TestMailerPoolSessionsAtOnce(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, false, nil)
	relay := newFakeRelay(t)
	relay.holdFor, relay.holdMax = 4, 10*time.Second
	m := onceMailer(t, v, relay.url, 4, 45*time.Second)
	// Twelve deliveries for four workers. A mailer of a service beside the
	// tests may claim some of them first (it sends them to the stack's
	// sink); when it left fewer than four at once, another twelve.
	var recipients, ids []string
	most := 0
	for try := 0; try < 3 && most < 4; try++ {
		relay.mu.Lock()
		relay.maxData, relay.gathered = 0, make(chan struct{})
		relay.mu.Unlock()
		r, i := taskDeliveries(t, v.pool, v.project, 12)
		recipients, ids = append(recipients, r...), append(ids, i...)
		due(t, v.pool, i)
		if _, err := m.SendDue(context.Background(), 100); err != nil {
			t.Fatal(err)
		}
		relay.mu.Lock()
		n := relay.maxData
		relay.mu.Unlock()
		if n > 4 {
			t.Fatalf("%d sessions in DATA at once, want at most 4", n)
		}
		most = max(most, n)
	}
	if most != 4 {
		t.Errorf("%d sessions in DATA at once at most, want 4", most)
	}
	for i, to := range recipients {
		// A delivery a mailer beside the tests claimed may still be on its
		// way to the stack's sink.
		var got []string
		testenv.Eventually(t, 30*time.Second, "delivery "+ids[i]+" received", func() bool {
			got = everywhere(t, relay, to)
			return len(got) > 0
		})
		if len(got) != 1 {
			t.Errorf("delivery %s: received %q, want it once", ids[i], got)
		}
	}
}

// TestMailerStaleClaimDropped: while a claim's lease holds no other mailer
// claims the delivery; a claimer whose claim was taken over sends nothing,
// and what it records, sent or failed, is dropped.
func TestMailerStaleClaimDropped(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, false, nil)
	relay := newFakeRelay(t)
	ctx := context.Background()
	m1 := onceMailer(t, v, relay.url, 1, 10*time.Second)
	m2 := onceMailer(t, v, relay.url, 1, 10*time.Second)
	// claim claims a delivery with m1's composing time set to compose:
	// its lease is that, the session (10 s) and the margin (0.5 s). With
	// no composing time, any composing at all outlasts what the lease
	// allows for: the worker must ask the database before the session.
	claim := func(compose time.Duration) (invoicing.Claim, string) {
		t.Helper()
		m1.Timeout = compose
		defer func() { m1.Timeout = 500 * time.Millisecond }()
		for try := 0; ; try++ { // a service beside the tests may claim it first
			recipients, ids := taskDeliveries(t, v.pool, v.project, 1)
			due(t, v.pool, ids)
			c, ok, err := m1.ClaimOne(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				if c.ID() != ids[0] {
					t.Fatalf("claimed %s, want %s", c.ID(), ids[0])
				}
				return c, recipients[0]
			}
			if try == 2 {
				t.Fatal("the delivery could not be claimed")
			}
		}
	}
	takeOver := func(id string) {
		t.Helper()
		if _, err := v.pool.Exec(ctx, `UPDATE mail_deliveries SET claim_token = gen_random_uuid(), lease_until = now() + interval '1 hour'
			WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	release := func(id string) { // nobody is to send it later
		_, _ = v.pool.Exec(ctx, `UPDATE mail_deliveries SET status = 'blocked' WHERE id = $1`, id)
	}

	leaseOf := func(id string) time.Time {
		t.Helper()
		var until time.Time
		if err := v.pool.QueryRow(ctx, `SELECT lease_until FROM mail_deliveries WHERE id = $1`, id).Scan(&until); err != nil {
			t.Fatal(err)
		}
		return until
	}

	receivedOnce := func(to string, c invoicing.Claim) {
		t.Helper()
		if got := relay.received(to); len(got) != 1 || got[0] != c.MessageID() {
			t.Errorf("received %q, want Message-ID %q once", got, c.MessageID())
		}
	}

	// Taken over before the session: the claim no longer covered the
	// session (composing took longer than its lease allowed for), so the
	// worker asked the database, which names another claimer: not sent,
	// nothing recorded.
	c, to := claim(0)
	if n, err := m2.SendDue(ctx, 10); err != nil || n != 0 {
		t.Errorf("second mailer during the lease: %d tried (%v), want none", n, err)
	}
	takeOver(c.ID())
	if attempted, err := m1.Deliver(ctx, c); attempted || err != nil {
		t.Errorf("delivery under a lost claim: attempted %v (%v), want not attempted", attempted, err)
	}
	for _, cause := range []error{nil, errors.New("relay down")} {
		if err := m1.Record(ctx, c, cause); err != nil {
			t.Fatal(err)
		}
	}
	if d := deliveryByID(t, v.pool, c.ID()); d.status != "pending" || d.attempts != 0 {
		t.Errorf("after the stale claimer's records %+v, want it pending without attempts", d)
	}
	if got := relay.received(to); len(got) != 0 {
		t.Errorf("received %q under a lost claim", got)
	}
	release(c.ID())

	// A claim that still covers the session sends without renewing its
	// lease (no statement before the session); taken over after the
	// session, the send is not recorded by the stale claimer.
	c, to = claim(time.Minute)
	before := leaseOf(c.ID())
	if attempted, err := m1.Deliver(ctx, c); !attempted || err != nil {
		t.Fatalf("delivery under its claim: attempted %v (%v)", attempted, err)
	}
	if after := leaseOf(c.ID()); !after.Equal(before) {
		t.Errorf("the lease moved from %s to %s: renewed although the claim covered the session", before, after)
	}
	takeOver(c.ID())
	if err := m1.Record(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	if d := deliveryByID(t, v.pool, c.ID()); d.status != "pending" || d.attempts != 0 {
		t.Errorf("after the stale claimer's record %+v, want it pending without attempts", d)
	}
	receivedOnce(to, c)
	release(c.ID())

	// Composing took longer than the lease allows for, the claim is still
	// the worker's: renewed over the session, then sent and recorded.
	c, to = claim(0)
	before = leaseOf(c.ID())
	if attempted, err := m1.Deliver(ctx, c); !attempted || err != nil {
		t.Fatalf("delivery under a claim renewed before the session: attempted %v (%v)", attempted, err)
	}
	if after := leaseOf(c.ID()); !after.After(before) {
		t.Errorf("the lease stayed at %s (now %s): not renewed although composing outlasted what it allowed for", before, after)
	}
	if err := m1.Record(ctx, c, nil); err != nil {
		t.Fatal(err)
	}
	if d := deliveryByID(t, v.pool, c.ID()); d.status != "sent" || d.attempts != 1 {
		t.Errorf("after the record under a renewed claim %+v, want it sent after one attempt", d)
	}
	receivedOnce(to, c)
}

// TestMailerSendsWhatItsProcessArchives: while a mailer runs, the documents
// its service archives are recorded with their delivery claimed for it and
// handed to it: it sends them at once, although it looks for due
// deliveries in the database only once an hour, with the Message-ID the
// record carries, the document's number and its PDF; the delivery is
// recorded as sent after one attempt. Mailers of other processes cannot
// take such a delivery while its claim lasts.
func TestMailerSendsWhatItsProcessArchives(t *testing.T) {
	t.Parallel()
	a := mailArchive(t)
	v := newInvoicing(t, false, nil)
	m := testMailer(t, v, a, testenv.Env("O2I_SMTP_URL"))
	m.Every = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = m.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	// The mailer takes hand-offs once it runs: until then a document's
	// delivery is recorded unclaimed, for any mailer to claim.
	var id, to string
	var token, messageID *string
	testenv.Eventually(t, 30*time.Second, "a delivery recorded claimed", func() bool {
		to = "handoff-" + uuid.NewString()[:8] + "@example.com"
		id = mailed(t, v, a, to)
		if err := v.pool.QueryRow(ctx, `SELECT claim_token::text, message_id FROM mail_deliveries WHERE invoice_id = $1`, id).
			Scan(&token, &messageID); err != nil {
			t.Fatal(err)
		}
		return token != nil
	})
	if messageID == nil {
		t.Fatal("a delivery claimed when recorded has no Message-ID")
	}
	testenv.Eventually(t, 30*time.Second, "the handed-off delivery sent", func() bool { return delivery(t, v, id).status == "sent" })
	if d := delivery(t, v, id); d.attempts != 1 || d.sentAt == nil || d.lastError != nil {
		t.Errorf("sent delivery %+v", d)
	}
	var number string
	if err := v.pool.QueryRow(ctx, `SELECT number FROM invoices WHERE id = $1`, id).Scan(&number); err != nil {
		t.Fatal(err)
	}
	mails := testenv.Mails(t, to)
	if len(mails) != 1 {
		t.Fatalf("%d messages to %s, want 1", len(mails), to)
	}
	got := mails[0]
	if got.Header.Get("Message-Id") != "<"+*messageID+">" || got.Subject != "Ihre Rechnung "+number || !strings.Contains(got.Text, number) {
		t.Errorf("message: Message-ID %q (want <%s>), subject %q, text %q", got.Header.Get("Message-Id"), *messageID, got.Subject, got.Text)
	}
	if pdf := got.Attachments[number+".pdf"]; len(got.Attachments) != 1 || !strings.HasPrefix(string(pdf), "%PDF-") {
		t.Errorf("attachments %v", got.Types)
	}
}

// TestMailerGivesBackWhatIsLeft: a delivery still handed off when its
// mailer stops is given back (no claim, due at once) for any mailer to send
// now rather than after the claim's lease.
func TestMailerGivesBackWhatIsLeft(t *testing.T) {
	t.Parallel()
	v := newInvoicing(t, false, nil)
	ctx := context.Background()
	m := onceMailer(t, v, newFakeRelay(t).url, 1, 10*time.Second)
	var c invoicing.Claim
	testenv.Eventually(t, 30*time.Second, "a claimed delivery", func() bool { // a service beside the tests may claim it first
		_, ids := taskDeliveries(t, v.pool, v.project, 1)
		due(t, v.pool, ids)
		var ok bool
		var err error
		if c, ok, err = m.ClaimOne(ctx); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	m.HandOff(c)
	m.GiveBack()
	var claimed, leased, isDue bool
	if err := v.pool.QueryRow(ctx, `SELECT claim_token IS NOT NULL, lease_until IS NOT NULL, next_attempt_at <= now() FROM mail_deliveries WHERE id = $1`,
		c.ID()).Scan(&claimed, &leased, &isDue); err != nil {
		t.Fatal(err)
	}
	if claimed || leased || !isDue {
		t.Errorf("given back: claimed %v, leased %v, due %v; want false, false, true", claimed, leased, isDue)
	}
	// Nothing is left to give back.
	m.GiveBack()
}
