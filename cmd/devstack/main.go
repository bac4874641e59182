// Command devstack runs the project-local development and test stack under
// .dev/: PostgreSQL and Redis from the OS packages, a MinIO server built from
// source, and an in-process Kafka-protocol broker (kfake). It also seeds a
// development project and API key through the service's admin CLI.
//
// Usage:
//
//	devstack up       start every component that is not running, write .dev/env
//	devstack down     stop every component started by up
//	devstack status   show what is running
//	devstack seed     migrate and create the dev project + API key (.dev/credentials.json)
//	devstack env      print the environment file for the local stack
//	devstack clean    down, then remove .dev/
//	devstack crash C  stop component C as a crash would (fault runs); up starts it again
//	devstack kafka    run the Kafka-protocol broker in the foreground (used by up)
//	devstack smtp     run the SMTP sink in the foreground (used by up): every
//	                  message it receives becomes an .eml file under .dev/mail/
//	devstack stripe   run the payment provider's fake (in front of stripe-mock) in
//	                  the foreground (used by up)
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const modulePath = "github.com/o2i-service/o2i"

// config holds the fixed layout of the local stack. Every address here is
// also a built-in default of the service.
type config struct {
	root string // repository root (absolute)
	dev  string // root/.dev

	httpAddr    string
	metricsAddr string

	pgPort int
	pgUser string
	pgPass string
	pgDB   string

	redisPort int

	minioVersion string
	minioPort    int
	consolePort  int
	s3AccessKey  string
	s3SecretKey  string
	s3Bucket     string
	s3TestBucket string

	kafkaPort       int
	smtpPort        int
	stripeMockPort  int
	stripePort      int
	kafkaTopics     []string
	kafkaPartitions int
}

// portOffsetVar names the environment variable whose whole number is added
// to every port of the stack, so that two checkouts on one machine can each
// run a stack of their own (for example 100: PostgreSQL on 25532, the API
// on 8180). The default, 0, gives the service's built-in addresses.
const portOffsetVar = "O2I_DEV_PORT_OFFSET"

// newConfig returns the stack of the checkout at root with every port moved
// by portOffset.
func newConfig(root string, portOffset int) *config {
	return &config{
		root:        root,
		dev:         filepath.Join(root, ".dev"),
		httpAddr:    "127.0.0.1:" + strconv.Itoa(8080+portOffset),
		metricsAddr: "127.0.0.1:" + strconv.Itoa(9464+portOffset),

		pgPort: 25432 + portOffset,
		pgUser: "o2i",
		pgPass: "o2i",
		pgDB:   "o2i",

		redisPort: 26379 + portOffset,

		minioVersion: "v0.0.0-20260212201848-7aac2a2c5b7c",
		minioPort:    29000 + portOffset,
		consolePort:  29001 + portOffset,
		s3AccessKey:  "o2i-dev",
		s3SecretKey:  "o2i-dev-secret",
		s3Bucket:     "o2i-archive",
		s3TestBucket: "o2i-archive-test",

		kafkaPort:       highestPort + portOffset,
		kafkaTopics:     []string{"o2i.orders", "o2i.invoices", "o2i.payments"},
		kafkaPartitions: 6,

		smtpPort:       22525 + portOffset,
		stripeMockPort: 22111 + portOffset,
		stripePort:     22112 + portOffset,
	}
}

// highestPort is the stack's highest base port, the broker's (the
// stripe-mock HTTPS listener, two above stripe-mock, sits lower).
const highestPort = 29092

// maxPort keeps every port of the stack below Linux's default ephemeral
// range (32768 to 60999): a port in that range can be held for a while by
// any outgoing connection, and the stack would fail to start.
const maxPort = 32767

// portOffset parses the value of O2I_DEV_PORT_OFFSET: empty is 0; the
// stack's highest port must stay at most maxPort.
func portOffset(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || highestPort+n > maxPort {
		return 0, fmt.Errorf("%s must be a whole number from 0 to %d (every port stays below the ephemeral range), got %q",
			portOffsetVar, maxPort-highestPort, v)
	}
	return n, nil
}

func (c *config) path(elem ...string) string {
	return filepath.Join(append([]string{c.dev}, elem...)...)
}

