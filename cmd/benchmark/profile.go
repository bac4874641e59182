package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// benchDebugAddr is where the service under test serves Go's pprof
// profiles when -profile is given.
var benchDebugAddr = localAddr(18086)

// profiler takes a CPU and an allocation profile of the service under test
// while a measured load runs (-profile DIR): DIR/NAME.cpu.pprof and
// DIR/NAME.allocs.pprof, read with `go tool pprof`. The allocation profile
// is the delta over the same seconds.
type profiler struct {
	dir string
	wg  sync.WaitGroup
}

// during starts both profiles for d under name and returns a function that
// waits for them. Without -profile it does nothing.
func (p *profiler) during(ctx context.Context, name string, d time.Duration) func() {
	if p == nil || p.dir == "" {
		return func() {}
	}
	secs := max(int(d.Seconds())-1, 1)
	for _, kind := range []string{"profile", "allocs"} {
		file := filepath.Join(p.dir, name+map[string]string{"profile": ".cpu.pprof", "allocs": ".allocs.pprof"}[kind])
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", benchDebugAddr, kind, secs), file); err != nil {
				log.Printf("profile %s: %v", file, err)
				return
			}
			log.Printf("profile: %s", file)
		}()
	}
	return p.wg.Wait
}

func fetchProfile(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
