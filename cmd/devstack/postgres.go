package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// externalPGRoot holds clusters of checkouts that the postgres user cannot
// reach (for example a clone inside a home directory of mode 0700); .dev/pg then links there.
const externalPGRoot = "/var/lib/o2i-devstack"

// pgSettings tune the cluster for a dev box. synchronous_commit and fsync
// stay on so the stack behaves like production on commit.
func pgSettings(cfg *config) string {
	lines := []string{
		"# Written by devstack on every start; edit cmd/devstack/postgres.go instead.",
		"listen_addresses = '127.0.0.1'",
		"port = " + strconv.Itoa(cfg.pgPort),
		"unix_socket_directories = ''",
		"max_connections = 200",
		"shared_buffers = 256MB",
		"work_mem = 8MB",
		"maintenance_work_mem = 128MB",
		"effective_cache_size = 2GB",
		"max_wal_size = 2GB",
		// Full-page images (the first change of a page after each
		// checkpoint) are about half of the WAL an invoice writes;
		// compressed, the WAL is a fifth smaller for little CPU.
		"wal_compression = lz4",
		"random_page_cost = 1.1",
		"synchronous_commit = on",
		"fsync = on",
		"timezone = 'UTC'",
		"log_timezone = 'UTC'",
		"log_min_messages = warning",
		// Statement statistics for the bench (cmd/benchmark prints the
		// statements per archived invoice); nested statements of functions
		// and triggers are counted too.
		"shared_preload_libraries = 'pg_stat_statements'",
		"pg_stat_statements.track = all",
		"pg_stat_statements.max = 5000",
		// The bench reads the WAL of its drain back (pg_walinspect) to
		// split it by relation: keep a drain's WAL past its checkpoints.
		"wal_keep_size = 1GB",
		// The bench prints the WAL flushes' mean time (pg_stat_wal): the
		// number range's invoices each wait for one under its lock.
		"track_wal_io_timing = on",
	}
	return strings.Join(lines, "\n") + "\n"
}

const pgIncludeLine = "include_if_exists = 'o2i-devstack.conf'"

// pgRun runs a PostgreSQL program, as the postgres user when we are root.
func pgRun(limit time.Duration, bin string, args ...string) ([]byte, error) {
	if isRoot() {
		return runQuiet(limit, "runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
	}
	return runQuiet(limit, bin, args...)
}

// pgOwn makes path owned by the postgres user when we are root.
func pgOwn(path string, recursive bool) error {
	if !isRoot() {
		return nil
	}
	uid, gid, err := postgresIDs()
	if err != nil {
		return err
	}
	if !recursive {
		return os.Lchown(path, uid, gid)
	}
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func postgresIDs() (int, int, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, fmt.Errorf("look up user postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// ensurePostgresUser creates the postgres system user when missing (root only).
func ensurePostgresUser() error {
	if !isRoot() {
		return nil
	}
	if _, err := user.Lookup("postgres"); err == nil {
		return nil
	}
	args := []string{"--system", "--home-dir", "/var/lib/postgresql", "--no-create-home", "--shell", "/bin/bash"}
	if _, err := user.LookupGroup("postgres"); err == nil {
		args = append(args, "--gid", "postgres")
	} else {
		args = append(args, "--user-group")
	}
	if _, err := runQuiet(time.Minute, "useradd", append(args, "postgres")...); err != nil {
		return fmt.Errorf("create system user postgres: %w", err)
	}
	return nil
}

// externalPGDir reports the directory below externalPGRoot that .dev/pg
// links to, if it does.
func externalPGDir(cfg *config) (string, bool) {
	target, err := os.Readlink(cfg.path("pg"))
	if err != nil {
		return "", false
	}
	dir := filepath.Dir(target)
	if filepath.Dir(dir) != externalPGRoot {
		return "", false
	}
	return dir, true
}

// pgDataDir returns the cluster directory, creating it when needed: .dev/pg,
// or a directory below externalPGRoot (linked from .dev/pg) when we are
// root and the postgres user cannot traverse the checkout.
func pgDataDir(cfg *config) (string, error) {
	link := cfg.path("pg")
	if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(link)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(target, 0o700); err != nil {
			return "", err
		}
		return target, pgOwn(target, false)
	}
	if !isRoot() {
		return link, os.MkdirAll(link, 0o700)
	}
	if _, err := runQuiet(30*time.Second, "runuser", "-u", "postgres", "--", "test", "-x", cfg.dev); err == nil {
		if err := os.MkdirAll(link, 0o700); err != nil {
			return "", err
		}
		fi, err := os.Stat(link)
		if err != nil {
			return "", err
		}
		uid, _, err := postgresIDs()
		if err != nil {
			return "", err
		}
		// Re-own a cluster that was created by another user.
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
			return link, nil
		}
		return link, pgOwn(link, true)
	}
	// The checkout is not reachable for postgres (e.g. inside a private home directory).
	if entries, err := os.ReadDir(link); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("user postgres cannot reach %s; move the checkout or make its parent directories world-executable", link)
	}
	_ = os.Remove(link)
	dir := filepath.Join(externalPGRoot, shortHash(cfg.root), "pg")
	// A cluster left there belongs to an earlier .dev of a checkout at the
	// same path (its link is gone): stop it and start afresh.
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		if bin, err := pgBinFor(dir); err == nil && pgStatus(bin, dir) {
			_, _ = pgRun(2*time.Minute, filepath.Join(bin, "pg_ctl"), "stop", "-m", "fast", "-w", "-s", "-t", "60", "-D", dir)
		}
	}
	if err := os.RemoveAll(filepath.Dir(dir)); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Symlink(dir, link); err != nil {
		return "", err
	}
	logf("postgres: the checkout is not reachable for user postgres; cluster lives in %s (linked from .dev/pg)", dir)
	return dir, pgOwn(dir, true)
}

