package command_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/testenv"
)

const webhookSecret = "whsec_test_0123456789abcdef"

var stripeSign = testenv.StripeSignature

func stripeEvent(id, typ, intent string, amount int64) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":%q,"object":"payment_intent","amount":%d,"amount_received":%d,"currency":"eur","status":"succeeded"}}}`,
		id, typ, time.Now().Unix(), intent, amount, amount))
}

// webhook posts body to the project's Stripe webhook with signature sig
// ("" sends none).
func (e *env) webhook(projectID string, body []byte, sig string) reply {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/webhooks/stripe/"+projectID, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// deliver posts a correctly signed event and decodes the answer; ok is
// false (and the test failed) unless it is 200 with a result.
func (e *env) deliver(body []byte) (command.PaymentResult, bool) {
	e.t.Helper()
	r := e.webhook(e.project, body, stripeSign(webhookSecret, body, time.Now()))
	var env struct{ Data command.PaymentResult }
	if r.status != 200 || jsonInto(e.t, r.body, &env) != nil {
		e.t.Errorf("webhook: %d %s", r.status, r.body)
		return command.PaymentResult{}, false
	}
	return env.Data, true
}

func withWebhookSecret(t *testing.T, e *env) {
	t.Helper()
	if _, err := project.Apply(context.Background(), e.pool, e.project, project.Update{Settings: func(s *project.Settings) {
		s.StripeWebhookSecret = webhookSecret
	}}); err != nil {
		t.Fatal(err)
	}
}

func TestStripeWebhookSignature(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := stripeEvent("evt_"+uuid.NewString()[:8], "charge.refunded", "pi_x", 100)
	now := time.Now()
	// Without a secret the project has no webhook; an unknown project gets
	// the very same answer as a wrong signature (no project oracle).
	mismatch := e.webhook(e.project, body, stripeSign("whsec_other", body, now))
	if r := e.webhook(e.project, body, stripeSign(webhookSecret, body, now)); r.status != 400 || r.errBody(t).Error.Code != "invalid_signature" ||
		r.errBody(t).Error.Message != mismatch.errBody(t).Error.Message {
		t.Errorf("no secret: %d %s", r.status, r.body)
	}
	withWebhookSecret(t, e)
	if r := e.webhook(uuid.NewString(), body, stripeSign(webhookSecret, body, now)); r.status != 400 ||
		r.errBody(t).Error.Message != mismatch.errBody(t).Error.Message {
		t.Errorf("unknown project: %d %s", r.status, r.body)
	}
	// A body over 64 KiB is refused before anything else is done with it.
	big := append(append([]byte{}, body[:len(body)-1]...), []byte(`,"pad":"`+strings.Repeat("x", 70<<10)+`"}`)...)
	if r := e.webhook(e.project, big, stripeSign(webhookSecret, big, now)); r.status != 413 {
		t.Errorf("70 KiB body: %d %.200s", r.status, r.body)
	}
	bad := []struct {
		name, sig string
	}{
		{"missing", ""},
		{"malformed", "garbage"},
		{"wrong secret", stripeSign("whsec_other", body, now)},
		{"too old", stripeSign(webhookSecret, body, now.Add(-6*time.Minute))},
		{"from the future", stripeSign(webhookSecret, body, now.Add(6*time.Minute))},
		{"other body", stripeSign(webhookSecret, append([]byte(" "), body...), now)},
		{"v0 only", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v0=" + hex.EncodeToString(make([]byte, 32))},
	}
	for _, b := range bad {
		if r := e.webhook(e.project, body, b.sig); r.status != 400 || r.errBody(t).Error.Code != "invalid_signature" {
			t.Errorf("%s signature: %d %s", b.name, r.status, r.body)
		}
	}
	// During a secret rotation several v1 values come; one matching is enough.
	good := stripeSign(webhookSecret, body, now)
	rotated := stripeSign("whsec_old", body, now) + "," + good[len("t=")+len(strconv.FormatInt(now.Unix(), 10))+1:]
	if r := e.webhook(e.project, body, rotated); r.status != 200 {
		t.Errorf("rotated secrets: %d %s", r.status, r.body)
	}
}

func TestStripePaymentPaysItsOrderOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	withWebhookSecret(t, e)
	o := order(uniqueNo("PAY"))
	o["requiresShipping"] = false
	if r := e.postOrder(mustJSON(t, o)); r.status != 201 {
		t.Fatalf("order: %d %s", r.status, r.body)
	}
	ref := o["paymentRef"].(string)
	evID := "evt_" + uuid.NewString()[:12]
	body := stripeEvent(evID, "payment_intent.succeeded", ref, 4165)
	for i, wantDup := range []bool{false, true, true} { // Stripe delivers at least once
		res, ok := e.deliver(body)
		if !ok || res.Duplicate != wantDup || res.OrderNo == nil || *res.OrderNo != o["orderNo"] || res.Applied != !wantDup {
			t.Fatalf("delivery %d: %+v", i+1, res)
		}
	}
	var paidCents int64
	var payments int
	if err := e.pool.QueryRow(context.Background(), `SELECT o.paid_cents, (SELECT count(*) FROM payments p WHERE p.order_id = o.id)
FROM orders o WHERE o.project_id = $1 AND o.order_no = $2`, e.project, o["orderNo"]).Scan(&paidCents, &payments); err != nil {
		t.Fatal(err)
	}
	if paidCents != 4165 || payments != 1 {
		t.Errorf("order paid %d cents with %d payments, want 4165 and 1", paidCents, payments)
	}
	var updates int
	for _, ev := range e.outboxEvents() {
		if ev.Type == event.OrderUpdated && ev.AggregateKey == o["orderNo"] && ev.AggregateVersion == 2 {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("%d order.updated events of version 2, want 1", updates)
	}
	// A second payment event for the same reference is recorded, not applied again.
	second := stripeEvent("evt_"+uuid.NewString()[:12], "payment_intent.succeeded", ref, 4165)
	if res, ok := e.deliver(second); !ok || res.Applied || res.Duplicate {
		t.Errorf("second payment: %+v", res)
	}
}

func TestPaymentBeforeItsOrderWaitsAndIsMatched(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	withWebhookSecret(t, e)
	o := order(uniqueNo("EARLY"))
	ref := o["paymentRef"].(string)
	body := stripeEvent("evt_"+uuid.NewString()[:12], "payment_intent.succeeded", ref, 4165)
	if res, ok := e.deliver(body); !ok || res.OrderNo != nil || res.Applied {
		t.Fatalf("payment without order: %+v", res)
	}
	openTasks := func() int {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3 AND status = 'open'`,
			e.project, orders.TaskPaymentWithoutOrder, ref).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if openTasks() != 1 {
		t.Errorf("no open %s task", orders.TaskPaymentWithoutOrder)
	}
	created := e.postOrder(mustJSON(t, o))
	if created.status != 201 {
		t.Fatalf("order: %d %s", created.status, created.body)
	}
	paid, err := orders.PaidAt(context.Background(), e.pool, e.project, created.order(t).ID)
	if err != nil || paid == nil {
		t.Fatalf("the waiting payment was not matched: %v %v", paid, err)
	}
	if openTasks() != 0 {
		t.Error("the payment task stays open after the order arrived")
	}
	if again, err := orders.PaidAt(context.Background(), e.pool, e.project, created.order(t).ID); err != nil || again == nil || !again.Equal(*paid) {
		t.Errorf("second check: %v %v", again, err)
	}
}

func jsonInto(t *testing.T, body []byte, v any) error {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Errorf("body %s: %v", body, err)
		return err
	}
	return nil
}

// TestPaidAtOfAnOrderBeforeItsPayment: an unpaid order with a reference and
// no payment waiting for it is not paid; once its payment arrives it is,
// from then on without a transaction.
func TestPaidAtOfAnOrderBeforeItsPayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	withWebhookSecret(t, e)
	o := order(uniqueNo("LATE"))
	created := e.postOrder(mustJSON(t, o))
	if created.status != 201 {
		t.Fatalf("order: %d %s", created.status, created.body)
	}
	id := created.order(t).ID
	if paid, err := orders.PaidAt(context.Background(), e.pool, e.project, id); err != nil || paid != nil {
		t.Fatalf("an order without its payment: paid %v, %v", paid, err)
	}
	body := stripeEvent("evt_"+uuid.NewString()[:12], "payment_intent.succeeded", o["paymentRef"].(string), 4165)
	if res, ok := e.deliver(body); !ok || !res.Applied {
		t.Fatalf("payment of the order: %+v", res)
	}
	paid, err := orders.PaidAt(context.Background(), e.pool, e.project, id)
	if err != nil || paid == nil {
		t.Fatalf("after its payment: paid %v, %v", paid, err)
	}
	if _, err := orders.PaidAt(context.Background(), e.pool, e.project, uuid.NewString()); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("an order that does not exist: %v", err)
	}
}
