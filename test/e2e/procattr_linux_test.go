package e2e

import "syscall"

// childProcAttr makes the kernel kill a child when the test binary dies (a `go test` timeout
// panics without running cleanups), so no server outlives its test run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
