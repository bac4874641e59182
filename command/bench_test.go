package command_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkPlaceOrder measures POST /v1/orders through the handler stack
// against the local PostgreSQL (run with -cpu to vary parallelism).
func BenchmarkPlaceOrder(b *testing.B) {
	e := newEnvB(b)
	var n atomic.Int64
	run := uuid.NewString()[:8]
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			no := fmt.Sprintf("B-%s-%d", run, n.Add(1))
			body := mustJSONB(b, order(no))
			req := httptest.NewRequest(http.MethodPost, "/v1/orders", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", uuid.NewString())
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, req)
			if w.Code != 201 {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}
