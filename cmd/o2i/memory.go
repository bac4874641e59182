package main

import "math"

// The collector's soft limit (GOMEMLIMIT) of a process that runs outside a
// container and was given none: so much per core the runtime uses
// (GOMAXPROCS), and never less than the floor. Without a limit the heap
// may grow to 1 + GOGC/100 times what was live at the last collection, so
// the resident memory follows the highest live heap since the start.
// With one, the heap is collected before it passes the limit; a live heap
// above it only makes the collector run more often (the runtime caps its
// share at half the CPU), it never fails an allocation. 256 MiB per core:
// with 160, an API process whose near cache was full of status records
// collected about twice a second under the write load, and spent a third
// more CPU per order (docs/performance.md, round 8).
const (
	memoryPerCore  = 256 << 20
	memoryLimitMin = 256 << 20
)

// memoryLimit decides the soft limit of this process: GOMEMLIMIT when set
// (envSet: the runtime has read it, nothing to do), 90 % of the
// container's memory limit when there is one (container, as set from the
// cgroup; math.MaxInt64 for none), else the default for procs cores. It
// returns the limit to set (0: leave the runtime's) and where it comes from.
func memoryLimit(envSet bool, container int64, procs int) (limit int64, source string) {
	switch {
	case envSet:
		return 0, "GOMEMLIMIT"
	case container > 0 && container < math.MaxInt64:
		return 0, "container"
	}
	return max(int64(procs)*memoryPerCore, memoryLimitMin), "default"
}
