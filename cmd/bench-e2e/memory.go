package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// peakRSS follows a process's VmHWM, the kernel's own high-water mark of its resident memory.
// It is read every second so the peak survives the process's exit.
type peakRSS struct {
	pid     int
	mu      sync.Mutex
	peakKiB int64
}

// watchPeakRSS samples pid until ctx ends.
func watchPeakRSS(ctx context.Context, pid int) *peakRSS {
	p := &peakRSS{pid: pid}
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			p.sample()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *peakRSS) sample() {
	kib, err := vmHWM(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return // the process has gone: the last sample stands
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peakKiB = max(p.peakKiB, kib)
}

// MiB is the peak so far, read afresh, in MiB to one place.
func (p *peakRSS) MiB() float64 {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return round(float64(p.peakKiB)/1024, 1)
}

// vmHWM reads the VmHWM line of a /proc/<pid>/status file, in KiB.
func vmHWM(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no VmHWM", path)
}
