package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvVarsContract(t *testing.T) {
	got := map[string]string{}
	for _, v := range envVars(newConfig("/repo", 0)) {
		got[v.Name] = v.Value
	}
	want := map[string]string{
		"O2I_HTTP_ADDR":       "127.0.0.1:8080",
		"O2I_PUBLIC_URL":      "http://127.0.0.1:8080",
		"O2I_METRICS_ADDR":    "127.0.0.1:9464",
		"O2I_DATABASE_URL":    "postgres://o2i:o2i@127.0.0.1:25432/o2i?sslmode=disable",
		"O2I_REDIS_URL":       "redis://127.0.0.1:26379/0",
		"O2I_KAFKA_BROKERS":   "127.0.0.1:29092",
		"O2I_S3_ENDPOINT":     "127.0.0.1:29000",
		"O2I_S3_ACCESS_KEY":   "o2i-dev",
		"O2I_S3_SECRET_KEY":   "o2i-dev-secret",
		"O2I_S3_USE_TLS":      "false",
		"O2I_S3_BUCKET":       "o2i-archive",
		"O2I_S3_TEST_BUCKET":  "o2i-archive-test",
		"O2I_SMTP_URL":        "smtp://127.0.0.1:22525",
		"O2I_STRIPE_API_BASE": "http://127.0.0.1:22112",
	}
	if len(got) != len(want) {
		t.Errorf("got %d variables, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestPortOffset moves every address of the stack, and nothing else.
func TestPortOffset(t *testing.T) {
	got := map[string]string{}
	for _, v := range envVars(newConfig("/repo", 100)) {
		got[v.Name] = v.Value
	}
	for k, want := range map[string]string{
		"O2I_HTTP_ADDR":       "127.0.0.1:8180",
		"O2I_PUBLIC_URL":      "http://127.0.0.1:8180",
		"O2I_METRICS_ADDR":    "127.0.0.1:9564",
		"O2I_DATABASE_URL":    "postgres://o2i:o2i@127.0.0.1:25532/o2i?sslmode=disable",
		"O2I_REDIS_URL":       "redis://127.0.0.1:26479/0",
		"O2I_KAFKA_BROKERS":   "127.0.0.1:29192",
		"O2I_S3_ENDPOINT":     "127.0.0.1:29100",
		"O2I_S3_BUCKET":       "o2i-archive",
		"O2I_SMTP_URL":        "smtp://127.0.0.1:22625",
		"O2I_STRIPE_API_BASE": "http://127.0.0.1:22212",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if c := newConfig("/repo", 100); c.consolePort != 29101 {
		t.Errorf("console port = %d, want 29101", c.consolePort)
	}
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{{"", 0, false}, {"100", 100, false}, {"3675", 3675, false}, {"3676", 0, true}, {"-1", 0, true}, {"x", 0, true}} {
		got, err := portOffset(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("portOffset(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestRenderEnvSourced sources the rendered file in sh and reads every
// variable back, including values that need quoting.
func TestRenderEnvSourced(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("sh is required to source .dev/env: %v", err)
	}
	vars := append(envVars(newConfig("/repo", 0)),
		envVar{"O2I_TEST_QUOTE", `it's "quoted" $HOME ; & | * ?`},
		envVar{"O2I_TEST_EMPTY", ""},
	)
	file := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(file, []byte(renderEnv(vars)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range vars {
		out, err := exec.Command(sh, "-c", `. "$1" && printf '%s' "$`+v.Name+`"`, "sh", file).CombinedOutput()
		if err != nil {
			t.Fatalf("source: %v: %s", err, out)
		}
		if string(out) != v.Value {
			t.Errorf("%s read back as %q, want %q", v.Name, out, v.Value)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(renderEnv(vars)), "\n")[1:] {
		if !strings.HasPrefix(line, "export O2I_") {
			t.Errorf("line %q is not an export of an O2I_ variable", line)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080": "127.0.0.1:8080",
		"a b":            "'a b'",
		"":               "''",
		"it's":           `'it'\''s'`,
		"x?y=1&z":        "'x?y=1&z'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestDecodeJSONOutput(t *testing.T) {
	out := []byte("time=... level=INFO msg=connected\n{\n  \"id\": \"prj_123\",\n  \"name\": \"Dev Shop\"\n}\n")
	var p struct {
		ID string `json:"id"`
	}
	if err := decodeJSONOutput(out, &p); err != nil || p.ID != "prj_123" {
		t.Fatalf("got %q, %v", p.ID, err)
	}
	if err := decodeJSONOutput([]byte("no json"), &p); err == nil {
		t.Fatal("want an error without JSON")
	}
}

func TestRedisConf(t *testing.T) {
	conf := redisConf(26379, "/srv/x y/.dev/redis")
	for _, want := range []string{
		"bind 127.0.0.1\n", "port 26379\n", "daemonize yes\n", `save ""` + "\n", "appendonly no\n",
		`pidfile "/srv/x y/.dev/redis/redis.pid"` + "\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("redis.conf lacks %q:\n%s", want, conf)
		}
	}
}

func TestPGSettingsKeepDurability(t *testing.T) {
	s := pgSettings(newConfig("/repo", 0))
	for _, want := range []string{"port = 25432", "listen_addresses = '127.0.0.1'", "synchronous_commit = on", "max_connections = 200", "shared_buffers = 256MB", "wal_compression = lz4", "track_wal_io_timing = on"} {
		if !strings.Contains(s, want+"\n") {
			t.Errorf("settings lack %q", want)
		}
	}
}

func TestIsModuleRoot(t *testing.T) {
	dir := t.TempDir()
	if isModuleRoot(dir) {
		t.Fatal("empty dir taken for the module root")
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if isModuleRoot(dir) {
		t.Fatal("other module taken for the module root")
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("// x\nmodule "+modulePath+"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !isModuleRoot(dir) {
		t.Fatal("module root not recognised")
	}
}

func TestPidAlive(t *testing.T) {
	if !pidAlive(os.Getpid(), "") {
		t.Fatal("own pid reported dead")
	}
	if pidAlive(os.Getpid(), "no-such-command-name-xyz") {
		t.Fatal("own pid matched a foreign command name")
	}
	if pidAlive(0, "") || pidAlive(-1, "") {
		t.Fatal("invalid pid reported alive")
	}
}
