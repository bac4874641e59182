package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apitest"
	"github.com/o2i-service/o2i/internal/testenv"
)

// TestServeFailsFastNamingTheMissingDependency points one address at a port
// where nothing listens and expects serve to stop at once with one line
// naming that dependency.
func TestServeFailsFastNamingTheMissingDependency(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, variable, value, want string }{
		{"postgres", "O2I_DATABASE_URL", "postgres://o2i:o2i@127.0.0.1:1/o2i?sslmode=disable", "PostgreSQL"},
		{"redis", "O2I_REDIS_URL", "redis://127.0.0.1:1/0", "Redis"},
		{"kafka", "O2I_KAFKA_BROKERS", "127.0.0.1:1", "Kafka"},
		{"s3", "O2I_S3_ENDPOINT", "127.0.0.1:1", "S3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := func(name string) string {
				switch name {
				case tt.variable:
					return tt.value
				case "O2I_HTTP_ADDR":
					return "127.0.0.1:0"
				}
				return testenv.Env(name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			var out bytes.Buffer
			err := run(ctx, []string{"serve"}, env, &out, &out)
			if err == nil {
				t.Fatal("serve started without its dependency")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, tt.variable) || strings.Contains(msg, "\n") {
				t.Errorf("error %q should be one line naming %s and %s", msg, tt.want, tt.variable)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %v to fail", d)
			}
		})
	}
}

// TestAPIRoleOnlyReadsTheArchive: a process without the invoicer role
// checks the archive buckets and creates none (its credentials need no
// write right); a missing bucket stops it naming the variable.
func TestAPIRoleOnlyReadsTheArchive(t *testing.T) {
	t.Parallel()
	for _, variable := range []string{"O2I_S3_BUCKET", "O2I_S3_TEST_BUCKET"} {
		bucket := "test-missing-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
		env := func(name string) string {
			switch name {
			case variable:
				return bucket
			case "O2I_HTTP_ADDR":
				return "127.0.0.1:0"
			}
			return testenv.Env(name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out bytes.Buffer
		err := run(ctx, []string{"serve", "--roles", "api"}, env, &out, &out)
		cancel()
		if err == nil || !strings.Contains(err.Error(), variable) || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("%s missing: %v", variable, err)
		}
		if ok, err := testenv.S3(t).BucketExists(context.Background(), bucket); err != nil || ok {
			t.Errorf("the API role created bucket %s (%v)", bucket, err)
		}
	}
}

// TestTestBucketMustDifferFromTheArchive: test documents have no retention,
// so they never share the live archive's bucket.
func TestTestBucketMustDifferFromTheArchive(t *testing.T) {
	t.Parallel()
	env := func(name string) string {
		if name == "O2I_S3_TEST_BUCKET" {
			return testenv.Env("O2I_S3_BUCKET")
		}
		return testenv.Env(name)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"migrate"}, env, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "O2I_S3_TEST_BUCKET must differ") {
		t.Errorf("same bucket for test and live documents: %v", err)
	}
}

func TestUnknownRoleIsRejected(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "--roles", "api,printer"}, testenv.Getenv, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "printer") {
		t.Errorf("err = %v, want unknown role printer", err)
	}
}

// TestServeShutsDownGracefully starts every role, serves a request, then
// cancels: serve must return cleanly and promptly.
func TestServeShutsDownGracefully(t *testing.T) {
	t.Parallel()
	addrc := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := func(name string) string {
		switch name {
		case "O2I_HTTP_ADDR":
			return "127.0.0.1:0"
		case "O2I_LOG_LEVEL":
			return "error"
		}
		return testenv.Env(name)
	}
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() { done <- runListening(ctx, []string{"serve"}, env, &out, func(a string) { addrc <- a }) }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen")
	}
	c := &apitest.Client{T: t, BaseURL: "http://" + addr, V: validator}
	if r := c.Do("GET", "/api/health", "", nil); r.Status != 200 {
		t.Fatalf("health: %d", r.Status)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20s of cancellation")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v", d)
	}
}
