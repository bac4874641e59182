package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// A well-formed Stripe-Signature that verifies nowhere: a stranger needs no
// secret to send one.
var strangersSignature = fmt.Sprintf("t=%d,v1=%s", time.Now().Unix(), strings.Repeat("ab", 32))

// slowWebhook opens a connection from the loopback address local (127.x.y.z:
// other addresses than the tests' usual 127.0.0.1) and sends a webhook's
// headers, with a well-formed signature and Content-Length 1000, and one
// byte of the body; no more. The connection is closed with the test and
// never waits longer than 30 s.
func slowWebhook(t *testing.T, local, projectID string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(baseURL, "http://"))
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	_, err = fmt.Fprintf(c, "POST /v1/webhooks/stripe/%s HTTP/1.1\r\nHost: o2i\r\nContent-Type: application/json\r\n"+
		"Stripe-Signature: %s\r\nContent-Length: 1000\r\n\r\n{", projectID, strangersSignature)
	if err != nil {
		t.Fatalf("send from %s: %v", local, err)
	}
	return c
}

// rawAnswer reads the answer on c, checked against the OpenAPI document.
func rawAnswer(t *testing.T, c net.Conn, path string) (apitest.Response, error) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return apitest.Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return apitest.Response{}, err
	}
	if err := validator.Check("POST", path, resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("OpenAPI: %v", err)
	}
	if resp.Close {
		resp.Header.Set("Connection", "close")
	}
	return apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

var publicBodiesGauge = regexp.MustCompile(`(?m)^o2i_http_in_flight\{pool="public_bodies"\} (\d+)$`)

// publicBodies returns how many public bodies the service is reading.
func publicBodies(t *testing.T) int {
	t.Helper()
	r := (&apitest.Client{T: t, BaseURL: metricsURL}).Do("GET", "/metrics", "", nil)
	m := publicBodiesGauge.FindSubmatch(r.Body)
	if m == nil {
		t.Fatalf("metrics lack o2i_http_in_flight{pool=\"public_bodies\"}")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestWebhookWaveOfSlowBodies: 300 connections to a project's webhook, each
// with a well-formed signature, Content-Length 1000 and one byte of body,
// from 19 addresses (at most as many from one as it may have in flight):
// while they hold, health, discovery and a correctly signed webhook from
// another address answer at once, one more request from a flooding address
// is answered 429 at once, and every slow body ends in 408 after the
// body's deadline, not the server's 30 s read timeout.
func TestWebhookWaveOfSlowBodies(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(testenv.Env)
	if err != nil {
		t.Fatal(err)
	}
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	const secret = "whsec_wave"
	withWebhookSecret(t, pool, pid, secret)
	const wave = 300
	addr := func(i int) string { return fmt.Sprintf("127.0.1.%d", 10+i/cfg.PublicPerAddr) }

	start := time.Now()
	conns := make([]net.Conn, wave)
	for i := range conns {
		conns[i] = slowWebhook(t, addr(i), pid)
	}
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%d bodies being read", wave), func() bool { return publicBodies(t) >= wave })
	t.Logf("%d slow bodies held from %d addresses after %v", wave, (wave+cfg.PublicPerAddr-1)/cfg.PublicPerAddr, time.Since(start).Round(time.Millisecond))

	extra := slowWebhook(t, addr(0), pid)
	r, err := rawAnswer(t, extra, "/v1/webhooks/stripe/"+pid)
	if err != nil || r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Errorf("one more from a flooding address: %d %s (Retry-After %q, %v), want 429 with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"), err)
	}

	c := client(t)
	timed := func(what string, f func() apitest.Response) {
		t.Helper()
		began := time.Now()
		r := f()
		t.Logf("during the wave: %s answered %d in %v", what, r.Status, time.Since(began).Round(time.Microsecond))
		if r.Status != 200 {
			t.Errorf("during the wave: %s answered %d %s, want 200", what, r.Status, r.Body)
		}
	}
	timed("GET /api/health", func() apitest.Response { return c.Do("GET", "/api/health", "", nil) })
	timed("GET /v1", func() apitest.Response { return c.Do("GET", "/v1", "", nil) })
	timed("a signed webhook", func() apitest.Response {
		body := []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","type":"customer.created","data":{"object":{"id":"cus_1"}}}`, uuid.NewString()[:12]))
		return c.Do("POST", "/v1/webhooks/stripe/"+pid, "", body, "Stripe-Signature", testenv.StripeSignature(secret, body, time.Now()))
	})
	// The answers came while the wave still held: not one slow body ended.
	if n := publicBodies(t); n < wave {
		t.Errorf("the wave had ended (%d bodies being read) before the answers came: they were not at once", n)
	}

	var mu sync.Mutex
	statuses := map[int]int{}
	var slowest time.Duration
	var wg sync.WaitGroup
	for _, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := rawAnswer(t, conn, "/v1/webhooks/stripe/"+pid)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses[0]++
				return
			}
			statuses[r.Status]++
			slowest = max(slowest, time.Since(start))
		}()
	}
	wg.Wait()
	t.Logf("the wave's answers %v, the last %v after the first connection", statuses, slowest.Round(time.Millisecond))
	if statuses[408] != wave {
		t.Errorf("the slow bodies' answers by status %v, want all %d 408", statuses, wave)
	}
	if limit := cfg.PublicBodyTimeout + 10*time.Second; slowest > limit {
		t.Errorf("the last slow body was answered after %v, more than the body's deadline %v (+10 s)", slowest, cfg.PublicBodyTimeout)
	}
}

