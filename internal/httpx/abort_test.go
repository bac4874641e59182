package httpx

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAbortedStreamLooksAborted: a handler that aborts a response it has
// begun (http.ErrAbortHandler, as the archive export does when a stream
// fails midway) cuts the connection: the client's read fails instead of
// ending cleanly with a truncated body. The request is still recorded.
func TestAbortedStreamLooksAborted(t *testing.T) {
	t.Parallel()
	rec := &entries{}
	s := &Server{Routes: []Route{{Method: http.MethodGet, Path: "/v1/stream", Handler: func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "application/zip")
		_, _ = io.WriteString(w, strings.Repeat("x", 64<<10))
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}}}, Recorder: rec}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	resp, err := http.Get(ts.URL + "/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("the aborted stream ended cleanly with %d bytes, status %d", len(body), resp.StatusCode)
	}
	if len(rec.list()) != 1 {
		t.Errorf("%d request log entries, want 1", len(rec.list()))
	}
}
