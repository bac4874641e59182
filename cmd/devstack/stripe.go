package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The payment provider of the local stack: stripe-mock (Stripe's official
// mock, built once into .dev/bin) answers the API by its OpenAPI document,
// and a small fake in front of it (`devstack stripe`) adds what stripe-mock
// cannot: state (customers found again by e-mail, payment intents with
// their own ids), bank-transfer instructions with a virtual IBAN per customer
// and a payment reference, Stripe's idempotency (a request repeated with its
// Idempotency-Key gets the stored answer), restricted keys without rights,
// and failures on demand. The service's O2I_STRIPE_API_BASE points at the
// fake. Requests it changes are first sent to stripe-mock, whose 4xx
// answers (a parameter it does not know, a missing one) are passed on.
//
// Test controls (form-encoded POSTs):
//
//	/_fake/grant  key=rk_...            a restricted key (rk_...) gets its rights (they start without)
//	/_fake/revoke key=rk_...            and loses them
//	/_fake/fail   key=...&path=/v1/...&times=N  the next N requests with key to path are carried
//	                                    out and stored, then answered 500 (an outage mid-flow)
//	GET /_fake/payment_intents?customer=cus_...  the payment intents created for a customer
//	GET /_fake/failures?key=...                  how many failures ordered for key are still to come

// stripeMockVersion is the stripe-mock that `devstack up` builds when missing.
const stripeMockVersion = "v0.203.0"

func runStripeFake(args []string) error {
	fs := flag.NewFlagSet("stripe", flag.ContinueOnError)
	port := fs.Int("port", 22112, "listen port (127.0.0.1)")
	mock := fs.String("mock", "http://127.0.0.1:22111", "stripe-mock base URL")
	pidFile := fs.String("pidfile", "", "write the pid here (removed on exit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := &http.Server{Handler: newStripeFake(*mock), ReadHeaderTimeout: 10 * time.Second}
	return serveForeground("stripe", *port, *pidFile, "fake in front of "+*mock, srv.Serve, srv.Close)
}

type storedReply struct {
	status int
	body   []byte
}

type fakeCustomer struct {
	ID, Email, Name, IBAN string
}

type fakeIntent struct {
	ID, Customer, Status, Reference string
	Amount                          int64
}

// stripeFake is the fake's state, in memory.
type stripeFake struct {
	mock   string
	client *http.Client

	mu        sync.Mutex
	granted   map[string]bool
	fail      map[string]int
	replies   map[string]storedReply // key + Idempotency-Key
	customers []*fakeCustomer
	intents   []*fakeIntent
}

func newStripeFake(mock string) *stripeFake {
	return &stripeFake{mock: strings.TrimRight(mock, "/"), client: &http.Client{Timeout: 10 * time.Second},
		granted: map[string]bool{}, fail: map[string]int{}, replies: map[string]storedReply{}}
}

func stripeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}})
}

