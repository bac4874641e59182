//go:build !linux

package main

import "os/exec"

// stopWithParent does nothing here: only Linux stops a child with its parent.
func stopWithParent(*exec.Cmd) {}
