package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TxBatch returns a batch whose first query begins a transaction (pgx's
// Batch.BeginTx): the transaction's first queries, queued on it, go out in
// the BEGIN's round trip. Run it with WithTxBatch.
func TxBatch() *pgx.Batch {
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	return b
}

// ErrCommitReads is returned by WithTxBatch for a committing batch with a
// query whose result is read by a callback: PostgreSQL runs the COMMIT
// behind it whatever the callback decides, so a check of the result must
// be made inside the statement instead (assert_true, migration 00222).
var ErrCommitReads = errors.New("store: a query of the batch that commits reads its result")

// rollbackTimeout bounds the ROLLBACK of a transaction that failed, which
// runs even when the caller's context has ended.
const rollbackTimeout = 5 * time.Second

// WithTxBatch runs a transaction in two round trips fewer than WithTx: its
// BEGIN goes out with first's queries (first made by TxBatch) and its
// COMMIT with the batch fn returns. fn runs on the open transaction once
// first's results are read and their callbacks have run; the batch it
// returns (nil: none) is sent with COMMIT queued at its end, so a lock the
// transaction holds is released in that same round trip. None of that
// batch's queries may read its result (ErrCommitReads); a statement of it
// that fails stops the rest, the COMMIT among them. Any error (first's,
// fn's, the last batch's or the COMMIT's) leaves nothing committed and is
// returned; like WithTx it does not retry.
func WithTxBatch(ctx context.Context, pool *pgxpool.Pool, first *pgx.Batch, fn func(tx pgx.Tx) (last *pgx.Batch, err error)) error {
	conn, err := Acquire(ctx, pool)
	if err != nil {
		return err
	}
	defer conn.Release()
	br := conn.SendBatch(ctx, first)
	tx := br.Tx()
	if tx == nil {
		_ = br.Close()
		return errors.New("store: WithTxBatch needs a batch made by TxBatch")
	}
	if err := br.Close(); err != nil {
		return errors.Join(err, rollback(ctx, tx))
	}
	last, err := fn(tx)
	if err == nil {
		err = commitWith(ctx, tx, last)
	}
	if err != nil {
		return errors.Join(err, rollback(ctx, tx))
	}
	return nil
}

// commitWith sends last with COMMIT at its end.
func commitWith(ctx context.Context, tx pgx.Tx, last *pgx.Batch) error {
	if last == nil {
		last = &pgx.Batch{}
	}
	for _, q := range last.QueuedQueries {
		if q.Fn != nil {
			return fmt.Errorf("%w: %.60s", ErrCommitReads, q.SQL)
		}
	}
	last.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error {
		if ct.String() == "ROLLBACK" { // the transaction had failed before: nothing committed
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	return tx.SendBatch(ctx, last).Close()
}

// rollback ends tx when the connection is still in it (a statement failed,
// or fn returned an error); after a failed COMMIT it is not.
func rollback(ctx context.Context, tx pgx.Tx) error {
	if tx.Conn().PgConn().IsClosed() || tx.Conn().PgConn().TxStatus() == 'I' {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := tx.Rollback(rctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}
