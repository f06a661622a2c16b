package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// burstState is the burst as the recorder's caches hold it at one moment.
type burstState struct {
	// done are the pods no DaemonSet owns that are Running, and a Job's pods ever seen
	// Succeeded (deleted since or not); daemonRunning the DaemonSets' pods Running.
	done, daemonRunning int
	pending             int
	podsByPhase         map[string]int
	deleting            int
	// inFlight are the claims Pending or Launched (not yet Registered).
	inFlight        int
	claimsByPhase   map[string]int
	daemonSetsShort []string
	examples        []string
	// changes is the recorder's count of churn so far.
	changes int
}

// maxExamples bounds the pending pods a report names.
const maxExamples = 5

func (r *recorder) state() burstState {
	s := burstState{podsByPhase: map[string]int{}, claimsByPhase: map[string]int{}}
	r.mu.Lock()
	s.changes = r.changes
	// A Job's pod the list shows Succeeded before the handler saw it counts too, once.
	completed := maps.Clone(r.completed)
	s.done = len(completed)
	r.mu.Unlock()
	pods, _ := r.pods.Core().V1().Pods().Lister().Pods(r.namespace).List(labels.Everything())
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		s.podsByPhase[string(p.Status.Phase)]++
		daemon := ownerKind(p) == "DaemonSet"
		switch {
		case p.DeletionTimestamp != nil:
			s.deleting++
		case p.Status.Phase == corev1.PodRunning && daemon:
			s.daemonRunning++
		case p.Status.Phase == corev1.PodRunning,
			p.Status.Phase == corev1.PodSucceeded && ownerKind(p) == "Job" && !completed[p.UID]:
			s.done++
		case p.Status.Phase == corev1.PodPending:
			s.pending++
			if len(s.examples) < maxExamples {
				s.examples = append(s.examples, p.Name+": "+unscheduledReason(p))
			}
		}
	}
	for _, c := range r.claims.List() {
		phase := c.Status.Phase
		if phase == "" {
			phase = v1alpha1.ClaimPending
		}
		s.claimsByPhase[string(phase)]++
		if phase == v1alpha1.ClaimPending || phase == v1alpha1.ClaimLaunched {
			s.inFlight++
		}
	}
	dss, _ := r.pods.Apps().V1().DaemonSets().Lister().DaemonSets(r.namespace).List(labels.Everything())
	for _, ds := range dss {
		if ds.Status.ObservedGeneration < ds.Generation || ds.Status.NumberReady < ds.Status.DesiredNumberScheduled {
			s.daemonSetsShort = append(s.daemonSetsShort, fmt.Sprintf("%s: %d of %d ready", ds.Name, ds.Status.NumberReady, ds.Status.DesiredNumberScheduled))
		}
	}
	return s
}

func unscheduledReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return c.Message
		}
	}
	if p.Spec.NodeName != "" {
		return "bound to " + p.Spec.NodeName + ", not yet running"
	}
	return "not yet seen by a scheduler"
}

// settled: every pod the manifests ask for is done, none pending or going, every DaemonSet
// ready, and no claim still on its way.
func (s burstState) settled(expected int) bool {
	return s.done >= expected && s.pending == 0 && s.deleting == 0 && s.inFlight == 0 && len(s.daemonSetsShort) == 0
}

func (s burstState) pendingReport() *pendingReport {
	return &pendingReport{PodsByPhase: s.podsByPhase, PodsDeleting: s.deleting, ClaimsByPhase: s.claimsByPhase,
		DaemonSetsShort: s.daemonSetsShort, Examples: s.examples}
}

// waitSettled polls the burst until it has stayed settled, with no pod created or lost and no
// node drained, for quiet, and returns when that stretch began; false when ctx ends first (the timeout, or a scheduler's exit).
func (r *recorder) waitSettled(ctx context.Context, expected int, quiet time.Duration, progress func(burstState)) (time.Time, bool) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var since, lastProgress time.Time
	var sinceChanges int
	scaledUp := false
	for {
		now := time.Now()
		s := r.state()
		if now.Sub(lastProgress) >= 5*time.Second {
			progress(s)
			lastProgress = now
		}
		if !scaledUp && s.settled(expected) {
			scaledUp = true
			r.markScaledUp()
		}
		switch {
		case !s.settled(expected):
			since = time.Time{}
		case since.IsZero() || s.changes != sinceChanges:
			since, sinceChanges = now, s.changes
		case now.Sub(since) >= quiet:
			return since, true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-tick.C:
		}
	}
}

