package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

// withEmail adds "email" to an order body.
func withEmail(order []byte, email string) []byte {
	return bytes.Replace(order, []byte(`{"orderNo"`), []byte(fmt.Sprintf(`{"email":%q,"orderNo"`, email)), 1)
}

// invoiceDelivery polls GET /v1/invoices/{ref} until its delivery record
// satisfies ok, and returns the record.
func invoiceDelivery(t *testing.T, c *apitest.Client, key, ref string, ok func(d map[string]any) bool) (map[string]any, map[string]any) {
	t.Helper()
	var inv, d map[string]any
	testenv.Eventually(t, 60*time.Second, "the delivery of "+ref, func() bool {
		r := c.Do("GET", "/v1/invoices/"+ref, key, nil)
		var body struct{ Data map[string]any }
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &body) != nil {
			return false
		}
		inv = body.Data
		d, _ = inv["delivery"].(map[string]any)
		return d != nil && ok(d)
	})
	return inv, d
}

// servedDocument GETs path once the document is served (200).
func servedDocument(t *testing.T, c *apitest.Client, key, path string) apitest.Response {
	t.Helper()
	var r apitest.Response
	testenv.Eventually(t, 30*time.Second, path+" served", func() bool {
		r = c.Do("GET", path, key, nil)
		return r.Status == http.StatusOK
	})
	return r
}

// TestInvoiceMailLiveMode: in live mode an archived invoice goes to the
// order's e-mail through the SMTP relay (the local stack's sink): German
// subject and text with the number, the project's contact as Reply-To, the
// PDF attached (ZUGFeRD), and for XRechnung the XML as well. The invoice's
// delivery record says sent, with one attempt.
func TestInvoiceMailLiveMode(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]

	zugferd, xrechnung := "MAIL-"+suffix, "MAILX-"+suffix
	toZ, toX := "kunde-"+suffix+"@example.com", "amt-"+suffix+"@example.com"
	if r := c.Do("POST", "/v1/orders", key, withEmail(creditOrder(zugferd, "1", 10000, 11900), toZ), "Idempotency-Key", zugferd); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	xorder := bytes.Replace(withEmail(creditOrder(xrechnung, "1", 10000, 11900), toX), []byte(`"city":"Berlin"`),
		[]byte(`"city":"Berlin","leitweg_id":"04011000-1234512345-06"`), 1)
	if r := c.Do("POST", "/v1/orders", key, xorder, "Idempotency-Key", xrechnung); r.Status != http.StatusCreated {
		t.Fatalf("XRechnung order: %d %s", r.Status, r.Body)
	}

	inv, d := invoiceDelivery(t, c, key, zugferd, func(d map[string]any) bool { return d["status"] == "sent" })
	number := inv["number"].(string)
	if !strings.HasPrefix(number, "RE-") || d["recipient"] != toZ || d["attempts"] != float64(1) || d["sentAt"] == nil || d["lastError"] != nil {
		t.Errorf("invoice %s, delivery %v", number, d)
	}
	var mails []testenv.Mail
	testenv.Eventually(t, 10*time.Second, "the message in the sink", func() bool { mails = testenv.Mails(t, toZ); return len(mails) > 0 })
	if len(mails) != 1 {
		t.Fatalf("%d messages to %s, want 1", len(mails), toZ)
	}
	m := mails[0]
	if m.Subject != "Ihre Rechnung "+number || !strings.Contains(m.Text, number) || !strings.Contains(m.Text, "119,00 EUR") ||
		!strings.Contains(m.Header.Get("Reply-To"), "rechnung@example.com") {
		t.Errorf("message: subject %q, reply-to %q, text %q", m.Subject, m.Header.Get("Reply-To"), m.Text)
	}
	pdf := m.Attachments[number+".pdf"]
	if len(m.Attachments) != 1 || !bytes.HasPrefix(pdf, []byte("%PDF-")) || m.Types[number+".pdf"] != "application/pdf" {
		t.Errorf("attachments %v", m.Types)
	}
	// The attachment is the archived PDF, byte for byte. The mail may go
	// out before the read model shows the document archived (the mailer
	// is handed it as it is marked archived): the PDF is served from then.
	if served := servedDocument(t, c, key, "/v1/invoices/"+number+"/pdf"); !bytes.Equal(served.Body, pdf) {
		t.Errorf("attached PDF (%d bytes) differs from the archived one (%d bytes)", len(pdf), len(served.Body))
	}

	inv, _ = invoiceDelivery(t, c, key, xrechnung, func(d map[string]any) bool { return d["status"] == "sent" })
	xnumber := inv["number"].(string)
	testenv.Eventually(t, 10*time.Second, "the XRechnung message in the sink", func() bool { mails = testenv.Mails(t, toX); return len(mails) > 0 })
	m = mails[0]
	xml := m.Attachments[xnumber+".xml"]
	if len(m.Attachments) != 2 || !bytes.HasPrefix(m.Attachments[xnumber+".pdf"], []byte("%PDF-")) ||
		!bytes.Contains(xml, []byte("xrechnung")) || m.Subject != "Ihre Rechnung "+xnumber {
		t.Errorf("XRechnung message: subject %q, attachments %v", m.Subject, m.Types)
	}
	if served := servedDocument(t, c, key, "/v1/invoices/"+xnumber+"/xml"); !bytes.Equal(served.Body, xml) {
		t.Errorf("attached XML differs from the archived one")
	}
}

