package simrun

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExitIsReportedAtOnce(t *testing.T) {
	c, err := Start("crasher", "/bin/sh", []string{"-c", "for i in $(seq 1 100); do echo line $i; done; echo 'panic: boom'; exit 3"},
		nil, filepath.Join(t.TempDir(), "crasher.log"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c.CancelOnExit(ctx, cancel)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the child's exit did not end the context")
	}
	exit := ExitCause(ctx)
	if exit == nil {
		t.Fatalf("cause %v, want an *ExitError", context.Cause(ctx))
	}
	if exit.Status != "exit status 3" {
		t.Errorf("status %q, want exit status 3", exit.Status)
	}
	lines := strings.Split(exit.LogTail, "\n")
	if len(lines) != logTailLines || lines[len(lines)-1] != "panic: boom" || lines[0] != "line 62" {
		t.Errorf("log tail is %d lines from %q to %q, want %d from line 62 to the panic", len(lines), lines[0], lines[len(lines)-1], logTailLines)
	}
}

func TestStopIsNotAnExit(t *testing.T) {
	c, err := Start("sleeper", "/bin/sh", []string{"-c", "sleep 60"}, nil, filepath.Join(t.TempDir(), "sleeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	c.CancelOnExit(ctx, cancel)
	c.Stop(5 * time.Second)
	select {
	case <-c.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	time.Sleep(100 * time.Millisecond)
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("a stopped child ended the context with %v", err)
	}
	if ctx.Err() != nil {
		t.Error("a stopped child ended the context")
	}
}

// WaitForLog returns once the line is logged, even written in two parts, and fails when the
// child exits without logging it or the time is up.
func TestWaitForLog(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		wantExit     bool
		wantErr      bool
	}{
		{"logged in two writes", "echo starting; sleep 0.3; printf 'Instance cat'; sleep 0.3; echo 'alog loaded'; sleep 60", false, false},
		{"exits first", "echo starting; exit 1", true, true},
		{"never logged", "echo starting; sleep 60", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Start("child", "/bin/sh", []string{"-c", tc.script}, nil, filepath.Join(t.TempDir(), "child.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop(time.Second)
			err = c.WaitForLog(context.Background(), "Instance catalog loaded", 2*time.Second)
			var exit *ExitError
			if (err != nil) != tc.wantErr || errors.As(err, &exit) != tc.wantExit {
				t.Errorf("err %v; want an error %v, an exit %v", err, tc.wantErr, tc.wantExit)
			}
		})
	}
}
