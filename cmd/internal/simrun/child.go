// Package simrun holds what the sandbox and the end-to-end bench both run on top of
// pkg/sim/env: scheduler binaries as child processes whose exit is noticed at once, and the
// sandbox's settings of the example profile.
package simrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tailor-eks/tailor/pkg/sim/env"
)

// Child is a scheduler process started by Start. Its exit is seen as it happens: Exited is
// closed then, so a caller that depends on the process stops at once instead of carrying on
// with nobody scheduling.
type Child struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string

	exited   chan struct{}
	waitErr  error
	stopping atomic.Bool
	logFile  *os.File
}

// Start runs path with args, its output in logPath and extra added to this process's
// environment. The child dies with this process.
func Start(name, path string, args []string, extra map[string]string, logPath string) (*Child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = os.Environ()
	for k, v := range extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	env.DieWithParent(cmd)
	// A process group of its own: a ^C at the terminal reaches only this process, which then
	// stops the child itself, so the child never seems to exit on its own.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	c := &Child{Name: name, Cmd: cmd, LogPath: logPath, exited: make(chan struct{}), logFile: logFile}
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.exited)
	}()
	return c, nil
}

// PID is the child's process ID.
func (c *Child) PID() int { return c.Cmd.Process.Pid }

// Exited is closed once the process has exited, for whatever reason.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// ExitError describes an exit nobody asked for: the status and the tail of the log.
type ExitError struct {
	Name, LogPath, Status, LogTail string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited unexpectedly (%s); last lines of %s:\n%s", e.Name, e.Status, e.LogPath, e.LogTail)
}

// logTailLines is how much of a dead scheduler's log its exit report shows: enough for a
// panic's message and the top of its stack.
const logTailLines = 40

// CancelOnExit cancels ctx's work with an *ExitError as its cause as soon as the child exits
// without Stop having been called; the caller reports it (see ExitCause).
func (c *Child) CancelOnExit(ctx context.Context, cancel context.CancelCauseFunc) {
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-c.exited:
		}
		if c.stopping.Load() || ctx.Err() != nil {
			return
		}
		cancel(&ExitError{Name: c.Name, LogPath: c.LogPath, Status: exitStatus(c.waitErr), LogTail: tail(c.LogPath, logTailLines)})
	}()
}

// WaitForLog waits until the child's log holds a line containing s: a message that says the
// child is ready for what comes next. It fails if the child exits first, or after timeout.
func (c *Child) WaitForLog(ctx context.Context, s string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var read int64
	var partial []byte
	// found reads what the log gained since the last look. A line split between two reads is
	// found whole: the search starts at the last line break before the new part.
	found := func() bool {
		f, err := os.Open(c.LogPath)
		if err != nil {
			return false
		}
		defer f.Close()
		if _, err := f.Seek(read, io.SeekStart); err != nil {
			return false
		}
		chunk, _ := io.ReadAll(f)
		read += int64(len(chunk))
		partial = append(partial, chunk...)
		if bytes.Contains(partial, []byte(s)) {
			return true
		}
		if i := bytes.LastIndexByte(partial, '\n'); i >= 0 {
			partial = partial[i+1:]
		}
		return false
	}
	for {
		if found() {
			return nil
		}
		select {
		case <-c.exited:
			if found() { // logged just before it exited
				return nil
			}
			return &ExitError{Name: c.Name, LogPath: c.LogPath, Status: exitStatus(c.waitErr), LogTail: tail(c.LogPath, logTailLines)}
		case <-ctx.Done():
			return fmt.Errorf("%s did not log %q within %s; see %s", c.Name, s, timeout, c.LogPath)
		case <-tick.C:
		}
	}
}

// Stop asks the process to end (SIGTERM), kills it after grace, and waits for it.
func (c *Child) Stop(grace time.Duration) {
	c.stopping.Store(true)
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(grace):
		_ = c.Cmd.Process.Kill()
		<-c.exited
	}
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.ProcessState.String()
	}
	return err.Error()
}

// tailBytes bounds what tail reads: a scheduler's log after a large burst runs to hundreds of
// megabytes.
const tailBytes = 64 << 10

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		_, _ = f.Seek(st.Size()-tailBytes, io.SeekStart)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ExitCause is the child's unexpected exit if that is what ended ctx (see CancelOnExit).
func ExitCause(ctx context.Context) *ExitError {
	var exit *ExitError
	if errors.As(context.Cause(ctx), &exit) {
		return exit
	}
	return nil
}
