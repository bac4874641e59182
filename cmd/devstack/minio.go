package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const minioModule = "github.com/minio/minio"

func minioHealth(port int) error {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/minio/health/live", port))
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/minio/health/live answered %s", resp.Status)
	}
	return nil
}

func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		return "/usr/local/go/bin/go", nil
	}
	return "", errors.New("the go command is needed to build MinIO and was not found")
}

// buildMinio installs the pinned MinIO server into .dev/bin (once).
func buildMinio(cfg *config, deadline time.Time) error {
	goBin, err := goTool()
	if err != nil {
		return err
	}
	binDir := cfg.path("bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	logPath := cfg.path("minio-build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	limit := limitFor(25*time.Minute, deadline)
	logf("minio: building %s@%s into %s (first run only, takes a few minutes; log: %s)", minioModule, cfg.minioVersion, cfg.rel(binDir), cfg.rel(logPath))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", minioModule+"@"+cfg.minioVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+binDir)
	cmd.Dir = cfg.root
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s", limit)
		}
		return withLog(fmt.Errorf("build failed: %w", err), cfg.rel(logPath))
	}
	logf("minio: built in %s", time.Since(start).Round(time.Second))
	return nil
}

func ensureMinio(cfg *config, deadline time.Time) error {
	pidPath := cfg.path("minio.pid")
	logPath := cfg.path("minio.log")
	if _, ok := runningPid(pidPath, "minio"); ok {
		if err := minioHealth(cfg.minioPort); err != nil {
			return fmt.Errorf("running (pid file %s) but not healthy on 127.0.0.1:%d: %v", cfg.rel(pidPath), cfg.minioPort, err)
		}
		if err := ensureBucket(cfg, limitFor(30*time.Second, deadline)); err != nil {
			return err
		}
		logf("minio: already running on 127.0.0.1:%d", cfg.minioPort)
		return nil
	}
	for _, port := range []int{cfg.minioPort, cfg.consolePort} {
		if portOpen(port) {
			return fmt.Errorf("port %d is in use by another process (no live pid in %s)", port, cfg.rel(pidPath))
		}
	}
	bin := cfg.path("bin", "minio")
	if _, err := os.Stat(bin); err != nil {
		if err := buildMinio(cfg, deadline); err != nil {
			return err
		}
	}
	start := time.Now()
	dataDir := cfg.path("minio")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(),
		"MINIO_ROOT_USER="+cfg.s3AccessKey,
		"MINIO_ROOT_PASSWORD="+cfg.s3SecretKey,
		"MINIO_UPDATE=off",
		"MINIO_BROWSER=on",
		// The scanner walks every object for usage figures, healing and
		// lifecycle rules; the archive has no lifecycle rules and one drive
		// has nothing to heal from, so it runs at its slowest pace (at the
		// default pace it took a tenth of a core with 28,000 objects idle).
		"MINIO_SCANNER_SPEED=slowest",
	)
	args := []string{
		"server",
		"--address", "127.0.0.1:" + strconv.Itoa(cfg.minioPort),
		"--console-address", "127.0.0.1:" + strconv.Itoa(cfg.consolePort),
		dataDir,
	}
	proc, err := startDetached(bin, args, env, logPath, pidPath)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	alive := func() bool { return pidAlive(proc.Pid, "minio") }
	if err := waitFor(fmt.Sprintf("/minio/health/live on 127.0.0.1:%d", cfg.minioPort), limitFor(90*time.Second, deadline), alive, func() error {
		return minioHealth(cfg.minioPort)
	}); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	if err := ensureBucket(cfg, limitFor(30*time.Second, deadline)); err != nil {
		return withLog(err, cfg.rel(logPath))
	}
	logf("minio: started on 127.0.0.1:%d (console 127.0.0.1:%d) in %s (pid %d)", cfg.minioPort, cfg.consolePort, time.Since(start).Round(100*time.Millisecond), proc.Pid)
	return nil
}

// ensureBucket creates the service's archive bucket (object lock) and its
// test-document bucket (versioned, no lock: a reset removes test documents)
// when missing.
func ensureBucket(cfg *config, limit time.Duration) error {
	client, err := minio.New("127.0.0.1:"+strconv.Itoa(cfg.minioPort), &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.s3AccessKey, cfg.s3SecretKey, ""),
		Secure: false,
	})
	if err != nil {
		return err
	}
	err = waitFor("bucket "+cfg.s3Bucket, limit, nil, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ok, err := client.BucketExists(ctx, cfg.s3Bucket)
		if err != nil || ok {
			return err
		}
		// The archive keeps documents write-once: object lock from the start.
		err = client.MakeBucket(ctx, cfg.s3Bucket, minio.MakeBucketOptions{ObjectLocking: true})
		if err == nil {
			logf("minio: created bucket %s with object lock", cfg.s3Bucket)
		}
		return err
	})
	if err != nil {
		return err
	}
	return waitFor("bucket "+cfg.s3TestBucket, limit, nil, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ok, err := client.BucketExists(ctx, cfg.s3TestBucket)
		if err != nil || ok {
			return err
		}
		// Test documents: versioned (reads by version id), without lock.
		if err = client.MakeBucket(ctx, cfg.s3TestBucket, minio.MakeBucketOptions{}); err != nil {
			return err
		}
		if err = client.EnableVersioning(ctx, cfg.s3TestBucket); err == nil {
			logf("minio: created bucket %s (versioned, no lock) for test documents", cfg.s3TestBucket)
		}
		return err
	})
}

func stopMinio(cfg *config) error {
	return stopPid("minio", cfg.path("minio.pid"), "minio", 20*time.Second)
}

func stateMinio(cfg *config) string {
	pid, ok := runningPid(cfg.path("minio.pid"), "minio")
	if !ok {
		if _, err := os.Stat(filepath.Join(cfg.dev, "bin", "minio")); err != nil {
			return "stopped (not built yet)"
		}
		return "stopped"
	}
	return fmt.Sprintf("running  pid %d  http://127.0.0.1:%d  console http://127.0.0.1:%d", pid, cfg.minioPort, cfg.consolePort)
}
