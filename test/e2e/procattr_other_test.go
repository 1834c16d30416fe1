//go:build !linux

package e2e

import "syscall"

// childProcAttr has nothing to add outside Linux; cleanups stop the children.
func childProcAttr() *syscall.SysProcAttr { return nil }
