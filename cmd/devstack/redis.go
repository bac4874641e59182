package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// redisConf renders the configuration of the dev Redis: loopback only,
// daemonized, no persistence, everything below dir.
func redisConf(port int, dir string) string {
	q := strconv.Quote
	return strings.Join([]string{
		"# Written by devstack on every start.",
		"bind 127.0.0.1",
		"protected-mode yes",
		"port " + strconv.Itoa(port),
		"daemonize yes",
		"dir " + q(dir),
		"pidfile " + q(dir+"/redis.pid"),
		"logfile " + q(dir+"/redis.log"),
		"loglevel notice",
		`save ""`,
		"appendonly no",
		"databases 16",
	}, "\n") + "\n"
}

func redisPing(port int) error {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func ensureRedis(cfg *config, deadline time.Time) error {
	start := time.Now()
	dir := cfg.path("redis")
	pidPath := cfg.path("redis", "redis.pid")
	if _, ok := runningPid(pidPath, "redis-server"); ok {
		if err := redisPing(cfg.redisPort); err != nil {
			return fmt.Errorf("running (pid file %s) but not answering on 127.0.0.1:%d: %v", cfg.rel(pidPath), cfg.redisPort, err)
		}
		logf("redis: already running on 127.0.0.1:%d", cfg.redisPort)
		return nil
	}
	if portOpen(cfg.redisPort) {
		return fmt.Errorf("port %d is in use by another process (no live pid in %s)", cfg.redisPort, cfg.rel(pidPath))
	}
	bin, ok := findRedisServer()
	if !ok {
		return errors.New("redis-server not found; apt-get install redis-server")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = os.Remove(pidPath)
	confPath := cfg.path("redis", "redis.conf")
	if err := os.WriteFile(confPath, []byte(redisConf(cfg.redisPort, dir)), 0o644); err != nil {
		return err
	}
	logPath := cfg.path("redis", "redis.log")
	// Redis daemonizes itself; errors before that are in runQuiet's error.
	if _, err := runQuiet(30*time.Second, bin, confPath); err != nil {
		return withLog(fmt.Errorf("redis-server failed: %w", err), cfg.rel(logPath))
	}
	alive := func() bool {
		pid, ok := readPid(pidPath)
		return !ok || pidAlive(pid, "redis-server") // no pid file yet: still starting
	}
	if err := waitFor(fmt.Sprintf("PONG on 127.0.0.1:%d", cfg.redisPort), limitFor(30*time.Second, deadline), alive, func() error {
		return redisPing(cfg.redisPort)
	}); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	pid, _ := readPid(pidPath)
	logf("redis: started on 127.0.0.1:%d in %s (pid %d)", cfg.redisPort, time.Since(start).Round(100*time.Millisecond), pid)
	return nil
}

func stopRedis(cfg *config) error {
	return stopPid("redis", cfg.path("redis", "redis.pid"), "redis-server", 15*time.Second)
}

func stateRedis(cfg *config) string {
	pid, ok := runningPid(cfg.path("redis", "redis.pid"), "redis-server")
	if !ok {
		return "stopped"
	}
	return fmt.Sprintf("running  pid %d  127.0.0.1:%d", pid, cfg.redisPort)
}
