package consume

import (
	"context"
	"runtime"
	"testing"
)

// A handler done waiting and queued for its worker again holds no place of
// the waiting ones: the next wait still gives its worker back. (With the
// place held, the second wait below would run holding the only worker, the
// first handler could never take it back, and the test would never end.)
func TestWaitingDoneGivesBackItsPlace(t *testing.T) {
	s := &slots{tokens: make(chan struct{}, 1), waiting: make(chan struct{}, 1)}
	ctx := context.WithValue(context.Background(), slotsKey{}, s)

	s.tokens <- struct{}{} // the first handler's worker
	taken := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- Waiting(ctx, func() error {
			<-taken // another handler took the worker meanwhile
			return nil
		})
		<-s.tokens
	}()
	s.tokens <- struct{}{} // the second handler's worker, free while the first waits
	close(taken)
	for len(s.waiting) != 0 { // the first is done waiting, queued for the worker
		runtime.Gosched()
	}
	if err := Waiting(ctx, func() error {
		return <-first // the first takes the worker back and ends
	}); err != nil {
		t.Fatal(err)
	}
	<-s.tokens
}
