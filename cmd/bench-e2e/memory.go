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

	"golang.org/x/sys/unix"
)

// peakRSS follows a process's VmHWM, the kernel's own high-water mark of its resident memory,
// and the highest RssAnon seen (the kernel keeps no mark for it): the memory the program itself
// holds, without its binary's pages, whose count depends on how the page cache holds the file
// (see evictPageCache). Both are read every second so the peaks survive the process's exit.
type peakRSS struct {
	pid         int
	mu          sync.Mutex
	peakKiB     int64
	peakAnonKiB int64
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
	st, err := readStatus(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return // the process has gone: the last sample stands
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peakKiB = max(p.peakKiB, st.hwm)
	p.peakAnonKiB = max(p.peakAnonKiB, st.anon)
}

// MiB is the peak so far, read afresh, in MiB to one place.
func (p *peakRSS) MiB() float64 {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return round(float64(p.peakKiB)/1024, 1)
}

// AnonMiB is the highest RssAnon sampled so far, read afresh, in MiB to one place.
func (p *peakRSS) AnonMiB() float64 {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	return round(float64(p.peakAnonKiB)/1024, 1)
}

// status is what peakRSS reads of /proc/<pid>/status, in KiB.
type status struct{ hwm, anon int64 }

// readStatus reads the VmHWM and RssAnon lines of a /proc/<pid>/status file; RssAnon is 0 where
// the kernel gives none.
func readStatus(path string) (status, error) {
	f, err := os.Open(path)
	if err != nil {
		return status{}, err
	}
	defer f.Close()
	var st status
	hwm := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var into *int64
		name, rest, ok := strings.Cut(line, ":")
		switch {
		case !ok:
			continue
		case name == "VmHWM":
			into, hwm = &st.hwm, true
		case name == "RssAnon":
			into = &st.anon
		default:
			continue
		}
		if *into, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err != nil {
			return status{}, fmt.Errorf("%s: %s: %w", path, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return status{}, err
	}
	if !hwm {
		return status{}, fmt.Errorf("%s has no VmHWM", path)
	}
	return st, nil
}

// evictPageCache drops what the page cache holds of each file, so that every scheduler's binary
// is read from disk by its own exec. How a file's pages sit in the cache decides how its mapping
// counts towards RSS: a binary just written (go build) or read ahead sits in large folios,
// mapped whole (FilePmdMapped), and counts tens of MiB more than one cached page by page. Left
// to chance, that difference between the two binaries swamped the one measured (24-31 MiB of
// Tailor's 317 in one 5000-pod run, none of the vanilla's).
func evictPageCache(paths ...string) error {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		// Dirty pages stay in the cache: write them first.
		err = f.Sync()
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("evicting %s from the page cache: %w", path, err)
		}
	}
	return nil
}
