package main

import (
	"math"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name       string
		envSet     bool
		container  int64
		procs      int
		wantLimit  int64
		wantSource string
	}{
		{"GOMEMLIMIT set wins over a container", true, 900 * mib, 2, 0, "GOMEMLIMIT"},
		{"GOMEMLIMIT set wins outside a container", true, math.MaxInt64, 2, 0, "GOMEMLIMIT"},
		{"a container's limit stays as set from the cgroup", false, 900 * mib, 2, 0, "container"},
		{"outside a container: per core", false, math.MaxInt64, 2, 512 * mib, "default"},
		{"outside a container: more cores, more memory", false, math.MaxInt64, 16, 4096 * mib, "default"},
		{"outside a container: one core gets the floor", false, math.MaxInt64, 1, 256 * mib, "default"},
		{"the cgroup could not be read", false, 0, 4, 1024 * mib, "default"},
	} {
		t.Run(c.name, func(t *testing.T) {
			limit, source := memoryLimit(c.envSet, c.container, c.procs)
			if limit != c.wantLimit || source != c.wantSource {
				t.Errorf("memoryLimit(%v, %d, %d) = %d, %q; want %d, %q", c.envSet, c.container, c.procs, limit, source, c.wantLimit, c.wantSource)
			}
		})
	}
}
