package httpx

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/go-chi/chi/v5"

	"github.com/o2i-service/o2i/internal/apperr"
)

func nested(depth int) string {
	return strings.Repeat(`{"a":[`, depth/2) + strings.Repeat("[", depth%2) + "1" +
		strings.Repeat("]", depth%2) + strings.Repeat(`]}`, depth/2)
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	deepInString := `{"s":"` + strings.Repeat("[{", 100) + `"}`
	tests := []struct {
		name   string
		body   string
		status int    // 0: accepted
		field  string // of a refusal
		msg    string // part of the message
	}{
		{name: "depth 32", body: nested(32)},
		{name: "depth 33", body: nested(33), status: 400, msg: "deeper than 32"},
		{name: "depth 33 of arrays", body: strings.Repeat("[", 33) + strings.Repeat("]", 33), status: 400},
		{name: "deep nesting is refused at once", body: strings.Repeat("[", 1<<20), status: 400},
		{name: "stray closers buy no depth", body: strings.Repeat("]", 100) + strings.Repeat("[", 33), status: 400},
		{name: "brackets inside a string", body: deepInString},
		{name: "escaped quote keeps the string open", body: `{"s":"\"` + strings.Repeat("[", 40) + `\""}`},
		{name: "escaped backslash closes the string", body: `{"s":"\\",` + `"d":` + nested(31) + `}`},
		{name: "escaped backslash then deep", body: `{"s":"\\",` + `"d":` + nested(32) + `}`, status: 400},
		{name: "escaped backslash before u0000 is text", body: `{"s":"\\u0000"}`},
		{name: "unicode escapes", body: `{"s":"Stra\u00dfe \u00E4 \ud83d\ude00 \u001f"}`},
		{name: "raw multi-byte text", body: `{"s":"Köln 😀 中文"}`},
		{name: "NUL escape", body: `{"items":[{"name":"a"},{"name":"b\u0000"}]}`, status: 400, field: "items[1].name", msg: `\u0000`},
		{name: "NUL escape in orderNo", body: `{"orderNo":"x\u0000y"}`, status: 400, field: "orderNo"},
		{name: "NUL in a member name", body: `{"billingAddress":{"ci\u0000ty":"x"}}`, status: 400, field: "billingAddress", msg: "member name"},
		{name: "NUL in a top-level member name", body: `{"\u0000":1}`, status: 400, field: "", msg: "member name"},
		{name: "NUL in an unknown member", body: `{"orderNo":"x","extra":{"deep":["\u0000"]}}`, status: 400, field: "extra.deep[0]"},
		{name: "invalid UTF-8", body: "{\"a\":1,\"b\":[\"ok\",\"\xff\"]}", status: 400, field: "b[1]", msg: "UTF-8"},
		{name: "truncated UTF-8", body: "{\"city\":\"K\xc3\"}", status: 400, field: "city"},
		{name: "overlong UTF-8", body: "{\"city\":\"\xc0\xaf\"}", status: 400, field: "city"},
		{name: "UTF-16 surrogate as UTF-8", body: "{\"city\":\"\xed\xa0\x80\"}", status: 400, field: "city"},
		{name: "lone high surrogate", body: `{"n":"\ud800"}`, status: 400, field: "n", msg: "surrogate"},
		{name: "high surrogate before text", body: `{"n":"\ud800abcdef"}`, status: 400, field: "n"},
		{name: "lone low surrogate", body: `{"n":"\udc00"}`, status: 400, field: "n"},
		{name: "reversed pair", body: `{"n":"\ude00\ud83d"}`, status: 400, field: "n"},
		{name: "escapes after a pair", body: `{"n":"\ud83d\ude00\u0000"}`, status: 400, field: "n"},
		{name: "a string body", body: `"\u0000"`, status: 400, field: ""},
		// Malformed JSON is the decoder's to report.
		{name: "malformed", body: `{"a":`},
		{name: "malformed escape", body: `{"a":"\u00"}`},
		{name: "bad text after malformed JSON", body: `{"a" "\u0000"}`, status: 400, field: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckJSON([]byte(tt.body))
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := apperr.As(err)
			if e == nil {
				t.Fatalf("accepted, want %d", tt.status)
			}
			if Status(e.Kind) != tt.status || e.Code != "invalid_json" || e.Field != tt.field || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("got %d %s field %q %q; want %d invalid_json field %q containing %q",
					Status(e.Kind), e.Code, e.Field, e.Message, tt.status, tt.field, tt.msg)
			}
		})
	}
}