func (f *stripeFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_fake/") {
		f.control(w, r)
		return
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if user, _, basic := r.BasicAuth(); basic {
		key, ok = user, true
	}
	if !ok || key == "" {
		stripeError(w, 401, "invalid_request_error", "", "You did not provide an API key.")
		return
	}
	f.mu.Lock()
	restricted := strings.HasPrefix(key, "rk_") && !f.granted[key]
	f.mu.Unlock()
	if restricted && (r.URL.Path == "/v1/customers" || r.URL.Path == "/v1/payment_intents") {
		perm := "rak_customer_write"
		if r.URL.Path == "/v1/payment_intents" {
			perm = "rak_payment_intent_write"
		}
		stripeError(w, 403, "invalid_request_error", "", fmt.Sprintf("The provided key '%s***' does not have the required permissions for this endpoint. Having the '%s' permission would allow this request to continue.", key[:min(len(key), 8)], perm))
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	idem := r.Header.Get("Idempotency-Key")
	var status int
	var out []byte
	replayed := false
	if r.Method == http.MethodPost && idem != "" {
		f.mu.Lock()
		rep, seen := f.replies[key+"\x00"+idem]
		f.mu.Unlock()
		if seen {
			status, out, replayed = rep.status, rep.body, true
		}
	}
	if !replayed {
		status, out = f.handle(r, body)
		if r.Method == http.MethodPost && idem != "" && status < 500 {
			f.mu.Lock()
			f.replies[key+"\x00"+idem] = storedReply{status, out}
			f.mu.Unlock()
		}
	}
	// An ordered failure strikes after the request was carried out (or
	// replayed): the answer is lost.
	f.mu.Lock()
	fk := key + "\x00" + r.URL.Path
	failing := f.fail[fk] > 0
	if failing {
		f.fail[fk]--
	}
	f.mu.Unlock()
	if failing {
		stripeError(w, 500, "api_error", "", "fake: an outage after the request was carried out")
		return
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// handle answers one API request: the stateful ones here (after
// stripe-mock validated them), everything else by stripe-mock.
func (f *stripeFake) handle(r *http.Request, body []byte) (int, []byte) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/customers" && r.URL.Query().Get("email") != "":
		email := r.URL.Query().Get("email")
		f.mu.Lock()
		data := []any{}
		for _, c := range f.customers {
			if c.Email == email {
				data = append(data, customerJSON(c))
			}
		}
		f.mu.Unlock()
		out, _ := json.Marshal(map[string]any{"object": "list", "url": "/v1/customers", "has_more": false, "data": data})
		return 200, out
	case r.Method == http.MethodPost && r.URL.Path == "/v1/customers":
		status, mocked := f.forward(r, body)
		if status != 200 {
			return status, mocked
		}
		form, _ := parseForm(body)
		f.mu.Lock()
		c := &fakeCustomer{ID: "cus_" + randomID(14), Email: form.Get("email"), Name: form.Get("name")}
		c.IBAN = virtualIBAN(len(f.customers) + 1)
		f.customers = append(f.customers, c)
		f.mu.Unlock()
		out, _ := json.Marshal(customerJSON(c))
		return 200, out
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents":
		status, mocked := f.forward(r, body)
		if status != 200 {
			return status, mocked
		}
		form, _ := parseForm(body)
		amount, _ := strconv.ParseInt(form.Get("amount"), 10, 64)
		f.mu.Lock()
		defer f.mu.Unlock()
		var cust *fakeCustomer
		for _, c := range f.customers {
			if c.ID == form.Get("customer") {
				cust = c
			}
		}
		if cust == nil {
			out, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "param": "customer",
				"message": "No such customer: '" + form.Get("customer") + "'"}})
			return 400, out
		}
		if form.Get("payment_method_options[customer_balance][bank_transfer][type]") != "eu_bank_transfer" ||
			form.Get("payment_method_options[customer_balance][funding_type]") != "bank_transfer" {
			out, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error",
				"message": "fake: only customer_balance eu_bank_transfer payment intents are modelled"}})
			return 400, out
		}
		pi := &fakeIntent{ID: "pi_" + randomID(24), Customer: cust.ID, Status: "requires_action", Reference: strings.ToUpper(randomID(12)), Amount: amount}
		f.intents = append(f.intents, pi)
		var obj map[string]any
		_ = json.Unmarshal(mocked, &obj)
		if obj == nil {
			obj = map[string]any{"object": "payment_intent"}
		}
		obj["id"], obj["amount"], obj["currency"], obj["customer"], obj["status"] = pi.ID, amount, form.Get("currency"), cust.ID, pi.Status
		obj["payment_method_types"] = []string{"customer_balance"}
		obj["next_action"] = map[string]any{"type": "display_bank_transfer_instructions",
			"display_bank_transfer_instructions": map[string]any{
				"amount_remaining": amount, "currency": form.Get("currency"), "reference": pi.Reference, "type": "eu_bank_transfer",
				"hosted_instructions_url": "https://payments.stripe.com/bank_transfers/instructions/fake",
				"financial_addresses": []any{map[string]any{"type": "iban", "supported_networks": []string{"sepa"},
					"iban": map[string]any{"iban": cust.IBAN, "bic": "SOGEDEFFXXX", "account_holder_name": "Stripe Payments Europe Limited",
						"country": form.Get("payment_method_options[customer_balance][bank_transfer][eu_bank_transfer][country]")}}},
			}}
		out, _ := json.Marshal(obj)
		return 200, out
	}
	if id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/v1/payment_intents/"), "/cancel"); ok && r.Method == http.MethodPost &&
		strings.HasPrefix(r.URL.Path, "/v1/payment_intents/") {
		status, mocked := f.forward(r, body)
		if status != 200 {
			return status, mocked
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, pi := range f.intents {
			if pi.ID == id {
				pi.Status = "canceled"
				out, _ := json.Marshal(map[string]any{"id": pi.ID, "object": "payment_intent", "amount": pi.Amount, "customer": pi.Customer,
					"status": pi.Status, "cancellation_reason": "abandoned"})
				return 200, out
			}
		}
		out, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "No such payment_intent: '" + id + "'"}})
		return 404, out
	}
	return f.forward(r, body)
}

