package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/internal/testenv"
)

// mailConfig sizes the mail stage.
type mailConfig struct {
	messages    int // deliveries drained
	concurrency int // the mailer's workers (O2I_MAIL_CONCURRENCY)
}

// mails measures the mailer against the stack's SMTP sink, to compare with
// the invoice rate: cfg.messages deliveries (notices of a task, the
// smallest message: composing reads one row; an invoice's e-mail carries
// its PDF as well) recorded before one mailer with cfg.concurrency workers
// starts, then drained; sent mails/s from their being due to the last
// sent_at. Each delivery is claimed on its own, its lease renewed before and
// its outcome recorded after it is sent over its worker's SMTP connection.
// Ceiling, in the same run: as many messages through the same sender by
// cfg.concurrency goroutines with a connection each, without claims or
// records (the sink and the SMTP connections alone).
func (b *bench) mails(ctx context.Context, cfg mailConfig) ([]result, error) {
	if cfg.messages < 1 || cfg.concurrency < 1 {
		return nil, fmt.Errorf("-mail-messages and -mail-concurrency must be at least 1")
	}
	b.stopServer() // no other mailer claims the deliveries
	pool, err := store.Open(ctx, testenv.Env("O2I_DATABASE_URL"), int32(cfg.concurrency+4))
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	p, err := project.Create(ctx, pool, "bench mail "+time.Now().UTC().Format(time.RFC3339), false, project.Accrual)
	if err != nil {
		return nil, err
	}
	// The deliveries, due in an hour until the mailer runs.
	if _, err := pool.Exec(ctx, `WITH t AS (
			INSERT INTO tasks (id, project_id, kind, subject, details)
			SELECT gen_random_uuid(), $1, 'invoice_validation_failed', 'BENCH-' || g, '{}' FROM generate_series(1, $2) g
			RETURNING id, subject)
		INSERT INTO mail_deliveries (id, project_id, kind, task_id, order_no, recipient, status, next_attempt_at)
		SELECT gen_random_uuid(), $1, 'task', id, subject, 'bench-' || lower(subject) || '@example.com', 'pending', now() + interval '1 hour' FROM t`,
		p.ID, cfg.messages); err != nil {
		return nil, fmt.Errorf("record the deliveries: %w", err)
	}
	sender, err := mail.NewSender(testenv.Env("O2I_SMTP_URL"), "Rechnungsversand <rechnung@localhost>")
	if err != nil {
		return nil, err
	}
	m := invoicing.NewMailer(invoicing.New(pool), nil, sender)
	m.Concurrency, m.ProjectID, m.Every = cfg.concurrency, p.ID, 20*time.Millisecond
	var start time.Time
	if err := pool.QueryRow(ctx, `UPDATE mail_deliveries SET next_attempt_at = now() WHERE project_id = $1 RETURNING now()`, p.ID).
		Scan(&start); err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = m.Run(rctx); close(done) }()
	deadline := time.Now().Add(time.Duration(cfg.messages)*100*time.Millisecond + time.Minute)
	for {
		var pending int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM mail_deliveries WHERE project_id = $1 AND status = 'pending'`, p.ID).Scan(&pending); err != nil {
			stop()
			return nil, err
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, fmt.Errorf("%d of %d deliveries still pending", pending, cfg.messages)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	<-done
	var last time.Time
	var failed int
	if err := pool.QueryRow(ctx, `SELECT max(sent_at), count(*) FILTER (WHERE attempts > 1) FROM mail_deliveries WHERE project_id = $1`, p.ID).
		Scan(&last, &failed); err != nil {
		return nil, err
	}
	rate := float64(cfg.messages) / last.Sub(start).Seconds()

	// The ceiling: the same messages through the sender alone.
	var next atomic.Int64
	var sendErr atomic.Value
	t0 := time.Now()
	var wg sync.WaitGroup
	for range cfg.concurrency {
		wg.Go(func() {
			conn := sender.Conn()
			defer conn.Close()
			for i := next.Add(1); i <= int64(cfg.messages); i = next.Add(1) {
				to := fmt.Sprintf("bench-ceiling-%d@example.com", i)
				if err := conn.Send(ctx, mail.Message{MessageID: sender.NewMessageID(), To: to, Subject: "Dringend: Aufgabe",
					Text: "Guten Tag,\n\nzur Bestellung BENCH ist eine dringende Aufgabe offen.\n"}); err != nil {
					sendErr.Store(err)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := sendErr.Load().(error); err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	ceiling := float64(cfg.messages) / time.Since(t0).Seconds()
	return []result{{
		What: fmt.Sprintf("mailer: %d task notices drained by one mailer of %d workers (one claim, send over the worker's open SMTP connection and record each) "+
			"into the stack's SMTP sink (%d retried)", cfg.messages, cfg.concurrency, failed),
		Measured: fmt.Sprintf("%.0f mails/s", rate),
		Ceiling:  fmt.Sprintf("%.0f mails/s (the same messages over %d SMTP connections at once, no database)", ceiling, cfg.concurrency),
		Target:   "≥ the invoice rate (150 invoices/s)",
	}}, nil
}
