package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readPid returns the pid stored in a pid file.
func readPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// pidAlive reports whether pid runs and its command line contains want,
// which guards against a recycled pid.
func pidAlive(pid int, want string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A zombie has already exited.
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			return false
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return want == "" || bytes.Contains(cmdline, []byte(want))
}

// runningPid returns the pid from pidPath when that process is alive.
func runningPid(pidPath, want string) (int, bool) {
	pid, ok := readPid(pidPath)
	if !ok || !pidAlive(pid, want) {
		return 0, false
	}
	return pid, true
}

// startDetached starts a long-running process in its own session (so it
// survives the caller and ignores the terminal's signals), with stdin from
// /dev/null and stdout/stderr appended to logPath. The pid goes to pidPath.
func startDetached(bin string, args, env []string, logPath, pidPath string) (*os.Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "---- %s: %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	// Reap the child if it dies while we still run, so pidAlive sees it gone.
	go func() { _ = cmd.Wait() }()
	return cmd.Process, nil
}

// stopPid sends SIGTERM to the process in pidPath, waits, then SIGKILLs.
func stopPid(name, pidPath, want string, grace time.Duration) error {
	pid, ok := runningPid(pidPath, want)
	if !ok {
		_ = os.Remove(pidPath)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !pidAlive(pid, want) {
			_ = os.Remove(pidPath)
			logf("%s: stopped (pid %d)", name, pid)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(200 * time.Millisecond)
	_ = os.Remove(pidPath)
	logf("%s: killed (pid %d) after %s", name, pid, grace)
	return nil
}

// killPid SIGKILLs the process in pidPath and waits until it is gone; the
// pid file stays, as after a crash.
func killPid(name, pidPath, want string) error {
	pid, ok := runningPid(pidPath, want)
	if !ok {
		return fmt.Errorf("%s is not running", name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !pidAlive(pid, want) {
			logf("%s: killed (pid %d)", name, pid)
			return nil
		}
	}
	return fmt.Errorf("%s (pid %d) still alive 10s after SIGKILL", name, pid)
}

// portOpen reports whether something accepts TCP connections on 127.0.0.1:port.
func portOpen(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 500*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// waitFor polls check until it succeeds, alive reports false, or the time
// limit passes. The error names what was awaited and the last failure.
func waitFor(what string, limit time.Duration, alive func() bool, check func() error) error {
	deadline := time.Now().Add(limit)
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if alive != nil && !alive() {
			// Look once more before giving up: a process can look gone for
			// a moment while it starts (seen with MinIO on an existing data
			// directory) and still come up.
			time.Sleep(time.Second)
			if last = check(); last == nil {
				return nil
			}
			if !alive() {
				return fmt.Errorf("process exited while waiting for %s: %v", what, last)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %v", limit, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// limitFor caps a component's own time limit by the overall deadline.
func limitFor(own time.Duration, deadline time.Time) time.Duration {
	if rest := time.Until(deadline); rest < own {
		if rest < time.Second {
			return time.Second
		}
		return rest
	}
	return own
}

// tail returns the last n lines of a log file, indented, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

// withLog appends the tail of a log file to an error.
func withLog(err error, path string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w (log: %s)%s", err, path, tail(path, 15))
}

// runQuiet runs a short command with a time limit, returning its combined
// output in the error when it fails.
func runQuiet(limit time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return out, fmt.Errorf("%s timed out after %s", name, limit)
	}
	if err != nil {
		return out, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

func isRoot() bool { return os.Geteuid() == 0 }

// findInitdb returns the bin directory of the newest installed PostgreSQL.
func findPGBin() (string, bool) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return "", false
	}
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[j]))))
		return vi < vj
	})
	return filepath.Dir(matches[len(matches)-1]), true
}

func findRedisServer() (string, bool) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, true
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server"} {
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

// ensureOSPackages installs PostgreSQL and Redis from the OS packages when
// they are missing (root only).
func ensureOSPackages(logPath string) error {
	var missing []string
	if _, ok := findPGBin(); !ok {
		missing = append(missing, "postgresql")
	}
	if _, ok := findRedisServer(); !ok {
		missing = append(missing, "redis-server")
	}
	if len(missing) == 0 {
		return nil
	}
	if !isRoot() {
		return fmt.Errorf("packages missing: %s; install them (apt-get install %s) or run as root", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	logf("installing %s with apt-get (log: %s)", strings.Join(missing, " "), logPath)
	if err := aptGet(logPath, 5*time.Minute, "update"); err != nil {
		return withLog(fmt.Errorf("apt-get update: %w", err), logPath)
	}
	args := append([]string{"install", "-y", "--no-install-recommends"}, missing...)
	if err := aptGet(logPath, 10*time.Minute, args...); err != nil {
		return withLog(fmt.Errorf("apt-get install %s: %w", strings.Join(missing, " "), err), logPath)
	}
	if _, ok := findPGBin(); !ok {
		return errors.New("postgresql installed but /usr/lib/postgresql/*/bin/initdb not found")
	}
	if _, ok := findRedisServer(); !ok {
		return errors.New("redis-server installed but not found on PATH")
	}
	return nil
}

// aptGet runs apt-get with its output in a log file (not the caller's
// stdout: package scripts may start daemons that would keep a pipe open).
func aptGet(logPath string, limit time.Duration, args ...string) error {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-q"}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("timed out after %s", limit)
		}
		return err
	}
	return nil
}

// serveForeground runs a server of the stack in the foreground on
// 127.0.0.1:port until SIGTERM, SIGINT or SIGHUP (`devstack up` starts it in
// the background): it writes its pid to pidFile (when set, removed on exit),
// serves on the listener, and closes the server on a signal.
func serveForeground(name string, port int, pidFile, what string, serve func(net.Listener) error, close func() error) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	if pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			ln.Close()
			return err
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	errc := make(chan error, 1)
	go func() { errc <- serve(ln) }()
	fmt.Fprintf(os.Stderr, "%s: listening on %s, %s\n", name, ln.Addr(), what)
	select {
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "%s: %s, shutting down\n", name, s)
	case err = <-errc:
	}
	_ = close()
	if pidFile != "" {
		if pid, ok := readPid(pidFile); ok && pid == os.Getpid() {
			_ = os.Remove(pidFile)
		}
	}
	return err
}