// The scan is linear: a 10 MB flat array, and 10 MB of string, take about
// as long as reading them.
func TestCheckJSONLargeBodiesStayFast(t *testing.T) {
	t.Parallel()
	flat := make([]byte, 0, 10<<20)
	flat = append(flat, '[')
	for len(flat) < 10<<20 {
		flat = append(flat, `{"a":[1,"x\"]"]},`...)
	}
	flat = append(flat, "0]"...)
	text := []byte(`{"s":"` + strings.Repeat(`ä\"\\[{`, (10<<20)/8) + `"}`)
	for name, body := range map[string][]byte{"flat array": flat, "long string": text} {
		start := time.Now()
		if err := CheckJSON(body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: %d bytes took %s", name, len(body), d)
		}
	}
}

// Every JSON body passes ReadBody, which applies the checks.
func TestReadBodyChecksJSON(t *testing.T) {
	t.Parallel()
	read := func(body string) error {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		_, err := ReadBody(r, MaxBodyBytes)
		return err
	}
	if err := read(nested(32)); err != nil {
		t.Errorf("depth 32: %v", err)
	}
	for body, field := range map[string]string{nested(40): "", `{"name":"\u0000"}`: "name"} {
		e := apperr.As(read(body))
		if e == nil || e.Code != "invalid_json" || e.Field != field {
			t.Errorf("%.40s: %v", body, e)
		}
	}
}

func TestRequestParameters(t *testing.T) {
	t.Parallel()
	type seen struct{ Param, Query string }
	echo := func(w http.ResponseWriter, r *http.Request) error {
		WriteData(w, r, http.StatusOK, seen{chi.URLParam(r, "id"), r.URL.Query().Get("q")})
		return nil
	}
	s := &Server{Routes: []Route{
		{Method: http.MethodGet, Path: "/v1/things/{id}", Handler: echo},
		{Method: http.MethodGet, Path: "/v1/things/{id}/sub", Handler: echo},
	}}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	tests := []struct {
		name, path, idemKey string
		status              int
		param, query, field string
	}{
		{name: "plain", path: "/v1/things/A-1?q=x", status: 200, param: "A-1", query: "x"},
		{name: "encoded slash", path: "/v1/things/A%2FB-1", status: 200, param: "A/B-1"},
		{name: "encoded slash and others", path: "/v1/things/A%2FB%20C%25D%C3%A4", status: 200, param: "A/B C%Dä"},
		{name: "encoded slash below", path: "/v1/things/A%2FB/sub", status: 200, param: "A/B"},
		{name: "escapes without slash", path: "/v1/things/%C3%A4%20x", status: 200, param: "ä x"},
		{name: "literal slash is another route", path: "/v1/things/A/B", status: 404},
		{name: "NUL in path", path: "/v1/things/A%00", status: 400, field: "id"},
		{name: "NUL in path with slash", path: "/v1/things/A%2F%00", status: 400, field: "id"},
		{name: "invalid UTF-8 in path", path: "/v1/things/A%FF", status: 400, field: "id"},
		{name: "NUL in query", path: "/v1/things/A?q=%00", status: 400, field: "q"},
		{name: "invalid UTF-8 in query", path: "/v1/things/A?q=%C3", status: 400, field: "q"},
		{name: "malformed query", path: "/v1/things/A?q=%zz", status: 400},
		{name: "invalid UTF-8 in Idempotency-Key", path: "/v1/things/A", idemKey: "k\xff", status: 400, field: "Idempotency-Key"},
		{name: "UTF-8 Idempotency-Key", path: "/v1/things/A", idemKey: "kä", status: 200, param: "A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, ts.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.idemKey != "" {
				req.Header.Set("Idempotency-Key", tt.idemKey)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, raw)
			}
			switch tt.status {
			case 200:
				var got Envelope[seen]
				if err := json.Unmarshal(raw, &got); err != nil || got.Data.Param != tt.param || got.Data.Query != tt.query {
					t.Errorf("handler saw %+v (%v), want param %q query %q", got.Data, err, tt.param, tt.query)
				}
			case 400:
				var e ErrorBody
				if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code != "invalid_request" || e.Error.Field != tt.field {
					t.Errorf("error %s, want invalid_request field %q", raw, tt.field)
				}
			}
		})
	}
}

