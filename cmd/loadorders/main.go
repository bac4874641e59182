// Command loadorders drives POST /v1/orders with realistic orders over HTTP
// from N connections for a duration and prints what the service accepted as
// JSON: accepted orders per second and the p50/p90/p99 latency.
//
//	loadorders -url http://127.0.0.1:8080 -c 64 -d 30s
//
// Without -key it creates a project (with a rate limit high enough not to
// interfere) and an orders:write key in O2I_DATABASE_URL.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
)

type config struct {
	url         string
	key         string
	conns       int
	duration    time.Duration
	warmup      time.Duration
	products    int
	databaseURL string
}

// Result is the printed report.
type Result struct {
	Connections    int            `json:"connections"`
	DurationS      float64        `json:"durationSeconds"`
	Accepted       int64          `json:"accepted"`
	OrdersPerS     float64        `json:"acceptedOrdersPerSecond"`
	P50Ms          float64        `json:"p50Ms"`
	P90Ms          float64        `json:"p90Ms"`
	P99Ms          float64        `json:"p99Ms"`
	MaxMs          float64        `json:"maxMs"`
	Errors         int64          `json:"errors"`
	StatusCounts   map[string]int `json:"statusCounts"`
	AvgBodyBytes   int            `json:"avgBodyBytes"`
	WarmupSeconds  float64        `json:"warmupSeconds"`
	ProjectID      string         `json:"projectId,omitempty"`
	FirstErrorBody string         `json:"firstErrorBody,omitempty"`
}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadorders:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	var c config
	fs := flag.NewFlagSet("loadorders", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "base URL of the service")
	fs.StringVar(&c.key, "key", os.Getenv("O2I_API_KEY"), "API key with orders:write (default: create a project and key in O2I_DATABASE_URL)")
	fs.IntVar(&c.conns, "c", 64, "concurrent connections")
	fs.DurationVar(&c.duration, "d", 30*time.Second, "measured duration")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "unmeasured warm-up before the measurement")
	fs.IntVar(&c.products, "products", 200, "size of the simulated catalogue")
	fs.StringVar(&c.databaseURL, "database-url", envOr("O2I_DATABASE_URL", "postgres://o2i:o2i@127.0.0.1:25432/o2i?sslmode=disable"), "PostgreSQL URL, to create the project and key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var projectID string
	if c.key == "" {
		var err error
		if projectID, c.key, err = createKey(ctx, c.databaseURL); err != nil {
			return err
		}
	}
	res, err := load(ctx, c)
	if err != nil {
		return err
	}
	res.ProjectID = projectID
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func createKey(ctx context.Context, url string) (string, string, error) {
	pool, err := store.Open(ctx, url, 2)
	if err != nil {
		return "", "", err
	}
	defer pool.Close()
	p, err := project.Create(ctx, pool, "loadorders "+time.Now().UTC().Format(time.RFC3339), true, project.Cash)
	if err != nil {
		return "", "", err
	}
	high := 1_000_000
	if _, err := project.Apply(ctx, pool, p.ID, project.Update{RateLimitRPS: &high, RateLimitBurst: &high}); err != nil {
		return "", "", err
	}
	k, err := apikey.Create(ctx, pool, p.ID, []string{"orders:write"}, 0, "loadorders", apikey.Prefix)
	if err != nil {
		return "", "", err
	}
	return p.ID, k.Key, nil
}

// placeholder stands for the orderNo in the prepared order bodies.
var placeholder = []byte("@ORDERNO@")

type product struct {
	id, sku, name string
	grossCents    int64
	rate          string
	shipped       bool
}

func catalogue(n int) []product {
	names := []string{"Coffee mug", "T-shirt", "Notebook", "Sticker pack", "Hoodie", "Cloud plan", "E-book", "Poster", "Tote bag", "Support hours"}
	ps := make([]product, n)
	for i := range ps {
		base := names[i%len(names)]
		ps[i] = product{
			id: "ART-" + strconv.Itoa(1000+i), sku: fmt.Sprintf("SKU-%04d", i), name: fmt.Sprintf("%s %d", base, i),
			grossCents: int64(199 + (i*731)%9800), rate: []string{"19", "7"}[i%4/3], shipped: i%10 != 5 && i%10 != 6 && i%10 != 9,
		}
	}
	return ps
}

var cities = []struct{ street, postal, city string }{
	{"Hauptstraße 1", "10115", "Berlin"}, {"Marienplatz 8", "80331", "München"}, {"Heidestraße 17", "51147", "Köln"},
	{"Jungfernstieg 4", "20354", "Hamburg"}, {"Zeil 106", "60313", "Frankfurt am Main"},
}

// orderBody builds one realistic order (about 1 KB of JSON).
func orderBody(rng *rand.Rand, orderNo string, ps []product) []byte {
	n := 1 + rng.IntN(4)
	items := make([]map[string]any, 0, n)
	shipping := false
	var total int64
	for i := 0; i < n; i++ {
		p := ps[rng.IntN(len(ps))]
		q := int64(1 + rng.IntN(3))
		shipping = shipping || p.shipped
		total += q * p.grossCents
		items = append(items, map[string]any{
			"name": p.name, "sku": p.sku, "productId": p.id, "quantity": q,
			"unitGrossCents": p.grossCents, "taxRate": json.Number(p.rate),
		})
	}
	c := cities[rng.IntN(len(cities))]
	o := map[string]any{
		"orderNo": orderNo,
		"billingAddress": map[string]any{
			"country_code": "DE", "name": "Erika Mustermann", "street": c.street, "postal_code": c.postal, "city": c.city,
		},
		"items":            items,
		"email":            "kunde" + strconv.Itoa(rng.IntN(100000)) + "@example.com",
		"currency":         "EUR",
		"paymentRef":       "pi_" + orderNo,
		"paymentGateway":   "stripe",
		"financialStatus":  "paid",
		"requiresShipping": shipping,
	}
	if shipping {
		o["shippingGrossCents"] = 490
		total += 490
		o["shippingAddress"] = map[string]any{"country_code": "DE", "name": "Erika Mustermann", "street": c.street, "postal_code": c.postal, "city": c.city}
	}
	if rng.IntN(10) == 0 {
		credit := min(total, 500)
		o["creditRedemptions"] = []any{map[string]any{"type": "referral_credit", "amountCents": credit, "externalRef": "ct_" + orderNo}}
		o["grossTotalCents"] = total
	}
	b, _ := json.Marshal(o)
	return b
}

func load(ctx context.Context, c config) (Result, error) {
	ps := catalogue(c.products)
	tr := &http.Transport{MaxIdleConns: c.conns, MaxIdleConnsPerHost: c.conns, MaxConnsPerHost: c.conns, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	run := uuid.NewString()[:8]
	trng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	templates := make([][]byte, 2000)
	for i := range templates {
		templates[i] = orderBody(trng, string(placeholder), ps)
	}

	var (
		measuring atomic.Bool
		stop      atomic.Bool
		accepted  atomic.Int64
		errs      atomic.Int64
		bodyBytes atomic.Int64
		bodies    atomic.Int64
		mu        sync.Mutex
		lat       []time.Duration
		statuses  = map[string]int{}
		firstErr  string
	)
	var wg sync.WaitGroup
	for w := 0; w < c.conns; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			var mine []time.Duration
			local := map[string]int{}
			for seq := 0; !stop.Load(); seq++ {
				// A prepared order with this request's orderNo: the
				// generator must not eat the CPU the service needs.
				no := []byte("LOAD-" + run + "-" + strconv.Itoa(w) + "-" + strconv.Itoa(seq))
				body := bytes.ReplaceAll(templates[rng.IntN(len(templates))], placeholder, no)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/v1/orders", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+c.key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", uuid.NewString())
				start := time.Now()
				resp, err := client.Do(req)
				var status int
				var rb []byte
				if err == nil {
					rb, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				}
				d := time.Since(start)
				if !measuring.Load() {
					continue
				}
				bodyBytes.Add(int64(len(body)))
				bodies.Add(1)
				mine = append(mine, d)
				switch {
				case err != nil:
					errs.Add(1)
					local["error"]++
					mu.Lock()
					if firstErr == "" {
						firstErr = err.Error()
					}
					mu.Unlock()
				case status == 201:
					accepted.Add(1)
					local["201"]++
				default:
					errs.Add(1)
					local[strconv.Itoa(status)]++
					mu.Lock()
					if firstErr == "" {
						firstErr = string(rb)
					}
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			for k, v := range local {
				statuses[k] += v
			}
			mu.Unlock()
		}()
	}
	time.Sleep(c.warmup)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(c.duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	if len(lat) == 0 {
		return Result{}, errors.New("no request completed")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	return Result{
		Connections: c.conns, DurationS: elapsed.Seconds(), Accepted: accepted.Load(),
		OrdersPerS: float64(accepted.Load()) / elapsed.Seconds(),
		P50Ms:      pct(0.50), P90Ms: pct(0.90), P99Ms: pct(0.99), MaxMs: pct(1),
		Errors: errs.Load(), StatusCounts: statuses, AvgBodyBytes: int(bodyBytes.Load() / max(bodies.Load(), 1)),
		WarmupSeconds: c.warmup.Seconds(), FirstErrorBody: firstErr,
	}, nil
}
