package httpx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

type testKey struct{}

// withDeadline (for these tests) returns parent with the deadline at (or
// parent's own, if earlier) and the function that releases it, as
// context.WithDeadline.
func withDeadline(parent context.Context, at time.Time) (context.Context, context.CancelFunc) {
	c := &deadlineCtx{parent: parent}
	c.setDeadline(at)
	return c, c.stop
}

func TestDeadlineExpires(t *testing.T) {
	parent := context.WithValue(context.Background(), testKey{}, "v")
	ctx, cancel := withDeadline(parent, time.Now().Add(20*time.Millisecond))
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
		t.Fatalf("deadline %v %v", d, ok)
	}
	if ctx.Value(testKey{}) != "v" {
		t.Fatal("parent's value lost")
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("deadline never ended the context")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("err %v, cause %v", ctx.Err(), context.Cause(ctx))
	}
}

func TestDeadlinePassedUnwatched(t *testing.T) {
	ctx, cancel := withDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	// Nothing waited while it passed: the first look still sees it.
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v", ctx.Err())
	}
}

func TestDeadlineChildren(t *testing.T) {
	ctx, cancel := withDeadline(context.Background(), time.Now().Add(time.Hour))
	child, childCancel := context.WithCancel(ctx)
	defer childCancel()
	fired := make(chan struct{})
	context.AfterFunc(ctx, func() { close(fired) })
	if child.Err() != nil {
		t.Fatal("child ended early")
	}
	cancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("child not cancelled with its parent's deadline")
	}
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc not run")
	}
	if !errors.Is(child.Err(), context.Canceled) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("child %v, ctx %v", child.Err(), ctx.Err())
	}
}

func TestDeadlineStoppedBeforeUse(t *testing.T) {
	ctx, cancel := withDeadline(context.Background(), time.Now().Add(time.Hour))
	cancel()
	select {
	case <-ctx.Done():
	default:
		t.Fatal("a released deadline's context is not done")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("err %v", ctx.Err())
	}
}

func TestDeadlineFollowsParent(t *testing.T) {
	parent, parentCancel := context.WithCancel(context.Background())
	ctx, cancel := withDeadline(parent, time.Now().Add(time.Hour))
	defer cancel()
	parentCancel()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("parent's cancellation not seen")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("err %v", ctx.Err())
	}
	early, earlyCancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer earlyCancel()
	ctx2, cancel2 := withDeadline(early, time.Now().Add(time.Hour))
	defer cancel2()
	if d, _ := ctx2.Deadline(); d.After(time.Now().Add(2 * time.Minute)) {
		t.Fatalf("the parent's earlier deadline was not kept: %v", d)
	}
}

// TestRequestContextBeforeAndAfterItsDeadline: the server's request context
// is its parent until the route sets its deadline (no deadline, the
// parent's cancellation), then a deadline context as withDeadline's; it
// answers the request's state, chi's route context and the client address
// itself, and every other key from the parent.
func TestRequestContextBeforeAndAfterItsDeadline(t *testing.T) {
	parent, parentCancel := context.WithCancel(context.WithValue(context.Background(), testKey{}, "v"))
	defer parentCancel()
	rec, route, addr := &statusRecorder{id: "r1"}, chi.NewRouteContext(), "203.0.113.9"
	rc := &requestContext{state: rec, route: route}
	rc.parent = parent
	var ctx context.Context = rc
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("a deadline before the route set one")
	}
	if ctx.Done() != parent.Done() || ctx.Err() != nil {
		t.Fatal("before its deadline the context is not its parent")
	}
	if stateOf(ctx) != rec || chi.RouteContext(ctx) != route || ctx.Value(testKey{}) != "v" || ctx.Value(clientAddrKey{}) != nil {
		t.Fatal("values: state, route context, the parent's, no client address")
	}
	rc.client = &addr
	if ctx.Value(clientAddrKey{}) != addr {
		t.Fatal("client address")
	}

	rc.setDeadline(time.Now().Add(20 * time.Millisecond))
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
		t.Fatalf("deadline %v %v", d, ok)
	}
	child, childCancel := context.WithCancel(ctx)
	defer childCancel()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline never ended the context's child")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(child), context.DeadlineExceeded) {
		t.Fatalf("err %v, child's cause %v", ctx.Err(), context.Cause(child))
	}
	if stateOf(child) != rec || child.Value(testKey{}) != "v" {
		t.Fatal("values through a child after the deadline armed")
	}
	if parent.Err() != nil {
		t.Fatal("the request's deadline ended its parent")
	}

	// Released before it is used: done, cancelled.
	rc2 := &requestContext{}
	rc2.parent = context.Background()
	rc2.setDeadline(time.Now().Add(time.Hour))
	rc2.stop()
	if !errors.Is(rc2.Err(), context.Canceled) {
		t.Fatalf("released: %v", rc2.Err())
	}
}
