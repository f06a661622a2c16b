package main

import (
	"runtime/debug"
	"runtime/metrics"
)

// gcPercent is the heap growth Tailor's scheduler lets itself between collections (Go's default
// is 100). Beside kube-scheduler's cache it holds the instance templates and, during each
// consolidation pass, a model of every node and pod; at the default, a pass that overlaps a
// collection doubles into the peak. Collecting at 50 keeps the peak resident memory near
// kube-scheduler's (make bench-e2e reports both); the scheduler's CPU over a 5000-pod run did not
// move beyond run-to-run noise. GOGC, if set, wins; GOMEMLIMIT adds its soft limit on top.
const gcPercent = 50

// setGCPercent applies gcPercent unless the environment (getenv) sets GOGC, and returns the
// percent in force.
func setGCPercent(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}