func shortHash(s string) string {
	h := fnv64(s)
	return fmt.Sprintf("%016x", h)
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// pgBinFor picks the PostgreSQL binaries matching an existing cluster, or
// the newest installed ones for a new cluster.
func pgBinFor(dataDir string) (string, error) {
	newest, ok := findPGBin()
	if !ok {
		return "", errors.New("PostgreSQL binaries not found in /usr/lib/postgresql/*/bin")
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return newest, nil
	}
	v := strings.TrimSpace(string(b))
	bin := filepath.Join("/usr/lib/postgresql", v, "bin")
	if _, err := os.Stat(filepath.Join(bin, "pg_ctl")); err != nil {
		return "", fmt.Errorf("cluster in %s is PostgreSQL %s but %s is missing; install postgresql-%s or run make clean", dataDir, v, bin, v)
	}
	return bin, nil
}

func pgPaths(cfg *config) (dataDir, logPath string, err error) {
	dataDir, err = pgDataDir(cfg)
	if err != nil {
		return "", "", err
	}
	return dataDir, filepath.Join(filepath.Dir(dataDir), "pg.log"), nil
}

// pgStatus runs pg_ctl status: true when the server of dataDir runs.
func pgStatus(bin, dataDir string) bool {
	var cmd *exec.Cmd
	if isRoot() {
		cmd = exec.Command("runuser", "-u", "postgres", "--", filepath.Join(bin, "pg_ctl"), "status", "-D", dataDir)
	} else {
		cmd = exec.Command(filepath.Join(bin, "pg_ctl"), "status", "-D", dataDir)
	}
	cmd.Dir = "/"
	return cmd.Run() == nil
}

func ensurePostgres(cfg *config, deadline time.Time) error {
	start := time.Now()
	if err := ensurePostgresUser(); err != nil {
		return err
	}
	dataDir, logPath, err := pgPaths(cfg)
	if err != nil {
		return err
	}
	bin, err := pgBinFor(dataDir)
	if err != nil {
		return err
	}
	fresh := false
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		if err := pgInit(cfg, bin, dataDir); err != nil {
			return err
		}
		fresh = true
	}
	changed, err := pgWriteSettings(cfg, dataDir)
	if err != nil {
		return err
	}
	if pgStatus(bin, dataDir) {
		// Running per postmaster.pid; it may still be starting or just dying.
		err := waitFor(fmt.Sprintf("connections on 127.0.0.1:%d", cfg.pgPort), limitFor(30*time.Second, deadline),
			func() bool { return pgStatus(bin, dataDir) },
			func() error {
				if !portOpen(cfg.pgPort) {
					return errors.New("port closed")
				}
				return nil
			})
		if err == nil {
			if changed {
				logf("postgres: settings changed; restart to apply (make down && make stack)")
			}
			if err := pgEnsureDB(cfg, false, limitFor(30*time.Second, deadline)); err != nil {
				return withLog(err, cfg.rel(logPath))
			}
			pgEnsureBenchStats(cfg, limitFor(30*time.Second, deadline))
			logf("postgres: already running on 127.0.0.1:%d", cfg.pgPort)
			return nil
		}
		if pgStatus(bin, dataDir) {
			return withLog(fmt.Errorf("server of %s runs but does not accept connections: %v", cfg.rel(dataDir), err), cfg.rel(logPath))
		}
		// It went away: start it below.
	}
	if portOpen(cfg.pgPort) {
		return fmt.Errorf("port %d is in use by another process (not the cluster in %s)", cfg.pgPort, cfg.rel(dataDir))
	}
	if f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		f.Close()
	}
	if err := pgOwn(logPath, false); err != nil {
		return err
	}
	limit := limitFor(90*time.Second, deadline)
	secs := strconv.Itoa(int(limit.Seconds()))
	if _, err := pgRun(limit+10*time.Second, filepath.Join(bin, "pg_ctl"), "start", "-w", "-s", "-t", secs, "-D", dataDir, "-l", logPath); err != nil {
		return withLog(fmt.Errorf("start failed: %w", err), cfg.rel(logPath))
	}
	if err := pgEnsureDB(cfg, fresh, limitFor(30*time.Second, deadline)); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	pgEnsureBenchStats(cfg, limitFor(30*time.Second, deadline))
	logf("postgres: started on 127.0.0.1:%d in %s (data %s)", cfg.pgPort, time.Since(start).Round(100*time.Millisecond), cfg.rel(dataDir))
	return nil
}

