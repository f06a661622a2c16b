package main

import (
	"encoding/json"
	"io"
	"math"
	"slices"
	"time"
)

// report is the one JSON object a run prints.
type report struct {
	Burst   string `json:"burst"`
	Settled bool   `json:"settled"`
	// Pending says what was still outstanding when the run gave up (settled false).
	Pending *pendingReport `json:"pending,omitempty"`

	// Pods are the burst's pods Running (a Job's also Succeeded) when settled, of ExpectedPods
	// (the manifests' replicas, parallelism); DaemonPods are its DaemonSets' pods, Running too.
	Pods         int `json:"pods"`
	ExpectedPods int `json:"expectedPods"`
	DaemonPods   int `json:"daemonPods"`

	// The fleet Tailor launched when settled: Nodes carrying tailor.dev/claim, and the summed
	// status.pricePerHour of the Registered claims. The plan is `plan` on the same manifests
	// with the same profile and catalog; the ratios are fleet ÷ plan.
	FleetPricePerHour     float64 `json:"fleetPricePerHour"`
	Nodes                 int     `json:"nodes"`
	PlanPricePerHour      float64 `json:"planPricePerHour"`
	PlanNodes             int     `json:"planNodes"`
	PlanLowerBoundPerHour float64 `json:"planLowerBoundPerHour"`
	PlanUnschedulable     int     `json:"planUnschedulable"`
	PriceRatio            float64 `json:"priceRatio"`
	NodesRatio            float64 `json:"nodesRatio"`

	// Evictions are the burst's pods (DaemonSet pods aside) deleted while Pending or Running
	// during the scale-up, before every pod of the burst was first done: the bench deletes none,
	// so each was evicted by a drain or lost with its node. Drains are the nodes that got the
	// tailor.dev/disrupting taint meanwhile, by the taint's value (the reason).
	Evictions    int            `json:"evictions"`
	Drains       int            `json:"drains"`
	DrainReasons map[string]int `json:"drainReasons,omitempty"`
	// AfterScaleUp counts the same from then until consolidation has had its first look at the
	// settled burst (consolidateAfter and two consolidation intervals of quiet): consolidation
	// moving pods off a fleet that has stopped growing, which is its job.
	AfterScaleUp afterScaleUp `json:"afterScaleUp"`

	// Latencies from a pod's creation as its watch event arrived: to the first claim listing
	// it seen Launched, and to the pod seen Running.
	PodToClaimLaunched latency `json:"podToClaimLaunchedSeconds"`
	PodToRunning       latency `json:"podToRunningSeconds"`
	// ClaimLaunchedToRegistered is the simulated boot: from a claim seen Launched to it seen
	// Registered (the simulator keeps an instance pending for --pending-for, by default not at
	// all; the node agent, polling every half second, runs nodeadm on its user data and
	// registers the node). A pod that waits for a new node waits this long of its podToRunning;
	// on EKS it is a minute or so.
	ClaimLaunchedToRegistered latency `json:"claimLaunchedToRegisteredSeconds"`

	// All Running is when the settled state began (before the quiet period that confirms it).
	LastPodCreatedAfterApplySeconds  float64 `json:"lastPodCreatedAfterApplySeconds"`
	AllRunningAfterLastCreateSeconds float64 `json:"allRunningAfterLastCreateSeconds"`
	AllRunningAfterApplySeconds      float64 `json:"allRunningAfterApplySeconds"`

	// ClaimsLaunched counts the claims seen Launched; CreateFleetCalls every CreateFleet request
	// the simulator answered (retries included), FleetsCreated the fleets it made of them.
	ClaimsLaunched   int `json:"claimsLaunched"`
	CreateFleetCalls int `json:"createFleetCalls"`
	FleetsCreated    int `json:"fleetsCreated"`

	// SchedulerPeakRSSMiB is Tailor's scheduler's VmHWM when the burst settled (or the run gave
	// up).
	SchedulerPeakRSSMiB float64 `json:"schedulerPeakRSSMiB"`

	FitExisting *fitReport `json:"fitExisting,omitempty"`
}

// pendingReport is what kept a run from settling.
type pendingReport struct {
	PodsByPhase     map[string]int `json:"podsByPhase"`
	PodsDeleting    int            `json:"podsDeleting,omitempty"`
	ClaimsByPhase   map[string]int `json:"claimsByPhase,omitempty"`
	DaemonSetsShort []string       `json:"daemonSetsShort,omitempty"`
	// Examples are a few pending pods with the scheduler's reason.
	Examples []string `json:"examples,omitempty"`
	// SchedulerExited is set when a scheduler process died during the run.
	SchedulerExited string `json:"schedulerExited,omitempty"`
}

// fitReport compares Tailor with the vanilla kube-scheduler on pods that fit existing nodes.
type fitReport struct {
	Pods  int `json:"pods"`
	Nodes int `json:"nodes"`
	// ClientQPS is both schedulers' API client limit (clientConnection.qps, burst twice that):
	// a scheduler binds no faster than it.
	ClientQPS float64      `json:"clientQPS"`
	Tailor    fitScheduler `json:"tailor"`
	Vanilla   fitScheduler `json:"vanilla"`
	// Ratios are Tailor ÷ vanilla.
	PodsPerSecondRatio float64 `json:"podsPerSecondRatio"`
	PeakRSSRatio       float64 `json:"peakRSSRatio"`
	// RunPeakRSSMiB is each scheduler's VmHWM once both phases are over: the same span of the
	// same cluster for both, with Tailor's consolidation after the burst in it (each phase's
	// PeakRSSMiB is read when that phase ends, Tailor's before the vanilla's phase).
	RunPeakRSSMiB   schedulerPair `json:"runPeakRSSMiB"`
	RunPeakRSSRatio float64       `json:"runPeakRSSRatio"`
	// RunPeakAnonMiB is each scheduler's highest RssAnon over the same span: the memory the
	// program holds, without its binary's mapped pages.
	RunPeakAnonMiB   schedulerPair `json:"runPeakAnonMiB"`
	RunPeakAnonRatio float64       `json:"runPeakAnonRatio"`
}

// schedulerPair is one figure for each scheduler.
type schedulerPair struct {
	Tailor  float64 `json:"tailor"`
	Vanilla float64 `json:"vanilla"`
}

type fitScheduler struct {
	// PodsPerSecond is the pods over the time from the first create call to the last pod seen
	// bound.
	PodsPerSecond float64 `json:"podsPerSecond"`
	Seconds       float64 `json:"seconds"`
	// PeakRSSMiB is the process's VmHWM at the end of its phase: its whole life's peak, both
	// processes having watched the same cluster from the start.
	PeakRSSMiB float64 `json:"peakRSSMiB"`
}

// afterScaleUp are the disruptions after every pod of the burst was done.
type afterScaleUp struct {
	Evictions    int            `json:"evictions"`
	Drains       int            `json:"drains"`
	DrainReasons map[string]int `json:"drainReasons,omitempty"`
}

// latency is the p50 and p99 of a set of durations, in seconds, and how many there were.
type latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Pods int     `json:"pods"`
}

func latencyOf(ds []time.Duration) latency {
	return latency{P50: seconds(percentile(ds, 50)), P99: seconds(percentile(ds, 99)), Pods: len(ds)}
}

// percentile is the nearest-rank p-th percentile of ds (0 for none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 { return round(d.Seconds(), 3) }

func round(v float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}

// ratio is a ÷ b to three places, 0 when b is.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round(a/b, 3)
}

// write prints r as one line of JSON.
func (r *report) write(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}
