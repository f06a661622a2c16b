package env

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process get SIGKILL when the process that starts it dies, so a
// test binary killed by its timeout (or a sandbox killed with ^C^C) leaves no kwok or scheduler
// behind holding ports, files or locks. Linux only: elsewhere it does nothing.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
