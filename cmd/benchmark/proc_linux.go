package main

import (
	"os/exec"
	"syscall"
)

// stopWithParent has the kernel interrupt c when the benchmark dies, so
// that no service process outlives a killed run.
func stopWithParent(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
}
