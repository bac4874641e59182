package command_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/httpx"
)

func creditTx(id, typ, email string, amount int) map[string]any {
	return map[string]any{"id": id, "type": typ, "email": email, "amount_cents": amount, "occurred_at": "2026-03-01T10:15:00+01:00", "order_ref": "1001"}
}

func (e *env) postCredit(txs ...any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, "/v1/credit-transactions", "", mustJSON(e.t, map[string]any{"transactions": txs}))
}

func TestCreditTransactionsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	many := make([]any, 501)
	for i := range many {
		many[i] = creditTx(fmt.Sprint("t", i), "earn", "a@example.com", 1)
	}
	bad := func(k string, v any) any {
		m := creditTx("x", "earn", "a@example.com", 1)
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name  string
		txs   []any
		field string
	}{
		{"too many", many, "transactions"},
		{"none", []any{}, "transactions"},
		{"id missing", []any{creditTx("a", "earn", "a@example.com", 1), bad("id", nil)}, "transactions[1].id"},
		{"type unknown", []any{bad("type", "gift")}, "transactions[0].type"},
		{"email invalid", []any{bad("email", "nope")}, "transactions[0].email"},
		{"amount fraction", []any{bad("amount_cents", json.Number("1.5"))}, "transactions[0].amount_cents"},
		{"amount missing", []any{bad("amount_cents", nil)}, "transactions[0].amount_cents"},
		{"occurred_at without offset", []any{bad("occurred_at", "2026-03-01T10:15:00")}, "transactions[0].occurred_at"},
		{"order_ref number", []any{bad("order_ref", 5)}, "transactions[0].order_ref"},
		{"order_ref with CR LF", []any{bad("order_ref", "1001\r\n1002")}, "transactions[0].order_ref"},
		{"id with ESC", []any{bad("id", "ct\u001b1")}, "transactions[0].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.postCredit(tt.txs...)
			if r.status != 422 || r.errBody(t).Error.Field != tt.field {
				t.Errorf("%d %s, want 422 field %s", r.status, r.body, tt.field)
			}
		})
	}
	if n := len(e.outboxEvents()); n != 0 {
		t.Errorf("%d events after rejected calls", n)
	}
}

