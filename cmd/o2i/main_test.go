package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
	"github.com/o2i-service/o2i/internal/tracing"
)

// The end-to-end tests run the real binary's run() against the local stack,
// with the API on a free port, and speak HTTP to it.
var (
	baseURL    string
	metricsURL string // the metrics listener's, apart from the API
	validator  *apitest.Validator
)

func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" {
		os.Exit(serveReplica()) // a child of TestTwoAPIProcessesShareRateLimitIdempotencyAndSessions
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	env := func(name string) string {
		if name == "O2I_HTTP_ADDR" || name == "O2I_METRICS_ADDR" {
			return "127.0.0.1:0"
		}
		if name == "O2I_LOG_LEVEL" {
			return "error"
		}
		return testenv.Env(name)
	}
	// Every test runs with tracing on; TestOneTraceFromRequestToArchive
	// reads the spans of its trace.
	tracing.Install(traces, "o2i-test")
	var out bytes.Buffer
	if err := run(ctx, []string{"migrate"}, env, &out, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "migrate (is the local stack up? `make test` brings it up):", err)
		os.Exit(1)
	}
	done := make(chan error, 1)
	metricsc := make(chan string, 1)
	go func() {
		done <- runListening(withMetricsListening(ctx, func(a string) { metricsc <- a }), []string{"serve", "--roles", "api,relay,projector,invoicer"}, env, os.Stderr, func(a string) { addrc <- a })
	}()
	select {
	case addr := <-addrc:
		baseURL = "http://" + addr
		metricsURL = "http://" + <-metricsc // the metrics listener starts before the API's
	case err := <-done:
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "serve did not listen within 30s")
		os.Exit(1)
	}
	doc, err := openAPIDocument()
	if err == nil {
		validator, err = apitest.New(doc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		code = 1
	}
	os.Exit(code)
}

func client(t *testing.T) *apitest.Client {
	return &apitest.Client{T: t, BaseURL: baseURL, V: validator}
}

// runCmd runs an admin command and returns its stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, testenv.Getenv, &out, &errOut)
	if err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}
