package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/projection"
)

// reads measures GET /v1/orders/{orderNo} over n projected orders against
// the HTTP ceiling of a trivial chi handler, both with wrk.
func (b *bench) reads(ctx context.Context, n, conns int, d time.Duration) ([]result, error) {
	if err := b.serve(ctx); err != nil {
		return nil, err
	}
	projectID, keys, err := b.newProject(ctx, "bench reads "+time.Now().Format(time.RFC3339), 64)
	if err != nil {
		return nil, err
	}
	log.Printf("reads: projecting %d orders", n)
	start := time.Now()
	p := projection.New(b.pool, b.rdb, testenv.KafkaBrokers(), nil)
	batch := make([]kafka.Message, 0, projection.MaxBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := p.Apply(ctx, batch)
		batch = batch[:0]
		return err
	}
	for i := range n {
		orderNo := fmt.Sprintf("BENCH-%d", i)
		o := event.Order{ID: uuid.NewString(), ProjectID: projectID, Status: "invoiced", Version: 1, FulfillmentStatus: "fulfilled"}
		o.OrderNo = orderNo

		ev, err := event.New(event.OrderCreated, projectID, "order", o.ID, orderNo, 1, time.Now(), o)
		if err != nil {
			return nil, err
		}
		inv := event.Invoice{ID: uuid.NewString(), ProjectID: projectID, OrderID: o.ID, OrderNo: orderNo, Number: fmt.Sprintf("TEST-2026-%d", i+1),
			Status: "archived", Version: 1, Type: "invoice", Format: "zugferd", IssueDate: "2026-11-22", Currency: "EUR",
			TotalNetCents: 2000, TotalTaxCents: 140, TotalGrossCents: 2140, TestMode: true, CreatedAt: time.Now()}
		iev, err := event.New(event.InvoiceCreated, projectID, "invoice", inv.ID, orderNo, 1, time.Now(), inv)
		if err != nil {
			return nil, err
		}

		for _, e := range []event.Event{ev, iev} {
			raw, err := event.Encode(e)
			if err != nil {
				return nil, err
			}
			batch = append(batch, kafka.Message{Topic: e.Topic, Value: raw})
		}
		if len(batch) >= projection.MaxBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	log.Printf("reads: projected %d orders in %s", n, time.Since(start).Round(time.Millisecond))

	var out []result
	for _, c := range []int{conns / 4, conns / 2, conns} {
		r, err := b.readLoad(ctx, keys, n, c, d)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// readLoad measures GET /v1/orders/{orderNo} with conns connections
// between two runs of the ceiling, one before and one after it: the
// machine's load moves between runs, and the share is taken of their mean.
func (b *bench) readLoad(ctx context.Context, keys []string, n, conns int, d time.Duration) (result, error) {
	ceilingRun := func() (wrkResult, error) {
		stop, err := b.startCeiling(ctx, localAddr(18081))
		if err != nil {
			return wrkResult{}, err
		}
		defer stop()
		return b.wrk(ctx, "http://"+localAddr(18081), fmt.Sprintf(`
local keys = %s
request = function()
  return wrk.format("GET", "/ceiling", {["Authorization"] = "Bearer " .. keys[math.random(#keys)]})
end`, luaStrings(keys)), conns, d)
	}
	before, err := ceilingRun()
	if err != nil {
		return result{}, err
	}
	log.Printf("reads: %d connections: ceiling %s; %s", conns, before, before.cost())
	script := fmt.Sprintf(`
local keys = %s
request = function()
  return wrk.format("GET", "/v1/orders/BENCH-" .. math.random(0, %d), {["Authorization"] = "Bearer " .. keys[math.random(#keys)]})
end`, luaStrings(keys), n-1)
	b.profileAs = fmt.Sprintf("reads-%d", conns)
	orders, err := b.wrk(ctx, b.baseURL, script, conns, d)
	if err != nil {
		return result{}, err
	}
	log.Printf("reads: %d connections: orders %s; %s", conns, orders, orders.cost())
	after, err := ceilingRun()
	if err != nil {
		return result{}, err
	}
	log.Printf("reads: %d connections: ceiling again %s; %s", conns, after, after.cost())
	target := "≥ 40 % of the ceiling, p99 < 10 ms"
	if conns == 32 {
		target = "≥ 65 % of the ceiling, p99 < 8 ms"
	}
	return result{
		What:     fmt.Sprintf("GET /v1/orders/{orderNo}, %d projected orders, %d connections, 64 keys (wrk)", n, conns),
		Measured: fmt.Sprintf("%s = %.0f %% of the ceiling (their mean); %s%s", orders, 200*orders.rps/(before.rps+after.rps), orders.cost(), loadAverage()),
		Ceiling: fmt.Sprintf("trivial chi handler, fixed JSON, before and after: %s; %s (%s; %s)",
			before, after, before.cost(), after.cost()),
		Target: target,
	}, nil
}
