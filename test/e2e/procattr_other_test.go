//go:build !linux

package e2e

import "syscall"

// childProcAttr has nothing to add outside Linux; cleanups stop the children.
func childProcAttr() *syscall.SysProcAttr { return nil }

// scriptProcAttr has nothing to add outside Linux.
func scriptProcAttr() *syscall.SysProcAttr { return nil }

// killGroup has no group to kill outside Linux: the script's own cleanup stops its children.
func killGroup(int) error { return nil }