// pgInit creates a new cluster with a random bootstrap superuser password
// kept in .dev/pg-superuser.pw.
func pgInit(cfg *config, bin, dataDir string) error {
	logf("postgres: initdb into %s", cfg.rel(dataDir))
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	pw := hex.EncodeToString(raw)
	pwFile := filepath.Join(filepath.Dir(dataDir), "pg-init.pw")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwFile)
	if err := pgOwn(pwFile, false); err != nil {
		return err
	}
	if _, err := pgRun(3*time.Minute, filepath.Join(bin, "initdb"),
		"-D", dataDir, "-U", "postgres", "--pwfile="+pwFile,
		"--auth-local=peer", "--auth-host=scram-sha-256",
		"-E", "UTF8", "--no-locale", "--no-instructions"); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := writeFileAtomic(cfg.path("pg-superuser.pw"), []byte(pw+"\n"), 0o600); err != nil {
		return err
	}
	// A new cluster has no dev project: forget credentials of an old one.
	_ = os.Remove(cfg.path("credentials.json"))
	_ = os.Remove(cfg.path("seed-project-id"))
	return nil
}

// pgWriteSettings writes o2i-devstack.conf and includes it from
// postgresql.conf. It reports whether the settings changed.
func pgWriteSettings(cfg *config, dataDir string) (bool, error) {
	confPath := filepath.Join(dataDir, "postgresql.conf")
	conf, err := os.ReadFile(confPath)
	if err != nil {
		return false, err
	}
	if !strings.Contains(string(conf), pgIncludeLine) {
		f, err := os.OpenFile(confPath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return false, err
		}
		_, err = fmt.Fprintf(f, "\n%s\n", pgIncludeLine)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, err
		}
	}
	path := filepath.Join(dataDir, "o2i-devstack.conf")
	want := pgSettings(cfg)
	if have, err := os.ReadFile(path); err == nil && string(have) == want {
		return false, nil
	}
	if err := os.WriteFile(path, []byte(want), 0o600); err != nil {
		return false, err
	}
	return true, pgOwn(path, false)
}

func pgURL(user, pass, db string, port int) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(user, pass),
		Host:     "127.0.0.1:" + strconv.Itoa(port),
		Path:     "/" + db,
		RawQuery: "sslmode=disable&connect_timeout=5",
	}
	return u.String()
}

// pgEnsureDB makes sure role and database of the service exist, using the
// bootstrap superuser only when the service's own login does not work yet.
func pgEnsureDB(cfg *config, fresh bool, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	appURL := pgURL(cfg.pgUser, cfg.pgPass, cfg.pgDB, cfg.pgPort)
	if !fresh && pgPing(ctx, appURL) == nil {
		return nil
	}
	pwb, err := os.ReadFile(cfg.path("pg-superuser.pw"))
	if err != nil {
		return fmt.Errorf("role %s cannot log in and the superuser password (.dev/pg-superuser.pw) is missing; run make clean", cfg.pgUser)
	}
	superURL := pgURL("postgres", strings.TrimSpace(string(pwb)), "postgres", cfg.pgPort)
	var conn *pgx.Conn
	err = waitFor("a superuser connection", limit, nil, func() error {
		var err error
		conn, err = pgx.Connect(ctx, superURL)
		return err
	})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	ident := pgx.Identifier{cfg.pgUser}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", cfg.pgUser).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		// The password is a fixed dev value; quote it as a literal.
		q := fmt.Sprintf("CREATE ROLE %s LOGIN CREATEDB PASSWORD '%s'", ident, strings.ReplaceAll(cfg.pgPass, "'", "''"))
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("create role %s: %w", cfg.pgUser, err)
		}
	} else {
		q := fmt.Sprintf("ALTER ROLE %s LOGIN PASSWORD '%s'", ident, strings.ReplaceAll(cfg.pgPass, "'", "''"))
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("alter role %s: %w", cfg.pgUser, err)
		}
	}
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", cfg.pgDB).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		q := fmt.Sprintf("CREATE DATABASE %s OWNER %s", pgx.Identifier{cfg.pgDB}.Sanitize(), ident)
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("create database %s: %w", cfg.pgDB, err)
		}
		logf("postgres: created role %s and database %s", cfg.pgUser, cfg.pgDB)
	}
	return pgPing(ctx, appURL)
}