// The request log gets text PostgreSQL takes, whatever the request held.
func TestRequestLogEntriesAreText(t *testing.T) {
	t.Parallel()
	rec := &entries{}
	s := &Server{Routes: []Route{{Method: http.MethodGet, Path: "/v1/things/{id}", Handler: func(w http.ResponseWriter, r *http.Request) error {
		return nil
	}}}, Recorder: rec}
	h := s.Handler()
	req := httptest.NewRequest(http.MethodGet, "/v1/things/A%00%FF", nil)
	req.Header.Set("Idempotency-Key", "k\xff")
	h.ServeHTTP(httptest.NewRecorder(), req)
	req = httptest.NewRequest(http.MethodGet, "/v1/nothing/%00", nil)
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(rec.list()) != 2 {
		t.Fatalf("%d entries", len(rec.list()))
	}
	for _, e := range rec.list() {
		if !validText(e.Path) || !validText(e.IdempotencyKey) {
			t.Errorf("entry %q %q", e.Path, e.IdempotencyKey)
		}
	}
	if rec.list()[0].Status != 400 || rec.list()[0].Path != "/v1/things/A\uFFFD\uFFFD" {
		t.Errorf("entry %+v", rec.list()[0])
	}
}

// entries records what the server logs; the server records from its own
// goroutines, the test reads with list.
type entries struct {
	mu  sync.Mutex
	got []Entry
}

func (e *entries) Record(x Entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, x)
}

func (e *entries) list() []Entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

func TestLoggable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"ok ä": "ok ä", "a\x00b": "a\uFFFDb", "a\xffb": "a\uFFFDb", "": ""} {
		if got := loggable(in); got != want {
			t.Errorf("loggable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRequestLogFieldsAreBounded: a path or Idempotency-Key of up to 64 KiB
// is recorded cut to maxLoggedBytes at a character boundary, marked "…",
// so every request log entry has a bounded size.
func TestRequestLogFieldsAreBounded(t *testing.T) {
	t.Parallel()
	rec := &entries{}
	s := &Server{Routes: []Route{{Method: http.MethodGet, Path: "/v1/things/{id}", Handler: func(w http.ResponseWriter, r *http.Request) error {
		return nil
	}}}, Recorder: rec}
	h := s.Handler()
	long := strings.Repeat("ä", 20000) // 40,000 bytes
	req := httptest.NewRequest(http.MethodGet, "/v1/things/"+long, nil)
	req.Header.Set("Idempotency-Key", strings.Repeat("k", 60000))
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(rec.list()) != 1 {
		t.Fatalf("%d entries", len(rec.list()))
	}
	for name, f := range map[string]string{"path": rec.list()[0].Path, "idempotency key": rec.list()[0].IdempotencyKey} {
		if len(f) > maxLoggedBytes || !strings.HasSuffix(f, "…") || !utf8.ValidString(f) {
			t.Errorf("%s: %d bytes, valid %v, ends %q", name, len(f), utf8.ValidString(f), f[max(0, len(f)-8):])
		}
	}
	if got := logField("/v1/short"); got != "/v1/short" {
		t.Errorf("a short path: %q", got)
	}

	// A long method is cut too; a short path is a copy, not a part of the
	// request line (a long query string with it) the entry would keep alive.
	req = httptest.NewRequest(strings.Repeat("X", 3000), "/v1/things/a?q="+strings.Repeat("q", 60000), nil)
	h.ServeHTTP(httptest.NewRecorder(), req)
	if len(rec.list()) != 2 {
		t.Fatalf("%d entries", len(rec.list()))
	}
	if e := rec.list()[1]; len(e.Method) > maxLoggedBytes || !strings.HasSuffix(e.Method, "…") || e.Path != "/v1/things/a" {
		t.Errorf("method of %d bytes, path %q", len(e.Method), e.Path)
	}
	if unsafe.StringData(rec.list()[1].Path) == unsafe.StringData(req.URL.Path) {
		t.Error("the entry's path shares the request's memory")
	}
}
