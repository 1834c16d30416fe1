package e2e

import "syscall"

// childProcAttr makes the kernel kill a child when the test binary dies (a `go test` timeout
// panics without running cleanups), so no server outlives its test run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// scriptProcAttr puts a script into a process group of its own (dying with the test binary), so
// that killGroup stops what it left running in the background when a later command failed.
func scriptProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group of a script started with scriptProcAttr; an empty group is
// no error.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
