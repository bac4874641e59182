package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// runKafka hosts the Kafka-protocol broker in the foreground until SIGTERM
// or SIGINT. `devstack up` starts it in the background.
func runKafka(args []string) error {
	fs := flag.NewFlagSet("kafka", flag.ContinueOnError)
	port := fs.Int("port", 29092, "listen port (127.0.0.1)")
	dir := fs.String("dir", ".dev/kafka", "data directory")
	partitions := fs.Int("partitions", 6, "partitions of seeded and auto-created topics")
	topics := fs.String("topics", "o2i.orders,o2i.invoices,o2i.payments", "comma-separated topics to seed")
	pidFile := fs.String("pidfile", "", "write the pid here (removed on exit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	seed := splitList(*topics)
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.ClusterID("o2i-dev"),
		kfake.SeedTopics(int32(*partitions), seed...),
		kfake.DefaultNumPartitions(*partitions),
		kfake.AllowAutoTopicCreation(),
		kfake.GroupMinSessionTimeout(time.Second),
		kfake.DataDir(*dir),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, kfake.LogLevelWarn)),
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil && strings.Contains(err.Error(), "persisted") {
		// Unreadable state (e.g. after a hard kill): keep it aside, start empty.
		aside := fmt.Sprintf("%s.broken-%s", *dir, time.Now().Format("20060102-150405"))
		fmt.Fprintf(os.Stderr, "kafka: %v; moving %s to %s and starting empty\n", err, *dir, aside)
		if rerr := os.Rename(*dir, aside); rerr != nil {
			return fmt.Errorf("%w (and moving it aside failed: %v)", err, rerr)
		}
		cluster, err = kfake.NewCluster(opts...)
	}
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(*port))
	if err := ensureTopics(addr, seed, *partitions); err != nil {
		cluster.Close()
		return err
	}
	if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			cluster.Close()
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "kafka: broker listening on %s (data %s, topics %s)\n", strings.Join(cluster.ListenAddrs(), ","), *dir, strings.Join(seed, ","))
	s := <-sigs
	fmt.Fprintf(os.Stderr, "kafka: %s, shutting down\n", s)
	cluster.Close()
	if *pidFile != "" {
		if pid, ok := readPid(*pidFile); ok && pid == os.Getpid() {
			_ = os.Remove(*pidFile)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// kafkaPartitions asks the broker for the partitions of topics with a
// metadata request and returns the count per topic.
func kafkaPartitions(addr string, topics []string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	counts := make(map[string]int)
	for _, t := range topics {
		ps, err := conn.ReadPartitions(t)
		if err != nil {
			if errors.Is(err, kafka.UnknownTopicOrPartition) {
				continue
			}
			return nil, fmt.Errorf("metadata for %s: %w", t, err)
		}
		counts[t] = len(ps)
	}
	return counts, nil
}

// ensureTopics creates seed topics that a reloaded data directory lacks.
func ensureTopics(addr string, topics []string, partitions int) error {
	counts, err := kafkaPartitions(addr, topics)
	if err != nil {
		return err
	}
	var missing []kafka.TopicConfig
	for _, t := range topics {
		if counts[t] == 0 {
			missing = append(missing, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: 1})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	conn, err := kafka.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := conn.CreateTopics(missing...); err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("create topics: %w", err)
	}
	return nil
}

func kafkaAddr(cfg *config) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.kafkaPort))
}

// kafkaReady checks that every seed topic answers a metadata request.
func kafkaReady(cfg *config) error {
	counts, err := kafkaPartitions(kafkaAddr(cfg), cfg.kafkaTopics)
	if err != nil {
		return err
	}
	for _, t := range cfg.kafkaTopics {
		if counts[t] == 0 {
			return fmt.Errorf("topic %s missing", t)
		}
	}
	return nil
}

func warnPartitions(cfg *config) {
	counts, err := kafkaPartitions(kafkaAddr(cfg), cfg.kafkaTopics)
	if err != nil {
		return
	}
	for _, t := range cfg.kafkaTopics {
		if n := counts[t]; n != cfg.kafkaPartitions {
			logf("kafka: warning: topic %s has %d partitions, want %d (make clean resets it)", t, n, cfg.kafkaPartitions)
		}
	}
}

func ensureKafka(cfg *config, deadline time.Time) error {
	start := time.Now()
	pidPath := cfg.path("kafka.pid")
	logPath := cfg.path("kafka.log")
	if _, ok := runningPid(pidPath, "kafka"); ok {
		if err := kafkaReady(cfg); err != nil {
			return fmt.Errorf("running (pid file %s) but metadata on %s fails: %v", cfg.rel(pidPath), kafkaAddr(cfg), err)
		}
		warnPartitions(cfg)
		logf("kafka: already running on %s", kafkaAddr(cfg))
		return nil
	}
	if portOpen(cfg.kafkaPort) {
		return fmt.Errorf("port %d is in use by another process (no live pid in %s)", cfg.kafkaPort, cfg.rel(pidPath))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{
		"kafka",
		"-port", strconv.Itoa(cfg.kafkaPort),
		"-dir", cfg.path("kafka"),
		"-partitions", strconv.Itoa(cfg.kafkaPartitions),
		"-topics", strings.Join(cfg.kafkaTopics, ","),
		"-pidfile", pidPath,
	}
	proc, err := startDetached(self, args, os.Environ(), logPath, pidPath)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	alive := func() bool { return pidAlive(proc.Pid, "kafka") }
	err = waitFor("a metadata response on "+kafkaAddr(cfg), limitFor(60*time.Second, deadline), alive, func() error {
		return kafkaReady(cfg)
	})
	if err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	warnPartitions(cfg)
	logf("kafka: started on %s in %s (pid %d, topics %s)", kafkaAddr(cfg), time.Since(start).Round(100*time.Millisecond), proc.Pid, strings.Join(cfg.kafkaTopics, ","))
	return nil
}

func stopKafka(cfg *config) error {
	return stopPid("kafka", cfg.path("kafka.pid"), "kafka", 20*time.Second)
}

func stateKafka(cfg *config) string {
	pid, ok := runningPid(cfg.path("kafka.pid"), "kafka")
	if !ok {
		return "stopped"
	}
	return fmt.Sprintf("running  pid %d  %s", pid, kafkaAddr(cfg))
}