// TestInvoiceMailBlockedInTestMode: a test document is never sent; its
// delivery record says blocked and the sink receives nothing for it.
func TestInvoiceMailBlockedInTestMode(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]
	orderNo, to := "TMAIL-"+suffix, "test-"+suffix+"@example.com"
	if r := c.Do("POST", "/v1/orders", key, withEmail(creditOrder(orderNo, "1", 10000, 11900), to), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	inv, d := invoiceDelivery(t, c, key, orderNo, func(d map[string]any) bool { return true })
	if d["status"] != "blocked" || d["attempts"] != float64(0) || d["sentAt"] != nil || !strings.HasPrefix(inv["number"].(string), "TEST-") {
		t.Errorf("test document's delivery %v", d)
	}
	// A live document sent after it proves the mailer ran past it.
	live := testenv.Project(t, pool, false)
	lkey := testenv.Key(t, pool, live)
	after, lto := "TMAIL2-"+suffix, "live-"+suffix+"@example.com"
	if r := c.Do("POST", "/v1/orders", lkey, withEmail(creditOrder(after, "1", 10000, 11900), lto), "Idempotency-Key", after); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	invoiceDelivery(t, c, lkey, after, func(d map[string]any) bool { return d["status"] == "sent" })
	if n := len(testenv.Mails(t, to)); n != 0 {
		t.Errorf("%d messages for a test document", n)
	}
	// An order without e-mail has no delivery record.
	none := "TMAIL3-" + suffix
	if r := c.Do("POST", "/v1/orders", key, creditOrder(none, "1", 10000, 11900), "Idempotency-Key", none); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	documents(t, c, key, none, "invoiced", 1)
	r := c.Do("GET", "/v1/invoices/"+none, key, nil)
	if r.Status != http.StatusOK || bytes.Contains(r.Body, []byte(`"delivery"`)) {
		t.Errorf("invoice without e-mail: %d %s", r.Status, r.Body)
	}
}

// TestUrgentTaskMailedToContact: in live mode a document that would break
// the rules holds the order with an urgent task, and the project's invoice
// contact gets an e-mail about it.
func TestUrgentTaskMailedToContact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, false)
	suffix := uuid.NewString()[:8]
	contact := "kontakt-" + suffix + "@example.com"
	if _, err := project.Apply(ctx, pool, pid, project.Update{Settings: func(s *project.Settings) {
		s.SellerVATID, s.SellerTaxNumber, s.ContactEmail = "", "", contact
	}}); err != nil {
		t.Fatal(err)
	}
	key := testenv.Key(t, pool, pid)
	c := client(t)
	orderNo := "URGENT-" + suffix
	if r := c.Do("POST", "/v1/orders", key, creditOrder(orderNo, "1", 1000, 1190), "Idempotency-Key", orderNo); r.Status != http.StatusCreated {
		t.Fatalf("order: %d %s", r.Status, r.Body)
	}
	taskState(t, pool, pid, "seller_data_incomplete", orderNo, "open")
	var mails []testenv.Mail
	testenv.Eventually(t, 30*time.Second, "the notice to the invoice contact", func() bool { mails = testenv.Mails(t, contact); return len(mails) > 0 })
	if m := mails[0]; !strings.Contains(m.Subject, "seller_data_incomplete") || !strings.Contains(m.Subject, orderNo) || len(m.Attachments) != 0 {
		t.Errorf("notice: subject %q, attachments %v", m.Subject, m.Types)
	}
}