func customerJSON(c *fakeCustomer) map[string]any {
	return map[string]any{"id": c.ID, "object": "customer", "email": c.Email, "name": c.Name, "livemode": false}
}

// forward sends the request to stripe-mock and returns its answer.
func (f *stripeFake) forward(r *http.Request, body []byte) (int, []byte) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, f.mock+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 500, []byte(`{"error":{"type":"api_error","message":"fake: bad request"}}`)
	}
	req.Header.Set("Authorization", "Bearer sk_test_123")
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 502, []byte(`{"error":{"type":"api_error","message":"fake: stripe-mock unreachable"}}`)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (f *stripeFake) control(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/_fake/grant":
		f.granted[r.Form.Get("key")] = true
	case "/_fake/revoke":
		delete(f.granted, r.Form.Get("key"))
	case "/_fake/fail":
		n, _ := strconv.Atoi(r.Form.Get("times"))
		f.fail[r.Form.Get("key")+"\x00"+r.Form.Get("path")] = max(n, 1)
	case "/_fake/failures":
		left := 0
		for k, n := range f.fail {
			if strings.HasPrefix(k, r.Form.Get("key")+"\x00") {
				left += n
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"left": left})
		return
	case "/_fake/payment_intents":
		out := []map[string]any{}
		for _, pi := range f.intents {
			if pi.Customer == r.Form.Get("customer") || r.Form.Get("customer") == "" {
				out = append(out, map[string]any{"id": pi.ID, "customer": pi.Customer, "amount": pi.Amount, "reference": pi.Reference, "status": pi.Status})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
		return
	default:
		http.NotFound(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func parseForm(body []byte) (urlValues, error) {
	req, _ := http.NewRequest("POST", "/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	err := req.ParseForm()
	return urlValues(req.PostForm), err
}

type urlValues map[string][]string

func (v urlValues) Get(k string) string {
	if vs := v[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomID(n int) string {
	b := make([]byte, n)
	for i := range b {
		k, _ := rand.Int(rand.Reader, big.NewInt(int64(len(idAlphabet))))
		b[i] = idAlphabet[k.Int64()]
	}
	return string(b)
}

// virtualIBAN is a valid German IBAN (ISO 13616 check digits) for the n-th
// customer: bank code 10010010, account number n.
func virtualIBAN(n int) string {
	bban := fmt.Sprintf("10010010%010d", n)
	num := new(big.Int)
	num.SetString(bban+"131400", 10) // D=13, E=14, 00
	check := 98 - new(big.Int).Mod(num, big.NewInt(97)).Int64()
	return fmt.Sprintf("DE%02d%s", check, bban)
}

// The components: stripe-mock and the fake in front of it.

func stripeMockAddr(cfg *config) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.stripeMockPort))
}

func stripeFakeAddr(cfg *config) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.stripePort))
}

func httpReady(url string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

func ensureStripeMock(cfg *config, deadline time.Time) error {
	start := time.Now()
	pidPath, logPath := cfg.path("stripe-mock.pid"), cfg.path("stripe-mock.log")
	if _, ok := runningPid(pidPath, "stripe-mock"); ok {
		logf("stripe-mock: already running on %s", stripeMockAddr(cfg))
		return nil
	}
	if portOpen(cfg.stripeMockPort) {
		return fmt.Errorf("port %d is in use by another process (no live pid in %s)", cfg.stripeMockPort, cfg.rel(pidPath))
	}
	bin := cfg.path("bin", "stripe-mock")
	if _, err := os.Stat(bin); err != nil {
		logf("stripe-mock: building %s into %s (once)", stripeMockVersion, cfg.rel(filepath.Dir(bin)))
		cmd := exec.Command("go", "install", "github.com/stripe/stripe-mock@"+stripeMockVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install stripe-mock: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	// stripe-mock also serves HTTPS, by default on 12112 of every address:
	// on a port of the stack's own (next to the fake's) so that two stacks
	// on one machine do not collide.
	tlsAddr := "127.0.0.1:" + strconv.Itoa(cfg.stripeMockPort+2)
	proc, err := startDetached(bin, []string{"-http-addr", stripeMockAddr(cfg), "-https-addr", tlsAddr}, os.Environ(), logPath, pidPath)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	alive := func() bool { return pidAlive(proc.Pid, "stripe-mock") }
	if err := waitFor("an HTTP answer on "+stripeMockAddr(cfg), limitFor(60*time.Second, deadline), alive, func() error {
		return httpReady("http://" + stripeMockAddr(cfg) + "/v1/customers")
	}); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	logf("stripe-mock: started on %s in %s (pid %d)", stripeMockAddr(cfg), time.Since(start).Round(100*time.Millisecond), proc.Pid)
	return nil
}

func stopStripeMock(cfg *config) error {
	return stopPid("stripe-mock", cfg.path("stripe-mock.pid"), "stripe-mock", 10*time.Second)
}

func stateStripeMock(cfg *config) string {
	pid, ok := runningPid(cfg.path("stripe-mock.pid"), "stripe-mock")
	if !ok {
		return "stopped"
	}
	return fmt.Sprintf("running  pid %d  http://%s", pid, stripeMockAddr(cfg))
}

func ensureStripeFake(cfg *config, deadline time.Time) error {
	start := time.Now()
	pidPath, logPath := cfg.path("stripe.pid"), cfg.path("stripe.log")
	if _, ok := runningPid(pidPath, "stripe"); ok {
		logf("stripe: fake already running on %s", stripeFakeAddr(cfg))
		return nil
	}
	if portOpen(cfg.stripePort) {
		return fmt.Errorf("port %d is in use by another process (no live pid in %s)", cfg.stripePort, cfg.rel(pidPath))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"stripe", "-port", strconv.Itoa(cfg.stripePort), "-mock", "http://" + stripeMockAddr(cfg), "-pidfile", pidPath}
	proc, err := startDetached(self, args, os.Environ(), logPath, pidPath)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	alive := func() bool { return pidAlive(proc.Pid, "stripe") }
	if err := waitFor("an HTTP answer on "+stripeFakeAddr(cfg), limitFor(30*time.Second, deadline), alive, func() error {
		return httpReady("http://" + stripeFakeAddr(cfg) + "/_fake/payment_intents")
	}); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	logf("stripe: fake started on %s in %s (pid %d)", stripeFakeAddr(cfg), time.Since(start).Round(100*time.Millisecond), proc.Pid)
	return nil
}

func stopStripeFake(cfg *config) error {
	return stopPid("stripe", cfg.path("stripe.pid"), "stripe", 10*time.Second)
}

func stateStripeFake(cfg *config) string {
	pid, ok := runningPid(cfg.path("stripe.pid"), "stripe")
	if !ok {
		return "stopped"
	}
	return fmt.Sprintf("running  pid %d  http://%s (in front of stripe-mock)", pid, stripeFakeAddr(cfg))
}
