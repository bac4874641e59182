package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/testenv"
)

// Behind a load balancer the API runs as several processes: the rate limit
// (Redis), idempotency and console sessions (PostgreSQL) are shared by
// them, not kept per process. The test starts two API processes of its own (this test binary
// again, serving only the api role) and speaks to both.

// replicaEnv, set in a child of the test binary, makes TestMain serve the
// api role instead of running the tests.
const replicaEnv = "O2I_TEST_API_REPLICA"

// serveReplica is the child's main: it serves the api role on a free port,
// prints "listening ADDR" on stdout and stops on SIGTERM or when its stdin
// closes (the parent went away).
func serveReplica() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	env := func(name string) string {
		switch name {
		case "O2I_HTTP_ADDR", "O2I_METRICS_ADDR":
			return "127.0.0.1:0"
		case "O2I_LOG_LEVEL":
			return "error"
		case "O2I_DB_MAX_CONNS":
			return "8" // beside every other test's connections
		}
		return testenv.Env(name)
	}
	err := runListening(ctx, []string{"serve", "--roles", "api"}, env, os.Stderr, func(a string) { fmt.Printf("listening %s\n", a) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	return 0
}

// startReplica starts an API process and returns its base URL; it is
// stopped when the test ends.
func startReplica(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addrc <- a
			}
		}
	}()
	select {
	case a := <-addrc:
		return "http://" + a
	case <-done:
		t.Fatal("the API process ended before it listened")
	case <-time.After(60 * time.Second):
		t.Fatal("the API process did not listen within 60 s")
	}
	return ""
}

type replicaAnswer struct {
	status   int
	body     []byte
	replayed string
}

// replicaDo sends one request; a transport failure is status 0 with the
// error as the body (the caller fails the test, also from a goroutine).
func replicaDo(method, url, key, idemKey string, body []byte) replicaAnswer {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return replicaAnswer{body: []byte(err.Error())}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return replicaAnswer{body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return replicaAnswer{body: []byte(err.Error())}
	}
	return replicaAnswer{status: resp.StatusCode, body: b, replayed: resp.Header.Get("Idempotent-Replayed")}
}