// pgBenchStatsSetup creates pg_stat_statements and pg_walinspect in the
// service's database and lets the service's role read every statement's
// text, reset the counters and read the WAL's records. Creating the
// extensions needs the superuser, which production databases may not
// grant, so it is done here and not in a migration.
func pgBenchStatsSetup(role string) []string {
	ident := pgx.Identifier{role}.Sanitize()
	return []string{
		"CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
		"GRANT pg_read_all_stats TO " + ident,
		"GRANT EXECUTE ON FUNCTION pg_stat_statements_reset TO " + ident,
		// The WAL's records (the bench's WAL per relation): only this
		// function, not the role that reads any server file.
		"CREATE EXTENSION IF NOT EXISTS pg_walinspect",
		"GRANT EXECUTE ON FUNCTION pg_get_wal_records_info(pg_lsn, pg_lsn) TO " + ident,
	}
}

// pgEnsureBenchStats runs pgBenchStatsSetup as the superuser. The bench
// reads the statistics when they are there; a failure is logged, not fatal
// (a cluster started before the library was preloaded, or no superuser
// password).
func pgEnsureBenchStats(cfg *config, limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	pwb, err := os.ReadFile(cfg.path("pg-superuser.pw"))
	if err != nil {
		logf("postgres: the bench's statistics not set up: the superuser password (.dev/pg-superuser.pw) is missing")
		return
	}
	conn, err := pgx.Connect(ctx, pgURL("postgres", strings.TrimSpace(string(pwb)), cfg.pgDB, cfg.pgPort))
	if err != nil {
		logf("postgres: the bench's statistics not set up: %v", err)
		return
	}
	defer conn.Close(context.Background())
	var preloaded string
	if err := conn.QueryRow(ctx, "SHOW shared_preload_libraries").Scan(&preloaded); err != nil || !strings.Contains(preloaded, "pg_stat_statements") {
		logf("postgres: pg_stat_statements is not preloaded; restart to collect statement statistics (make down && make stack)")
	}
	for _, q := range pgBenchStatsSetup(cfg.pgUser) {
		if _, err := conn.Exec(ctx, q); err != nil {
			logf("postgres: the bench's statistics not set up: %s: %v", q, err)
			return
		}
	}
}

func pgPing(ctx context.Context, connURL string) error {
	conn, err := pgx.Connect(ctx, connURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

func stopPostgres(cfg *config) error {
	dataDir := cfg.path("pg")
	if target, err := os.Readlink(dataDir); err == nil {
		dataDir = target
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		return nil
	}
	bin, err := pgBinFor(dataDir)
	if err != nil {
		return err
	}
	if !pgStatus(bin, dataDir) {
		return nil
	}
	if _, err := pgRun(2*time.Minute, filepath.Join(bin, "pg_ctl"), "stop", "-m", "fast", "-w", "-s", "-t", "60", "-D", dataDir); err != nil {
		return err
	}
	logf("postgres: stopped")
	return nil
}

// crashPostgres stops the cluster with an immediate shutdown: every backend
// quits at once without a checkpoint, as after a crash, and the next start
// runs crash recovery.
func crashPostgres(cfg *config) error {
	dataDir := cfg.path("pg")
	if target, err := os.Readlink(dataDir); err == nil {
		dataDir = target
	}
	bin, err := pgBinFor(dataDir)
	if err != nil {
		return err
	}
	if !pgStatus(bin, dataDir) {
		return fmt.Errorf("postgres is not running")
	}
	if _, err := pgRun(time.Minute, filepath.Join(bin, "pg_ctl"), "stop", "-m", "immediate", "-w", "-s", "-t", "30", "-D", dataDir); err != nil {
		return err
	}
	logf("postgres: crashed (immediate shutdown)")
	return nil
}

func statePostgres(cfg *config) string {
	dataDir := cfg.path("pg")
	if target, err := os.Readlink(dataDir); err == nil {
		dataDir = target
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		return "not initialised"
	}
	bin, err := pgBinFor(dataDir)
	if err != nil {
		return err.Error()
	}
	if !pgStatus(bin, dataDir) {
		return "stopped"
	}
	pid, _ := readPid(filepath.Join(dataDir, "postmaster.pid"))
	return fmt.Sprintf("running  pid %d  127.0.0.1:%d  data %s", pid, cfg.pgPort, cfg.rel(dataDir))
}
