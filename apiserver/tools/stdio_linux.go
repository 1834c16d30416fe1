package tools

import (
	"os/exec"
	"syscall"
)

// setProcessAttributes puts the provider in a process group of its own, so that stopping it
// stops what it started, and has the kernel kill it when the platform dies (a SIGKILLed platform
// leaves no provider behind).
func setProcessAttributes(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