func TestTwoAPIProcessesShareRateLimitIdempotencyAndSessions(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	key := testenv.Key(t, pool, pid)
	// A second project with a small limit: rate 1/s, burst 10. Set before
	// the processes start, so both know it from their first request.
	const burst = 10
	limited := testenv.Project(t, pool, true)
	if _, err := runCmd(t, "project", "set", "--project", limited, "--rate-limit", "1", "--rate-burst", fmt.Sprint(burst)); err != nil {
		t.Fatal(err)
	}
	limitedKey := testenv.Key(t, pool, limited)
	apis := []string{startReplica(t), startReplica(t)}

	countOrders := func(orderNo string) int {
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE project_id = $1 AND order_no = $2`, pid, orderNo).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("one key one after the other to both", func(t *testing.T) {
		orderNo := "REPL-" + uuid.NewString()[:8]
		first := replicaDo("POST", apis[0]+"/v1/orders", key, orderNo, orderBody(orderNo))
		second := replicaDo("POST", apis[1]+"/v1/orders", key, orderNo, orderBody(orderNo))
		if first.status != 201 || second.status != 200 || second.replayed != "true" {
			t.Fatalf("first process %d, second %d (replayed %q), want 201 then a replayed 200: %s", first.status, second.status, second.replayed, second.body)
		}
		if !bytes.Equal(first.body, second.body) {
			t.Errorf("the second process answered\n%s\nthe first\n%s", second.body, first.body)
		}
		// A different body under the same key is refused by the other process too.
		other := replicaDo("POST", apis[1]+"/v1/orders", key, orderNo, orderBody(orderNo+"-X"))
		if other.status != 422 || !bytes.Contains(other.body, []byte("idempotency_key_reused")) {
			t.Errorf("same key, other body at the second process: %d %s", other.status, other.body)
		}
		if n := countOrders(orderNo); n != 1 {
			t.Errorf("%d orders %s, want 1", n, orderNo)
		}
	})

	t.Run("one key at the same time to both", func(t *testing.T) {
		for round := range 5 {
			orderNo := fmt.Sprintf("REPL-%s-%d", uuid.NewString()[:8], round)
			answers := make([]replicaAnswer, 2)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range apis {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					// A request while the other's is still running is 409
					// idempotency_in_progress: retried, as a client does.
					for try := 0; ; try++ {
						answers[i] = replicaDo("POST", apis[i]+"/v1/orders", key, orderNo, orderBody(orderNo))
						if answers[i].status != 409 || try == 50 {
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
				}()
			}
			close(start)
			wg.Wait()
			created := 0
			for i, a := range answers {
				switch a.status {
				case 201:
					created++
				case 200:
					if a.replayed != "true" {
						t.Errorf("process %d: 200 without Idempotent-Replayed", i+1)
					}
				default:
					t.Fatalf("process %d: %d %s", i+1, a.status, a.body)
				}
			}
			if created != 1 {
				t.Errorf("round %d: %d processes answered 201, want exactly 1", round, created)
			}
			if !bytes.Equal(answers[0].body, answers[1].body) {
				t.Errorf("round %d: the answers differ:\n%s\n%s", round, answers[0].body, answers[1].body)
			}
			if n := countOrders(orderNo); n != 1 {
				t.Errorf("round %d: %d orders %s, want 1", round, n, orderNo)
			}
		}
	})

	t.Run("one rate limit bucket for both", func(t *testing.T) {
		// 4 × burst requests, alternating between the processes. With one
		// shared bucket at most burst + (elapsed seconds × 1/s) + 1 pass;
		// with a bucket per process each would pass burst + its refill, at
		// least 2 × burst together, above that bound however long it takes.
		const requests = 4 * burst
		passed := [2]int{}
		refused := [2]int{}
		start := time.Now()
		for i := range requests {
			p := i % 2
			a := replicaDo("GET", apis[p]+"/v1/orders/none-"+fmt.Sprint(i), limitedKey, "", nil)
			switch a.status {
			case 429:
				refused[p]++
			case 404:
				passed[p]++
			default:
				t.Fatalf("GET at process %d: %d %s", p+1, a.status, a.body)
			}
		}
		elapsed := time.Since(start)
		total := passed[0] + passed[1]
		bound := burst + int(elapsed.Seconds()) + 1
		t.Logf("passed %v, refused %v in %s", passed, refused, elapsed.Round(time.Millisecond))
		if total > bound {
			t.Errorf("%d of %d requests passed over both processes in %s, want at most %d (one bucket of burst %d at 1/s)", total, requests, elapsed, bound, burst)
		}
		if total < burst {
			t.Errorf("%d requests passed, want at least the burst %d", total, burst)
		}
	})

	t.Run("one console session for both", func(t *testing.T) {
		// Accepted (signed in) at the first process, used and ended at the
		// second, gone at the first.
		addr := "replica-" + uuid.NewString()[:8] + "@example.com"
		out, err := runCmd(t, "user", "invite", "--project", pid, "--email", addr, "--role", "owner", "--no-mail")
		if err != nil {
			t.Fatal(err)
		}
		var inv struct {
			Link string `json:"link"`
		}
		if err := json.Unmarshal([]byte(out), &inv); err != nil || !strings.Contains(inv.Link, "/console/invite/") {
			t.Fatalf("invite: %v %s", err, out)
		}
		invite := inv.Link[strings.Index(inv.Link, "/console/invite/"):]
		jar, _ := cookiejar.New(nil) // cookies of 127.0.0.1 go to either port
		b := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		send := func(method, url string, form url.Values) (int, string) {
			t.Helper()
			var body io.Reader
			if form != nil {
				body = strings.NewReader(form.Encode())
			}
			req, err := http.NewRequest(method, url, body)
			if err != nil {
				t.Fatal(err)
			}
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(raw)
		}
		const pw = "correct horse battery staple"
		if st, body := send("POST", apis[0]+invite, url.Values{"email": {addr}, "password": {pw}, "password_confirm": {pw}}); st != http.StatusSeeOther {
			t.Fatalf("accepting the invitation at the first process: %d %.300s", st, body)
		}
		overview := "/console/p/" + pid + "/"
		st, body := send("GET", apis[1]+overview, nil)
		if st != 200 || !strings.Contains(body, addr) {
			t.Fatalf("the session at the second process: %d %.300s", st, body)
		}
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatal("no form token on the overview")
		}
		if st, body := send("POST", apis[1]+"/console/sign-out", url.Values{"csrf": {m[1]}}); st != http.StatusSeeOther {
			t.Fatalf("sign-out at the second process: %d %.300s", st, body)
		}
		if st, body := send("GET", apis[0]+overview, nil); st == 200 || strings.Contains(body, addr) {
			t.Errorf("the first process still serves the ended session: %d", st)
		}
	})
}