func TestCreditTransactionsAppliedOnceAndReconciled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.postCredit(creditTx("t1", "earn", "Kunde@Example.com", 1000), creditTx("t2", "redeem", "kunde@example.com", 300), creditTx("t1", "earn", "kunde@example.com", 1000))
	var got command.CreditTransactionsResult
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got.Accepted != 3 || got.Applied != 2 || got.Duplicates != 1 || got.RequestID != r.header.Get("X-Request-Id") {
		t.Errorf("first call: %+v", got)
	}
	r = e.postCredit(creditTx("t2", "redeem", "kunde@example.com", 300), creditTx("t3", "reverse", "kunde@example.com", -200), creditTx("t4", "earn", "other@example.com", 50))
	json.Unmarshal(r.body, &got)
	if got.Accepted != 3 || got.Applied != 2 || got.Duplicates != 1 {
		t.Errorf("second call: %+v", got)
	}
	evs := e.outboxEvents()
	if len(evs) != 4 || evs[0].Type != event.CreditTransactionRecorded || evs[0].Topic != event.TopicPayments || evs[0].AggregateKey != "kunde@example.com" {
		t.Fatalf("events %+v", evs)
	}

	// kunde: 1000 - 300 - 200 = 500; other: 50.
	put := func(bs ...any) command.CreditBalancesResult {
		t.Helper()
		r := e.do(http.MethodPut, "/v1/credit-balances", "", mustJSON(t, map[string]any{"balances": bs}))
		var env httpx.Envelope[command.CreditBalancesResult]
		if err := json.Unmarshal(r.body, &env); err != nil || r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return env.Data
	}
	res := put(map[string]any{"email": "KUNDE@example.com", "balance_cents": 500}, map[string]any{"email": "other@example.com", "balance_cents": 50})
	if res.Compared != 2 || res.Mismatches != 0 {
		t.Errorf("matching balances: %+v", res)
	}
	tasks := func() int {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM tasks WHERE project_id = $1 AND kind = $2 AND status = 'open'`, e.project, command.TaskCreditBalanceMismatch).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := tasks(); n != 0 {
		t.Errorf("%d tasks for matching balances", n)
	}
	res = put(map[string]any{"email": "kunde@example.com", "balance_cents": 700}, map[string]any{"email": "new@example.com", "balance_cents": 10})
	if res.Compared != 2 || res.Mismatches != 2 || tasks() != 2 {
		t.Errorf("differing balances: %+v, %d tasks", res, tasks())
	}
	// Reported again: still one open task per customer.
	put(map[string]any{"email": "kunde@example.com", "balance_cents": 710})
	if n := tasks(); n != 2 {
		t.Errorf("%d open tasks after a repeated mismatch, want 2", n)
	}
	r = e.do(http.MethodPut, "/v1/credit-balances", "", []byte(`{"balances":[{"email":"x@example.com","balance_cents":"5"}]}`))
	if r.status != 422 || r.errBody(t).Error.Field != "balances[0].balance_cents" {
		t.Errorf("bad balance: %d %s", r.status, r.body)
	}
}

// TestCreditBalancesOverBatches: an upload of 2,500 balances (three
// batches) compares each with the history: matching ones open nothing, a
// customer reported twice in different batches is counted twice and its
// one task shows the last report, e-mails compare case-insensitively, and
// the same upload again updates the same open tasks.
func TestCreditBalancesOverBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// History: a@ 1000 - 300 = 700; b@ -200 (a reversal); c@ 50.
	e.postCredit(creditTx("h1", "earn", "A@example.com", 1000), creditTx("h2", "redeem", "a@example.com", -300),
		creditTx("h3", "reverse", "b@example.com", -200), creditTx("h4", "earn", "c@example.com", 50))
	bs := make([]any, 2500)
	for i := range bs {
		bs[i] = map[string]any{"email": fmt.Sprintf("k%d@example.com", i), "balance_cents": 0} // no history: 0, matching
	}
	bs[3] = map[string]any{"email": "a@EXAMPLE.com", "balance_cents": 700}   // matches
	bs[4] = map[string]any{"email": "b@example.com", "balance_cents": -200}  // matches
	bs[5] = map[string]any{"email": "c@example.com", "balance_cents": 60}    // differs
	bs[1500] = map[string]any{"email": "C@example.com", "balance_cents": 70} // differs again, later batch
	bs[2400] = map[string]any{"email": "d@example.com", "balance_cents": 5}  // no history: differs
	put := func() command.CreditBalancesResult {
		t.Helper()
		r := e.do(http.MethodPut, "/v1/credit-balances", "", mustJSON(t, map[string]any{"balances": bs}))
		var env httpx.Envelope[command.CreditBalancesResult]
		if err := json.Unmarshal(r.body, &env); err != nil || r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return env.Data
	}
	tasks := func() map[string]string {
		t.Helper()
		rows, err := e.pool.Query(context.Background(), `SELECT subject, details::text FROM tasks WHERE project_id = $1 AND kind = $2 AND status = 'open'`,
			e.project, command.TaskCreditBalanceMismatch)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var s, d string
			if err := rows.Scan(&s, &d); err != nil {
				t.Fatal(err)
			}
			out[s] = d
		}
		return out
	}
	want := map[string]string{
		"c@example.com": `{"email": "C@example.com", "computedCents": 50, "reportedCents": 70}`,
		"d@example.com": `{"email": "d@example.com", "computedCents": 0, "reportedCents": 5}`,
	}
	for _, round := range []string{"first", "again"} {
		if res := put(); res.Compared != 2500 || res.Mismatches != 3 {
			t.Errorf("%s upload: %+v, want 2500 compared and 3 mismatches", round, res)
		}
		got := tasks()
		if len(got) != len(want) {
			t.Errorf("%s upload: tasks %v, want %v", round, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s upload: task of %s: %s, want %s", round, k, got[k], v)
			}
		}
	}
}
