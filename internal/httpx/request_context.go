package httpx

import "github.com/go-chi/chi/v5"

// requestContext is a request's context as the server makes it: the
// caller's trace (parent), the request's state, chi's route context, the
// client's address and the route's deadline (set in place by the route).
// One value instead of a chain of context.WithValue and a deadline context
// of the route: the request is copied once (WithContext) instead of at
// every link, and chi, finding its route context, does not copy it again.
type requestContext struct {
	deadlineCtx
	state  *statusRecorder
	route  *chi.Context
	client *string // nil: the TCP peer is the client (no trusted proxies)
}

func (c *requestContext) Value(key any) any {
	switch key.(type) {
	case stateKey:
		return c.state
	case clientAddrKey:
		if c.client != nil {
			return *c.client
		}
		return nil
	}
	if key == chi.RouteCtxKey {
		return c.route
	}
	return c.deadlineCtx.Value(key)
}

func (c *requestContext) String() string { return "httpx.request" }
