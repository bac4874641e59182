package apikey_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestMadeUpKeysCannotPushRealKeysOut: made-up keys are remembered apart,
// in a bounded LRU; the real key stays cached (no second look-up) and a
// made-up key seen again costs no look-up either.
func TestMadeUpKeysCannotPushRealKeysOut(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	key := testenv.Key(t, pool, testenv.Project(t, pool, true))
	a := apikey.NewAuthenticator(pool)
	now := time.Now()
	apikey.SetClock(a, func() time.Time { return now })
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}

	const made = apikey.UnknownCacheSize + 500
	keys := make(chan string, 64)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				if _, err := a.Authenticate(ctx, k); apperr.KindOf(err) != apperr.Unauthenticated {
					t.Errorf("made-up key: %v, want Unauthenticated", err)
				}
			}
		}()
	}
	var last string
	for i := 0; i < made; i++ {
		k, _, err := apikey.Generate(apikey.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		keys <- k
		last = k
	}
	close(keys)
	wg.Wait()

	known, unknown := apikey.CacheSizes(a)
	if known != 1 || unknown > apikey.UnknownCacheSize || unknown < apikey.UnknownCacheSize/2 {
		t.Errorf("cache holds %d real and %d unknown keys, want 1 and at most %d", known, unknown, apikey.UnknownCacheSize)
	}
	before := pool.Stat().AcquireCount()
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatalf("real key after the flood: %v", err)
	}
	if _, err := a.Authenticate(ctx, last); apperr.KindOf(err) != apperr.Unauthenticated {
		t.Fatalf("made-up key again: %v", err)
	}
	if n := pool.Stat().AcquireCount() - before; n != 0 {
		t.Errorf("%d look-ups for a cached real key and a remembered made-up key, want 0", n)
	}
}

// TestKnownKeys: a key is known once it has authenticated (so the failed-
// authentication limiter may let it through), also after its cache entry
// aged; a made-up or malformed key never is.
func TestKnownKeys(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	key := testenv.Key(t, pool, testenv.Project(t, pool, true))
	a := apikey.NewAuthenticator(pool)
	now := time.Now()
	apikey.SetClock(a, func() time.Time { return now })
	if a.Known(key) {
		t.Error("a key never seen is known")
	}
	if _, err := a.Authenticate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * apikey.CacheTTL)
	made, _, err := apikey.Generate(apikey.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(context.Background(), made); apperr.KindOf(err) != apperr.Unauthenticated {
		t.Fatalf("made-up key: %v", err)
	}
	if !a.Known(key) || a.Known(made) || a.Known("not a key") {
		t.Errorf("known: real %v, made-up %v, malformed %v; want true, false, false", a.Known(key), a.Known(made), a.Known("not a key"))
	}
}