// rel shortens an absolute path below the repository root for messages.
func (c *config) rel(p string) string {
	if r, err := filepath.Rel(c.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: devstack <command> [flags]

commands:
  up       start PostgreSQL, Redis, MinIO, the Kafka broker and the SMTP sink under .dev/ and write .dev/env
  down     stop everything started by up
  status   show the state of every component
  seed     run "o2i migrate" and create the dev project and API key (.dev/credentials.json)
  env      print the environment of the local stack (the content of .dev/env)
  clean    down, then remove .dev/
  crash    stop one component as a crash would (postgres: immediate shutdown; redis, kafka, minio: SIGKILL); up starts it again
  kafka    run the Kafka-protocol broker in the foreground (started in the background by up)
  smtp     run the SMTP sink in the foreground (started by up; messages become .dev/mail/*.eml)
  stripe   run the payment provider fake in front of stripe-mock in the foreground (started by up)
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	if cmd == "-h" || cmd == "--help" || cmd == "help" {
		usage()
		return
	}
	if err := run(cmd, args); err != nil {
		fmt.Fprintf(os.Stderr, "devstack %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func run(cmd string, args []string) error {
	switch cmd {
	case "kafka":
		return runKafka(args)
	case "smtp":
		return runSMTP(args)
	case "stripe":
		return runStripeFake(args)
	}
	root, err := findRoot()
	if err != nil {
		return err
	}
	offset, err := portOffset(os.Getenv(portOffsetVar))
	if err != nil {
		return err
	}
	cfg := newConfig(root, offset)

	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	// locked runs fn holding the stack's lock, after the flags are parsed.
	locked := func(fn func() error) error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		unlock, err := lockDev(cfg)
		if err != nil {
			return err
		}
		defer unlock()
		return fn()
	}
	switch cmd {
	case "up":
		timeout := fs.Duration("timeout", 30*time.Minute, "overall time limit (includes the first MinIO build)")
		return locked(func() error { return up(cfg, time.Now().Add(*timeout)) })
	case "down":
		return locked(func() error { return down(cfg) })
	case "clean":
		if err := locked(func() error { return down(cfg) }); err != nil {
			return err
		}
		return clean(cfg)
	case "status":
		if err := fs.Parse(args); err != nil {
			return err
		}
		return status(cfg)
	case "env":
		if err := fs.Parse(args); err != nil {
			return err
		}
		fmt.Print(renderEnv(envVars(cfg)))
		return nil
	case "seed":
		bin := fs.String("o2i", "bin/o2i", "path of the service binary")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return seed(cfg, *bin)
	case "crash":
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: devstack crash postgres|redis|kafka|minio")
		}
		return locked(func() error { return crash(cfg, fs.Arg(0)) })
	default:
		usage()
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// findRoot walks up from the working directory to the go.mod of this module.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the %s repository (no go.mod found); run from the repository root", modulePath)
		}
		dir = parent
	}
}

func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == modulePath
		}
	}
	return false
}

// lockDev serialises up/down/clean runs on the same .dev directory.
func lockDev(cfg *config) (func(), error) {
	if err := os.MkdirAll(cfg.dev, 0o755); err != nil {
		return nil, err
	}
	// postgres must be able to traverse .dev when the cluster lives inside it.
	_ = os.Chmod(cfg.dev, 0o755)
	f, err := os.OpenFile(cfg.path("devstack.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another devstack run holds %s: %v", cfg.rel(f.Name()), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// component is one service of the stack.
type component struct {
	name   string
	ensure func(cfg *config, deadline time.Time) error
	stop   func(cfg *config) error
	state  func(cfg *config) string
	// crash stops the component the hard way, as a crash would (for fault
	// runs): PostgreSQL by an immediate shutdown (no checkpoint: crash
	// recovery at the next start), the others by SIGKILL. `up` starts it again.
	crash func(cfg *config) error
}

func components() []component {
	return []component{
		{"postgres", ensurePostgres, stopPostgres, statePostgres, crashPostgres},
		{"redis", ensureRedis, stopRedis, stateRedis, func(cfg *config) error {
			return killPid("redis", cfg.path("redis", "redis.pid"), "redis-server")
		}},
		{"kafka", ensureKafka, stopKafka, stateKafka, func(cfg *config) error {
			return killPid("kafka", cfg.path("kafka.pid"), "kafka")
		}},
		{"minio", ensureMinio, stopMinio, stateMinio, func(cfg *config) error {
			return killPid("minio", cfg.path("minio.pid"), "minio")
		}},
		{"smtp", ensureSMTP, stopSMTP, stateSMTP, nil},
		{"stripe-mock", ensureStripeMock, stopStripeMock, stateStripeMock, nil},
		{"stripe", ensureStripeFake, stopStripeFake, stateStripeFake, nil},
	}
}

// crash crashes the named component (see component.crash).
func crash(cfg *config, name string) error {
	for _, c := range components() {
		if c.name == name && c.crash != nil {
			return c.crash(cfg)
		}
	}
	return fmt.Errorf("unknown component %q (postgres, redis, kafka, minio)", name)
}

func up(cfg *config, deadline time.Time) error {
	start := time.Now()
	if err := ensureOSPackages(cfg.path("apt.log")); err != nil {
		return err
	}
	for _, c := range components() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: overall time limit exceeded before start", c.name)
		}
		if err := c.ensure(cfg, deadline); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	envPath := cfg.path("env")
	if err := writeFileAtomic(envPath, []byte(renderEnv(envVars(cfg))), 0o644); err != nil {
		return err
	}
	logf("stack is up in %s; environment in %s", time.Since(start).Round(100*time.Millisecond), cfg.rel(envPath))
	return nil
}

func down(cfg *config) error {
	cs := components()
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].stop(cfg); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cs[i].name, err))
		}
	}
	return errors.Join(errs...)
}

func status(cfg *config) error {
	for _, c := range components() {
		fmt.Printf("%-12s %s\n", c.name, c.state(cfg))
	}
	return nil
}

func clean(cfg *config) error {
	if ext, ok := externalPGDir(cfg); ok {
		if err := os.RemoveAll(ext); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(cfg.dev); err != nil {
		return err
	}
	logf("removed %s", cfg.rel(cfg.dev))
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "devstack: "+format+"\n", args...)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
