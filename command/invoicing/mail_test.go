package invoicing_test

import (
	"context"
	"fmt"
	"strings"
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
	v := newInvoicing(t, false, nil)
	to := "flaky2-" + uuid.NewString()[:8] + "@example.com"
	id := mailed(t, v, a, to)
	if d := delivery(t, v, id); d.status != "pending" || d.attempts != 0 {
		t.Fatalf("new delivery %+v", d)
	}
	m := testMailer(t, v, a, testenv.Env("O2I_SMTP_URL"))
	// A service running beside the tests polls the same deliveries once a
	// second with five attempts before a task. So that the attempt that
	// reaches this mailer's two is this mailer's, a failed attempt is due
	// again only in an hour, and the test makes it due right before each of
	// its own claims.
	m.Backoff, m.MaxBackoff = time.Hour, time.Hour
	ctx := context.Background()
	sendNow := func() {
		t.Helper()
		if _, err := v.pool.Exec(ctx, `UPDATE mail_deliveries SET next_attempt_at = now() WHERE invoice_id = $1 AND status = 'pending'`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := m.SendDue(ctx, 100); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 90*time.Second, "two refused attempts", func() bool {
		sendNow()
		return delivery(t, v, id).attempts >= 2
	})
	if d := delivery(t, v, id); d.attempts == 2 && (d.status != "pending" || d.lastError == nil || !strings.Contains(*d.lastError, "451")) {
		t.Errorf("after two refusals %+v", d)
	}
	if s := deliveryTask(t, v, id); s != "open" && delivery(t, v, id).attempts == 2 {
		t.Errorf("task after two refusals: %q", s)
	}
	testenv.Eventually(t, 90*time.Second, "the delivery sent", func() bool {
		sendNow()
		return delivery(t, v, id).status == "sent"
	})
	if d := delivery(t, v, id); d.attempts != 3 || d.sentAt == nil {
		t.Errorf("sent delivery %+v", d)
	}
	if s := deliveryTask(t, v, id); s != "resolved" {
		t.Errorf("task after sending: %q", s)
	}
	if n := len(testenv.Mails(t, to)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
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

	down := mailed(t, v, a, "kunde-"+uuid.NewString()[:8]+"@example.com")
	dead := testMailer(t, v, a, "smtp://127.0.0.1:1")
	dead.Attempts = 100
	// The dead relay's mailer claims the delivery at once (a service of the
	// stack polls once a second).
	if _, err := dead.SendDue(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if d := delivery(t, v, down); d.status != "pending" || d.attempts != 1 || d.lastError == nil || !strings.Contains(*d.lastError, "127.0.0.1:1") {
		t.Errorf("delivery with the relay down %+v", d)
	}
}
