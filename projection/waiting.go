package projection

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/internal/lifecycle"
)

// What an order waits for (waitingFor in its status record) is decided here
// from its state with the lifecycle rules; only whether its paymentGateway
// is one of the project's invoice-first gateways comes from the project,
// read at most every gatewayTTL.

const gatewayTTL = 5 * time.Second

var gateways = struct {
	sync.Mutex
	m map[string]cachedGateways
}{m: map[string]cachedGateways{}}

type cachedGateways struct {
	list []string
	at   time.Time
}

// invoiceFirstGateways returns the project's invoice-first gateways.
func invoiceFirstGateways(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, projectID string) ([]string, error) {
	gateways.Lock()
	c, ok := gateways.m[projectID]
	gateways.Unlock()
	if ok && time.Since(c.at) < gatewayTTL {
		return c.list, nil
	}
	var list []string
	err := q.QueryRow(ctx, `SELECT coalesce(array(SELECT jsonb_array_elements_text(settings->'invoiceFirstGateways')), '{}')
		FROM projects WHERE id = $1`, projectID).Scan(&list)
	if err != nil && err != pgx.ErrNoRows {
		return nil, err
	}
	gateways.Lock()
	if len(gateways.m) > 10_000 {
		gateways.m = map[string]cachedGateways{}
	}
	gateways.m[projectID] = cachedGateways{list, time.Now()}
	gateways.Unlock()
	return list, nil
}

// resolveWaiting decides waitingFor, waitingForAll and payment of every
// order state of a batch.
func resolveWaiting(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, orders map[orderRef]orderState) error {
	for ref, o := range orders {
		f := o.facts
		if o.paymentGateway != "" && !f.Paid && !f.CoveredByCredit && o.status != "cancelled" {
			list, err := invoiceFirstGateways(ctx, q, ref.projectID)
			if err != nil {
				return err
			}
			// provider_transfer (bank transfer through the payment provider)
			// is always invoiced first, as an open item.
			f.InvoiceFirst = slices.Contains(list, o.paymentGateway) || o.paymentGateway == "provider_transfer"
		}
		o.waitingFor = string(lifecycle.Decide(f).WaitingFor)
		w := lifecycle.Waits(f)
		o.waitingForAll = make([]string, len(w))
		for i := range w {
			o.waitingForAll[i] = string(w[i])
		}
		o.payment = lifecycle.PaymentOf(f)
		orders[ref] = o
	}
	return nil
}
