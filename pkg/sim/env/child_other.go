//go:build !linux

package env

import "os/exec"

// DieWithParent does nothing off Linux (see child_linux.go).
func DieWithParent(cmd *exec.Cmd) {}
