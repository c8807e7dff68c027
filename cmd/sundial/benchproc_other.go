//go:build !linux

package main

import "syscall"

// benchNodeAttr: only Linux can tie a child's end to its parent's; a bench
// killed elsewhere leaves its nodes running, to be stopped by hand.
func benchNodeAttr() *syscall.SysProcAttr { return nil }
