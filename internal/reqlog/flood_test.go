package reqlog_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/reqlog"
	"github.com/o2i-service/o2i/internal/testenv"
)

// maxEntryBytes is the README's bound of one entry: the entry itself and
// the text it holds.
const maxEntryBytes = 2048

// sized passes entries on to the log and keeps the largest entry's size.
type sized struct {
	l   *reqlog.Log
	max atomic.Int64
}

func (s *sized) Record(e httpx.Entry) {
	n := int64(unsafe.Sizeof(e)) + int64(len(e.RequestID)+len(e.ProjectID)+len(e.KeyPrefix)+len(e.Method)+len(e.Path)+
		len(e.Route)+len(e.IdempotencyKey))
	for {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			break
		}
	}
	s.l.Record(e)
}

// TestAnonymousFloodIsSampled: 1,000 requests with a key that does not
// authenticate, with a long path and Idempotency-Key, in one burst with
// requests of a project: of the anonymous ones at most the sample's count
// (AnonymousRate a second, bursts of as many, over the burst's duration) is
// recorded, the rest counted; every request of the project is recorded; and
// no entry is larger than the README's bound, so neither is the overflow.
func TestAnonymousFloodIsSampled(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	ctx := context.Background()
	if err := reqlog.EnsurePartitions(ctx, pool, time.Now()); err != nil {
		t.Fatal(err)
	}
	project := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, project, "invoices:read")

	l := reqlog.New(pool, 64)
	l.AnonymousRate = 5
	rec := &sized{l: l}
	srv := &httpx.Server{Routes: []httpx.Route{{Method: http.MethodGet, Path: "/v1/flood/*", Scope: "invoices:read",
		Handler: func(w http.ResponseWriter, r *http.Request) error {
			httpx.WriteJSON(w, r, http.StatusOK, map[string]string{"ok": "yes"})
			return nil
		}}}, Auth: apikey.NewAuthenticator(pool), Recorder: rec}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	rctx, stop := context.WithCancel(ctx)
	go l.Run(rctx)
	t.Cleanup(func() { stop(); l.Wait() })

	marker := "/v1/flood/" + uuid.NewString()
	long := strings.Repeat("p", 8000)
	const anonymous, authenticated = 1000, 100
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var wg sync.WaitGroup
	var failed atomic.Int64
	jobs := make(chan int)
	start := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				bearer, path, want := "Bearer o2i_bad_"+uuid.NewString(), marker+"/anon/"+long, http.StatusUnauthorized
				if i%(anonymous/authenticated+1) == 0 {
					bearer, path, want = "Bearer "+key, fmt.Sprintf("%s/auth/%d/%s", marker, i, long), http.StatusOK
				}
				req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
				req.Header.Set("Authorization", bearer)
				req.Header.Set("Idempotency-Key", strings.Repeat("k", 8000))
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					failed.Add(1)
				}
			}
		}()
	}
	for i := range anonymous + authenticated {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed or had an unexpected status", failed.Load())
	}
	// The bucket holds 5 at first and gains 5 a second while the burst lasts.
	sample := l.AnonymousRate + int(math.Ceil(elapsed.Seconds()*float64(l.AnonymousRate)))

	count := func(cond string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM request_log WHERE starts_with(path, $1) AND at > now() - interval '1 hour' AND `+cond,
			marker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var n int
	for i := range anonymous + authenticated {
		if i%(anonymous/authenticated+1) == 0 {
			n++
		}
	}
	testenv.Eventually(t, 20*time.Second, "every request of the project written", func() bool {
		return count("project_id = '"+project+"'") == n && l.Pending() == 0
	})
	anon := count("project_id IS NULL")
	if anon < 1 || anon > sample {
		t.Errorf("%d anonymous requests recorded, want 1 to %d (the sample over %s)", anon, sample, elapsed)
	}
	if n != authenticated {
		t.Fatalf("%d requests of the project sent, want %d", n, authenticated)
	}
	if got := l.SampledOut(); int(got)+anon != anonymous {
		t.Errorf("%d anonymous entries counted as not recorded, %d recorded, want %d together", got, anon, anonymous)
	}
	if l.Dropped() != 0 {
		t.Errorf("%d entries dropped", l.Dropped())
	}
	if m := rec.max.Load(); m > maxEntryBytes {
		t.Errorf("an entry of %d bytes, more than the bound of %d", m, maxEntryBytes)
	}
}
