package command

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/o2i-service/o2i/command/orders"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/event"
	"github.com/o2i-service/o2i/internal/project"
)

// sellerTTL is how long the write side trusts a project's seller settings
// for the order checks below.
const sellerTTL = 5 * time.Second

// sellerCache holds the seller data of recently seen projects.
type sellerCache struct {
	mu sync.Mutex
	m  map[string]cachedSeller
}

type cachedSeller struct {
	s  billing.Seller
	at time.Time
}

func (c *sellerCache) get(ctx context.Context, s *Service, projectID string) (billing.Seller, error) {
	c.mu.Lock()
	e, ok := c.m[projectID]
	c.mu.Unlock()
	if ok && time.Since(e.at) < sellerTTL {
		return e.s, nil
	}
	p, err := project.Get(ctx, s.pool, projectID)
	if err != nil {
		return billing.Seller{}, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 10_000 {
		c.m = map[string]cachedSeller{}
	}
	c.m[projectID] = cachedSeller{p.Seller(), time.Now()}
	c.mu.Unlock()
	return p.Seller(), nil
}

// engineCheck applies the order rules that need the invoice engine at the
// door: VAT rates allowed at the place of supply (items[i].taxRate,
// shippingTaxRate: 19, 7 or 0 for German buyers), grossTotalCents equal to
// the computed amount payable to the cent (no tolerance), credit not
// exceeding it. What only the invoice needs from the order (a complete
// address, for example) is not checked here: such an order is accepted and
// held as a review task when its invoice is due.
func (s *Service) engineCheck(ctx context.Context, projectID string, c event.OrderContent) error {
	seller, err := s.sellers.get(ctx, s, projectID)
	if err != nil {
		return err
	}
	err = billing.Validate(orders.BillingOrder(c, nil), seller)
	var fe billing.FieldErrors
	if !errors.As(err, &fe) {
		return nil
	}
	for _, e := range fe {
		if strings.HasPrefix(e.Field, "billingAddress") || strings.HasPrefix(e.Field, "shippingAddress") {
			continue
		}
		return apperr.Field(e.Field, "%s", e.Message)
	}
	return nil
}
