package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// creditOrder is a digital order paid completely with store credit: due at once.
func creditOrder(orderNo string, quantity string, unitNetCents int64, grossCents int64) []byte {
	return []byte(fmt.Sprintf(`{"orderNo":%q,"financialStatus":"paid",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"items":[{"name":"Beratung je Stunde","quantity":%s,"unitNetCents":%d,"taxRate":19}],
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"creditRedemptions":[{"type":"referral_credit","amountCents":%d,"externalRef":"ref-%s"}],"grossTotalCents":%d}`,
		orderNo, quantity, unitNetCents, grossCents, orderNo, grossCents))
}

// TestPoisonOrderDoesNotStopItsPartition: an order event the invoicer can
// never handle (its stored order cannot be read) becomes a dead letter with
// an invoicing_failed task, and the good orders behind it on the same
// partition are invoiced and archived. Once the cause is fixed, the
// reconciler's retry invoices it and resolves the task.
func TestPoisonOrderDoesNotStopItsPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	c := client(t)
	suffix := uuid.NewString()[:8]

	// The poison: an order waiting for its payment whose stored content is
	// then broken, and an event that says it is due.
	poison := "POISON-" + suffix
	r := c.Do("POST", "/v1/orders", key, []byte(fmt.Sprintf(`{"orderNo":%q,"paymentRef":"pi_%s","paymentGateway":"stripe",
		"billingAddress":{"country_code":"DE","name":"Max Muster","street":"Weg 1","postal_code":"10115","city":"Berlin"},
		"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"},
		"items":[{"name":"Kurs","quantity":1,"unitNetCents":1000,"taxRate":19}]}`, poison, suffix)), "Idempotency-Key", poison)
	if r.Status != http.StatusCreated {
		t.Fatalf("poison order: %d %s", r.Status, r.Body)
	}
	poisonID := r.JSON(t)["data"].(map[string]any)["id"].(string)
	var content []byte
	if err := pool.QueryRow(ctx, `SELECT content FROM orders WHERE id = $1`, poisonID).Scan(&content); err != nil {
		t.Fatal(err)
	}
	total := int64(1190)
	err := store.WithTx(ctx, pool, func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `UPDATE orders SET content = '{"items":"not a list"}', version = version + 1 WHERE id = $1
			RETURNING version`, poisonID).Scan(&version); err != nil {
			return err
		}
		now := time.Now().UTC()
		ev, err := event.New(event.OrderUpdated, pid, "order", poisonID, poison, version, now, event.Order{
			ID: poisonID, ProjectID: pid, Status: "created", Version: version, FulfillmentStatus: "unfulfilled", CreatedAt: now, UpdatedAt: now,
			OrderContent: event.OrderContent{OrderNo: poison, FinancialStatus: "paid", GrossTotalCents: &total,
				CreditRedemptions: []event.CreditRedemption{{Type: "referral_credit", AmountCents: total, ExternalRef: "x"}}}})
		if err != nil {
			return err
		}
		return outbox.Enqueue(ctx, tx, ev)
	})
	if err != nil {
		t.Fatal(err)
	}

	// Good orders on the poison's partition, behind it; one of them with a
	// quantity whose product ends in half a cent (2.5 x 1.01 EUR = 2.525).
	parts := partitionsOf(t, event.TopicOrders)
	onPoisonPartition := func(orderNo string) bool {
		h := &kafka.Hash{}
		return h.Balance(kafka.Message{Key: []byte(pid + "/" + orderNo)}, parts...) ==
			h.Balance(kafka.Message{Key: []byte(pid + "/" + poison)}, parts...)
	}
	var good []string
	for i := 0; len(good) < 4; i++ {
		no := fmt.Sprintf("GOOD-%s-%d", suffix, i)
		if onPoisonPartition(no) {
			good = append(good, no)
		}
	}
	for i, no := range good {
		body := creditOrder(no, "1", 1000, 1190)
		if i == 1 {
			body = creditOrder(no, "2.5", 101, 301) // 2.53 net + 0.48 VAT
		}
		if r := c.Do("POST", "/v1/orders", key, body, "Idempotency-Key", no); r.Status != http.StatusCreated {
			t.Fatalf("good order %s: %d %s", no, r.Status, r.Body)
		}
	}
	for _, no := range good {
		waitStatus(t, c, key, no, func(d map[string]any) bool {
			invs := d["invoices"].([]any)
			return d["status"] == "invoiced" && len(invs) == 1 && invs[0].(map[string]any)["status"] == "archived"
		})
	}

	// The poison is a dead letter with its task.
	var deadErr string
	testenv.Eventually(t, 30*time.Second, "dead letter of the poison order", func() bool {
		err := pool.QueryRow(ctx, `SELECT error FROM invoicing_dead_letters WHERE order_id = $1 AND resolved_at IS NULL`, poisonID).Scan(&deadErr)
		return err == nil
	})
	var taskStatus string
	if err := pool.QueryRow(ctx, `SELECT status FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3`,
		pid, invoicing.TaskInvoicingFailed, poison).Scan(&taskStatus); err != nil || taskStatus != "open" {
		t.Fatalf("task of the poison order: %q %v (dead letter: %s)", taskStatus, err, deadErr)
	}

	// The cause is fixed and the retry is due: the reconciler invoices it.
	if _, err := pool.Exec(ctx, `UPDATE orders SET content = $2 WHERE id = $1`, poisonID, content); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE orders SET paid_at = now(), paid_cents = 1190 WHERE id = $1`, poisonID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE invoicing_dead_letters SET next_retry_at = now() WHERE order_id = $1`, poisonID); err != nil {
		t.Fatal(err)
	}
	iv := invoicing.NewInvoicer(invoicing.New(pool), archive.New(testenv.S3(t), testenv.Env("O2I_S3_BUCKET")), testenv.KafkaBrokers())
	if err := iv.RetryDeadLetters(ctx); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, c, key, poison, func(d map[string]any) bool {
		invs := d["invoices"].([]any)
		return d["status"] == "invoiced" && len(invs) == 1 && invs[0].(map[string]any)["status"] == "archived"
	})
	var resolved bool
	if err := pool.QueryRow(ctx, `SELECT resolved_at IS NOT NULL FROM invoicing_dead_letters WHERE order_id = $1`, poisonID).Scan(&resolved); err != nil || !resolved {
		t.Errorf("dead letter resolved = %v, %v", resolved, err)
	}
	if err := pool.QueryRow(ctx, `SELECT status FROM tasks WHERE project_id = $1 AND kind = $2 AND subject = $3`,
		pid, invoicing.TaskInvoicingFailed, poison).Scan(&taskStatus); err != nil || taskStatus != "resolved" {
		t.Errorf("task after the retry: %q %v", taskStatus, err)
	}
}

// partitionsOf returns the partition numbers of topic.
func partitionsOf(t *testing.T, topic string) []int {
	t.Helper()
	conn, err := kafka.Dial("tcp", testenv.KafkaBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ps, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}
