//go:build !linux

package tools

import "os/exec"

func setProcessAttributes(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
