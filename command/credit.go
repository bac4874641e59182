package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/outbox"
	"github.com/o2i-service/o2i/internal/store"
)

// Store credit: POST /v1/credit-transactions applies each transaction exactly
// once per id (repeats are counted as duplicates); PUT /v1/credit-balances
// compares the caller's balances with the transaction history and opens a
// review task (kind credit_balance_mismatch) for each customer whose balance
// differs. The history's balance per e-mail (compared case-insensitively) is
// the sum of: earn +|amount_cents|; redeem, payout and expire -|amount_cents|;
// reverse amount_cents as sent (signed: it undoes an earlier transaction).

// MaxCreditTransactions is the most transactions one call may carry.
const MaxCreditTransactions = 500

// MaxCreditBalances is the most balances one call may carry.
const MaxCreditBalances = 10000

// TaskCreditBalanceMismatch is the task kind a differing balance opens.
const TaskCreditBalanceMismatch = "credit_balance_mismatch"

func parseCreditTransactions(body []byte) ([]event.CreditTransaction, error) {
	o, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	arr, ok, err := o.array("transactions")
	if err != nil {
		return nil, err
	}
	if !ok || len(arr) == 0 {
		return nil, apperr.Field("transactions", "transactions must hold at least one entry")
	}
	if len(arr) > MaxCreditTransactions {
		return nil, apperr.Field("transactions", "transactions must hold at most %d entries, got %d", MaxCreditTransactions, len(arr))
	}
	out := make([]event.CreditTransaction, len(arr))
	for i, v := range arr {
		path := atIndex("transactions", i)
		m, isObj := v.(map[string]any)
		if !isObj {
			return nil, typeErr(path, "an object", v)
		}
		t := obj{m: m, path: path}
		ct := &out[i]
		if ct.ID, err = t.id("id", true); err != nil {
			return nil, err
		}
		if ct.Type, err = t.text("type", true, maxIDLength); err != nil {
			return nil, err
		}
		switch ct.Type {
		case "earn", "redeem", "reverse", "payout", "expire":
		default:
			return nil, apperr.Field(t.at("type"), "%s must be one of earn, redeem, reverse, payout, expire", t.at("type"))
		}
		if ct.Email, err = t.text("email", true, maxEmailLength); err != nil {
			return nil, err
		}
		if !validEmail(ct.Email) {
			return nil, apperr.Field(t.at("email"), "%s must be a valid e-mail address", t.at("email"))
		}
		amt, err := t.cents("amount_cents", -maxCents)
		if err != nil {
			return nil, err
		}
		if amt == nil {
			return nil, apperr.Field(t.at("amount_cents"), "%s is required", t.at("amount_cents"))
		}
		ct.AmountCents = *amt
		at, err := t.str("occurred_at", true)
		if err != nil {
			return nil, err
		}
		when, ok := dateTime(at)
		if !ok {
			return nil, apperr.Field(t.at("occurred_at"), "%s must be a date-time with UTC offset, for example 2026-03-01T10:15:00+01:00", t.at("occurred_at"))
		}
		ct.OccurredAt = when.UTC()
		if ct.OrderRef, err = t.id("order_ref", false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Service) recordCreditTransactions(ctx context.Context, projectID string, txs []event.CreditTransaction) (CreditTransactionsResult, error) {
	res := CreditTransactionsResult{Accepted: len(txs)}
	seen := make(map[string]bool, len(txs))
	var uniq []event.CreditTransaction
	for _, t := range txs {
		if seen[t.ID] {
			res.Duplicates++
			continue
		}
		seen[t.ID] = true
		uniq = append(uniq, t)
	}
	n := len(uniq)
	ids, types, emails, orderRefs := make([]string, n), make([]string, n), make([]string, n), make([]*string, n)
	amounts := make([]int64, n)
	occurred := make([]time.Time, n)
	for i, t := range uniq {
		ids[i], types[i], emails[i], amounts[i], occurred[i] = t.ID, t.Type, t.Email, t.AmountCents, t.OccurredAt
		orderRefs[i] = orders.Nullable(t.OrderRef)
	}
	err := store.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO credit_transactions (project_id, id, type, email, amount_cents, occurred_at, order_ref)
SELECT $1, t.id, t.type, t.email, t.amount, t.occurred, t.ref
FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[]) WITH ORDINALITY AS t(id, type, email, amount, occurred, ref, ord)
ORDER BY t.ord
ON CONFLICT (project_id, id) DO NOTHING
RETURNING id`, projectID, ids, types, emails, amounts, occurred, orderRefs)
		if err != nil {
			return err
		}
		applied := map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			applied[id] = true
		}
		if err := rows.Err(); err != nil {
			return err
		}
		res.Applied = len(applied)
		res.Duplicates += n - res.Applied
		var evs []event.Event
		now := time.Now()
		for _, t := range uniq {
			if !applied[t.ID] {
				continue
			}
			ev, err := event.New(event.CreditTransactionRecorded, projectID, "credit", "", strings.ToLower(t.Email), 0, now, t)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		return outbox.Enqueue(ctx, tx, evs...)
	})
	if err != nil {
		return CreditTransactionsResult{}, fmt.Errorf("record credit transactions: %w", err)
	}
	return res, nil
}

func parseCreditBalances(body []byte) ([]CreditBalance, error) {
	o, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	arr, ok, err := o.array("balances")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.Field("balances", "balances is required")
	}
	if len(arr) > MaxCreditBalances {
		return nil, apperr.Field("balances", "balances must hold at most %d entries", MaxCreditBalances)
	}
	out := make([]CreditBalance, len(arr))
	for i, v := range arr {
		path := atIndex("balances", i)
		m, isObj := v.(map[string]any)
		if !isObj {
			return nil, typeErr(path, "an object", v)
		}
		b := obj{m: m, path: path}
		if out[i].Email, err = b.text("email", true, maxEmailLength); err != nil {
			return nil, err
		}
		if !validEmail(out[i].Email) {
			return nil, apperr.Field(b.at("email"), "%s must be a valid e-mail address", b.at("email"))
		}
		c, err := b.cents("balance_cents", -maxCents)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, apperr.Field(b.at("balance_cents"), "%s is required", b.at("balance_cents"))
		}
		out[i].BalanceCents = *c
	}
	return out, nil
}

// balanceBatch is how many reported balances one statement compares.
const balanceBatch = 1000

// reconcileBalances compares each reported balance with the history and
// opens (or updates) a task for each that differs. It works in batches of
// balanceBatch, each one set-based statement committed on its own, so no
// transaction is long (a long one would hold back the outbox relay); a
// repeated call compares again and updates the same open tasks, so a call
// cut short is completed by sending it again. A customer reported twice
// is compared twice and its task shows the last report.
func (s *Service) reconcileBalances(ctx context.Context, projectID string, bs []CreditBalance) (CreditBalancesResult, error) {
	res := CreditBalancesResult{Compared: len(bs)}
	for start := 0; start < len(bs); start += balanceBatch {
		n, err := s.reconcileBatch(ctx, projectID, bs[start:min(start+balanceBatch, len(bs))])
		if err != nil {
			return CreditBalancesResult{}, fmt.Errorf("reconcile credit balances: %w", err)
		}
		res.Mismatches += n
	}
	return res, nil
}

// reconcileBatch compares the balances with the history in one statement:
// the history's balance per e-mail (compared case-insensitively; earn
// +|amount|, redeem, payout and expire -|amount|, reverse as signed), and for each e-mail whose last reported balance differs
// an open task with the reported and computed balance. It returns how many
// of the balances differ.
func (s *Service) reconcileBatch(ctx context.Context, projectID string, bs []CreditBalance) (int, error) {
	emails, shown, reported, ids := make([]string, len(bs)), make([]string, len(bs)), make([]int64, len(bs)), make([]string, len(bs))
	for i, b := range bs {
		emails[i], shown[i], reported[i] = strings.ToLower(b.Email), b.Email, b.BalanceCents
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH r AS (
  SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::uuid[]) WITH ORDINALITY AS r(email, shown, reported, id, ord)),
h AS (
  SELECT lower(c.email) AS email, sum(CASE c.type WHEN 'earn' THEN abs(c.amount_cents) WHEN 'reverse' THEN c.amount_cents
                                      ELSE -abs(c.amount_cents) END) AS computed
  FROM credit_transactions c WHERE c.project_id = $1 AND lower(c.email) IN (SELECT email FROM r) GROUP BY lower(c.email)),
d AS (
  SELECT r.*, coalesce(h.computed, 0) AS computed FROM r LEFT JOIN h ON h.email = r.email WHERE coalesce(h.computed, 0) <> r.reported),
t AS (
  INSERT INTO tasks (id, project_id, kind, subject, details)
  SELECT DISTINCT ON (email) id, $1, $6, email,
         jsonb_build_object('email', shown, 'reportedCents', reported, 'computedCents', computed)
  FROM d ORDER BY email, ord DESC
  ON CONFLICT (project_id, kind, subject) WHERE status = 'open' DO UPDATE SET details = EXCLUDED.details)
SELECT count(*) FROM d`, projectID, emails, shown, reported, ids, TaskCreditBalanceMismatch).Scan(&n)
	return n, err
}
