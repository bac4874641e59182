package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// envVar is one line of .dev/env.
type envVar struct {
	Name, Value string
}

// envVars lists every address and credential of the local stack, in the
// O2I_* names the service reads.
func envVars(cfg *config) []envVar {
	db := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(cfg.pgUser, cfg.pgPass),
		Host:     "127.0.0.1:" + strconv.Itoa(cfg.pgPort),
		Path:     "/" + cfg.pgDB,
		RawQuery: "sslmode=disable",
	}
	return []envVar{
		{"O2I_HTTP_ADDR", cfg.httpAddr},
		{"O2I_PUBLIC_URL", "http://" + cfg.httpAddr},
		{"O2I_METRICS_ADDR", cfg.metricsAddr},
		{"O2I_DATABASE_URL", db.String()},
		{"O2I_REDIS_URL", fmt.Sprintf("redis://127.0.0.1:%d/0", cfg.redisPort)},
		{"O2I_KAFKA_BROKERS", fmt.Sprintf("127.0.0.1:%d", cfg.kafkaPort)},
		{"O2I_S3_ENDPOINT", fmt.Sprintf("127.0.0.1:%d", cfg.minioPort)},
		{"O2I_S3_ACCESS_KEY", cfg.s3AccessKey},
		{"O2I_S3_SECRET_KEY", cfg.s3SecretKey},
		{"O2I_S3_USE_TLS", "false"},
		{"O2I_S3_BUCKET", cfg.s3Bucket},
		{"O2I_S3_TEST_BUCKET", cfg.s3TestBucket},
		{"O2I_SMTP_URL", "smtp://" + smtpAddr(cfg)},
		{"O2I_STRIPE_API_BASE", "http://" + stripeFakeAddr(cfg)},
	}
}

// renderEnv renders vars as a POSIX shell file of export lines, meant to be
// sourced (". .dev/env").
func renderEnv(vars []envVar) string {
	var b strings.Builder
	b.WriteString("# Local dev/test stack, written by `devstack up`. Load with: . .dev/env\n")
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", v.Name, shellQuote(v.Value))
	}
	return b.String()
}

// environ returns vars as NAME=value strings for os/exec.
func environ(vars []envVar) []string {
	out := make([]string, 0, len(vars))
	for _, v := range vars {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}

// shellQuote quotes s for a POSIX shell. Plain words stay unquoted.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
