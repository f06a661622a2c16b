package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Second}, {99, 99 * time.Second}, {100, 100 * time.Second}, {0, time.Second}, {1, time.Second}} {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("percentile(1..100 s, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
	if got := percentile([]time.Duration{3 * time.Second}, 99); got != 3*time.Second {
		t.Errorf("percentile of one = %v, want 3s", got)
	}
	if ds[0] != 100*time.Second {
		t.Errorf("percentile sorted its input in place")
	}
}

func TestLatencyOf(t *testing.T) {
	l := latencyOf([]time.Duration{1500 * time.Millisecond, 250 * time.Millisecond, 10 * time.Second})
	if l.P50 != 1.5 || l.P99 != 10 || l.Pods != 3 {
		t.Errorf("latencyOf = %+v, want p50 1.5, p99 10, 3 pods", l)
	}
}

func TestRatio(t *testing.T) {
	if got := ratio(36.02, 29.33); got != 1.228 {
		t.Errorf("ratio(36.02, 29.33) = %v, want 1.228", got)
	}
	if got := ratio(1, 0); got != 0 {
		t.Errorf("ratio(1, 0) = %v, want 0", got)
	}
}

// TestReportIsOneLine: make bench-e2e's output is one JSON object per line, so a run's report
// must not span lines.
func TestReportIsOneLine(t *testing.T) {
	r := &report{Burst: "b.yaml", Settled: true, Pods: 3, DrainReasons: map[string]int{"delete": 2},
		FitExisting: &fitReport{Pods: 10, Tailor: fitScheduler{PodsPerSecond: 100}}}
	var buf bytes.Buffer
	if err := r.write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("report is not one line: %q", out)
	}
	var back map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pods", "fleetPricePerHour", "nodes", "planPricePerHour", "planNodes", "priceRatio", "nodesRatio",
		"evictions", "drains", "podToClaimLaunchedSeconds", "podToRunningSeconds", "claimLaunchedToRegisteredSeconds", "allRunningAfterLastCreateSeconds",
		"createFleetCalls", "schedulerPeakRSSMiB", "fitExisting"} {
		if _, ok := back[k]; !ok {
			t.Errorf("report has no %q", k)
		}
	}
	if _, ok := back["pending"]; ok {
		t.Errorf("a settled report has pending")
	}
	fit, _ := back["fitExisting"].(map[string]any)
	for _, k := range []string{"podsPerSecondRatio", "peakRSSRatio", "runPeakRSSMiB", "runPeakRSSRatio"} {
		if _, ok := fit[k]; !ok {
			t.Errorf("fitExisting has no %q", k)
		}
	}
}

// The timeline lists the burst's pods by creation, DaemonSet pods aside, with "-" for what was
// never seen.
func TestWriteTimeline(t *testing.T) {
	applied := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return applied.Add(time.Duration(s * float64(time.Second))) }
	r := &recorder{
		created:  map[types.UID]time.Time{"a": at(2), "b": at(1), "d": at(0.5)},
		names:    map[types.UID]string{"a": "burst/web-a", "b": "burst/web-b", "d": "burst/agent-d"},
		launched: map[types.UID]time.Time{"b": at(1.25)},
		running:  map[types.UID]time.Time{"b": at(3.5), "d": at(1)},
		daemon:   map[types.UID]bool{"d": true},
	}
	var out bytes.Buffer
	if err := r.writeTimeline(&out, applied); err != nil {
		t.Fatal(err)
	}
	want := "pod\tcreated\tlaunched\trunning\nburst/web-b\t1\t1.25\t3.5\nburst/web-a\t2\t-\t-\n"
	if out.String() != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", out.String(), want)
	}
}