// fleet is what Tailor runs now: the Nodes carrying tailor.dev/claim, and the summed price of
// the Registered claims.
func (r *recorder) fleet() (nodes int, pricePerHour float64) {
	ns, _ := r.nodes.Core().V1().Nodes().Lister().List(labels.Everything())
	for _, n := range ns {
		if _, ok := n.Labels[v1alpha1.LabelClaim]; ok {
			nodes++
		}
	}
	for _, c := range r.claims.List() {
		if c.Status.Phase != v1alpha1.ClaimRegistered {
			continue
		}
		if p, err := strconv.ParseFloat(c.Status.PricePerHour, 64); err == nil {
			pricePerHour += p
		}
	}
	return nodes, round(pricePerHour, 4)
}

// writeTimeline writes one line per pod of the burst (DaemonSet pods aside), ordered by
// creation: its name and when it was seen created, on a launched claim and Running, in seconds
// after the apply ("-" if never). It says which pods make a latency's tail.
func (r *recorder) writeTimeline(w io.Writer, applied time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	uids := make([]types.UID, 0, len(r.created))
	for uid := range r.created {
		if !r.daemon[uid] {
			uids = append(uids, uid)
		}
	}
	slices.SortFunc(uids, func(a, b types.UID) int { return r.created[a].Compare(r.created[b]) })
	at := func(m map[types.UID]time.Time, uid types.UID) string {
		if t, ok := m[uid]; ok {
			return strconv.FormatFloat(seconds(t.Sub(applied)), 'f', -1, 64)
		}
		return "-"
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "pod\tcreated\tlaunched\trunning")
	for _, uid := range uids {
		fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", r.names[uid], at(r.created, uid), at(r.launched, uid), at(r.running, uid))
	}
	return bw.Flush()
}

// saveTimeline writes the timeline to path.
func (r *recorder) saveTimeline(path string, applied time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.writeTimeline(f, applied); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// timings fills the report's latencies and counts from what the recorder stamped. applied is
// when the burst's objects were created, allRunning when the settled state began (zero if
// never).
func (r *recorder) timings(rep *report, applied, allRunning time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var toLaunched, toRunning []time.Duration
	for uid, created := range r.created {
		if r.daemon[uid] {
			continue
		}
		if t, ok := r.launched[uid]; ok {
			toLaunched = append(toLaunched, max(t.Sub(created), 0))
		}
		if t, ok := r.running[uid]; ok {
			toRunning = append(toRunning, t.Sub(created))
		}
	}
	rep.PodToClaimLaunched, rep.PodToRunning = latencyOf(toLaunched), latencyOf(toRunning)
	var boots []time.Duration
	for name, launched := range r.claimLaunched {
		if registered, ok := r.claimRegistered[name]; ok {
			boots = append(boots, max(registered.Sub(launched), 0))
		}
	}
	rep.ClaimLaunchedToRegistered = latencyOf(boots)
	r.disruptionsLocked(rep)
	rep.ClaimsLaunched = len(r.claimsSeen)
	if !r.lastCreated.IsZero() {
		rep.LastPodCreatedAfterApplySeconds = seconds(r.lastCreated.Sub(applied))
	}
	if !allRunning.IsZero() {
		rep.AllRunningAfterApplySeconds = seconds(allRunning.Sub(applied))
		rep.AllRunningAfterLastCreateSeconds = seconds(max(allRunning.Sub(r.lastCreated), 0))
	}
}

// disruptions puts the pods evicted and nodes drained so far in rep, during and after the
// scale-up.
func (r *recorder) disruptions(rep *report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disruptionsLocked(rep)
}

// disruptionsLocked is disruptions for callers that hold r.mu.
func (r *recorder) disruptionsLocked(rep *report) {
	rep.Evictions, rep.Drains, rep.DrainReasons = len(r.duringScaleUp.evicted), len(r.duringScaleUp.drained), r.duringScaleUp.reasons()
	rep.AfterScaleUp = afterScaleUp{Evictions: len(r.afterScaleUp.evicted), Drains: len(r.afterScaleUp.drained), DrainReasons: r.afterScaleUp.reasons()}
}
