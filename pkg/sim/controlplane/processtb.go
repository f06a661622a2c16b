package controlplane

import (
	"fmt"
	"os"
	"sync"

	"k8s.io/klog/v2"
)

// ProcessTB lets a program (the sandbox) start the API server's test harness outside `go test`:
// logs go to klog, cleanups run on Cleanup(), and a fatal error ends the process.
type ProcessTB struct {
	Dir string

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (p *ProcessTB) Cleanup(f func())          { p.mu.Lock(); p.cleanups = append(p.cleanups, f); p.mu.Unlock() }
func (p *ProcessTB) Error(args ...any)         { p.fail(); klog.ErrorDepth(1, args...) }
func (p *ProcessTB) Errorf(f string, a ...any) { p.fail(); klog.ErrorDepth(1, fmt.Sprintf(f, a...)) }
func (p *ProcessTB) Fail()                     { p.fail() }
func (p *ProcessTB) FailNow()                  { p.exit("FailNow") }
func (p *ProcessTB) Failed() bool              { p.mu.Lock(); defer p.mu.Unlock(); return p.failed }
func (p *ProcessTB) Fatal(args ...any)         { p.exit(fmt.Sprint(args...)) }
func (p *ProcessTB) Fatalf(f string, a ...any) { p.exit(fmt.Sprintf(f, a...)) }
func (p *ProcessTB) Helper()                   {}
func (p *ProcessTB) Log(args ...any)           { klog.V(2).InfoDepth(1, args...) }
func (p *ProcessTB) Logf(f string, a ...any)   { klog.V(2).InfoDepth(1, fmt.Sprintf(f, a...)) }
func (p *ProcessTB) Name() string              { return "sandbox" }
func (p *ProcessTB) Setenv(k, v string)        { _ = os.Setenv(k, v) }
func (p *ProcessTB) Skip(args ...any)          {}
func (p *ProcessTB) SkipNow()                  {}
func (p *ProcessTB) Skipf(string, ...any)      {}
func (p *ProcessTB) Skipped() bool             { return false }

// TempDir returns a fresh directory under Dir.
func (p *ProcessTB) TempDir() string {
	d, err := os.MkdirTemp(p.Dir, "tmp")
	if err != nil {
		p.exit(err.Error())
	}
	return d
}

// RunCleanups runs the registered cleanups, newest first.
func (p *ProcessTB) RunCleanups() {
	p.mu.Lock()
	cs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func (p *ProcessTB) fail() { p.mu.Lock(); p.failed = true; p.mu.Unlock() }

func (p *ProcessTB) exit(msg string) {
	klog.ErrorDepth(2, "fatal: "+msg)
	p.RunCleanups()
	klog.Flush()
	os.Exit(1)
}