// TestWebhookSlowBodyIs408: a webhook body that does not arrive within the
// body's deadline is 408 request_timeout and the connection closed: the
// same answer for an existing project with a webhook secret and an unknown
// one.
func TestWebhookSlowBodyIs408(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	withWebhookSecret(t, pool, pid, "whsec_slow")
	var answers [2]apitest.Response
	var wg sync.WaitGroup
	for i, id := range []string{pid, uuid.NewString()} {
		c := slowWebhook(t, "127.0.2.1", id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := rawAnswer(t, c, "/v1/webhooks/stripe/"+id)
			if err != nil {
				t.Errorf("project %d: %v", i, err)
			}
			answers[i] = r
		}()
	}
	wg.Wait()
	for i, r := range answers {
		code, _ := r.ErrorCode(t)
		if r.Status != 408 || code != "request_timeout" || r.Header.Get("Connection") != "close" {
			t.Errorf("project %d: %d %s (Connection %q), want 408 request_timeout and the connection closed", i, r.Status, r.Body, r.Header.Get("Connection"))
		}
	}
	if diff := cmp.Diff(stranger(t, answers[0]), stranger(t, answers[1])); diff != "" {
		t.Errorf("existing and unknown project answer differently (-existing +unknown):\n%s", diff)
	}
}

// strangerView is what a caller sees of an answer, less what differs per
// request.
type strangerView struct {
	Status int
	Header http.Header
	Body   map[string]any
}

func stranger(t *testing.T, r apitest.Response) strangerView {
	t.Helper()
	h := r.Header.Clone()
	h.Del("Date")
	h.Del("X-Request-Id")
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.Body)
	}
	delete(body, "requestId")
	return strangerView{Status: r.Status, Header: h, Body: body}
}

// TestWebhookTellsStrangersNothing: every answer of the webhook before a
// signature verifies is the same whether the project exists with a
// webhook secret, exists without one, is unknown, or is no project id at
// all: unsigned, malformed, wrongly signed, the wrong content type, too
// large a body, a body that is not JSON.
func TestWebhookTellsStrangersNothing(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	withSecret := testenv.Project(t, pool, true)
	const secret = "whsec_strangers"
	withWebhookSecret(t, pool, withSecret, secret)
	withoutSecret := testenv.Project(t, pool, true)
	projects := []struct{ name, id string }{
		{"existing project", withSecret},
		{"project without a webhook secret", withoutSecret},
		{"unknown project", uuid.NewString()},
		{"no project id", "not-a-project"},
	}
	event := []byte(`{"id":"evt_stranger","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_stranger","amount":100}}}`)
	big := append(append([]byte(`{"id":"evt_big","type":"x","pad":"`), bytes.Repeat([]byte("x"), 64<<10)...), '"', '}')
	deep := []byte(`{"id":"evt_deep","type":"x","data":` + strings.Repeat(`{"a":`, 33) + `1` + strings.Repeat(`}`, 33) + `}`)
	otherSecret := testenv.StripeSignature("whsec_other", event, time.Now())
	tests := []struct {
		name    string
		body    []byte
		headers []string
		status  int
		code    string
	}{
		{"unsigned", event, nil, 400, "invalid_signature"},
		{"signature malformed", event, []string{"Stripe-Signature", "t=now,v1=zz"}, 400, "invalid_signature"},
		{"signature without v1", event, []string{"Stripe-Signature", "t=1700000000"}, 400, "invalid_signature"},
		{"signed with another secret", event, []string{"Stripe-Signature", otherSecret}, 400, "invalid_signature"},
		{"signature made up", event, []string{"Stripe-Signature", strangersSignature}, 400, "invalid_signature"},
		{"signature made up, old", event, []string{"Stripe-Signature", "t=1000000000,v1=" + strings.Repeat("cd", 32)}, 400, "invalid_signature"},
		{"text/plain", event, []string{"Stripe-Signature", strangersSignature, "Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"no content type", event, []string{"Stripe-Signature", strangersSignature, "Content-Type", ""}, 415, "unsupported_media_type"},
		{"unsigned text/plain", event, []string{"Content-Type", "text/plain"}, 400, "invalid_signature"},
		{"over 64 KiB", big, []string{"Stripe-Signature", strangersSignature}, 413, "payload_too_large"},
		{"not JSON", []byte(`{"id":`), []string{"Stripe-Signature", strangersSignature}, 400, "invalid_signature"},
		{"nested 34 deep", deep, []string{"Stripe-Signature", strangersSignature}, 400, "invalid_json"},
		{"empty", []byte{}, []string{"Stripe-Signature", strangersSignature}, 400, "invalid_signature"},
		{"NUL in the event id", []byte(`{"id":"evt_\u0000","type":"x"}`), []string{"Stripe-Signature", strangersSignature}, 400, "invalid_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := client(t)
			var first strangerView
			for i, p := range projects {
				r := c.Do("POST", "/v1/webhooks/stripe/"+p.id, "", tc.body, tc.headers...)
				if code, _ := r.ErrorCode(t); r.Status != tc.status || code != tc.code {
					t.Errorf("%s: %d %s, want %d %s", p.name, r.Status, r.Body, tc.status, tc.code)
				}
				v := stranger(t, r)
				if i == 0 {
					first = v
					continue
				}
				if diff := cmp.Diff(first, v); diff != "" {
					t.Errorf("%s answers differently from the %s (-%s +%s):\n%s", p.name, projects[0].name, projects[0].name, p.name, diff)
				}
			}
		})
	}
}
