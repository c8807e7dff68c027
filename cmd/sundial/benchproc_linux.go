package main

import "syscall"

// benchNodeAttr makes a node the bench starts end with the bench: the
// kernel sends it SIGTERM when the bench dies without stopping it (killed,
// or a write to a closed pipe), so that no node goes on firing into a
// schema nobody reads.
func benchNodeAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
