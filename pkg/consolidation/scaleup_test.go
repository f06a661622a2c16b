package consolidation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

func TestScaleUp(t *testing.T) {
	now := time.Now()
	claim := func(phase v1alpha1.ClaimPhase, opts ...func(*v1alpha1.Claim)) *v1alpha1.Claim {
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{}}, Status: v1alpha1.ClaimStatus{Phase: phase}}
		for _, o := range opts {
			o(cl)
		}
		return cl
	}
	initialized := func(cl *v1alpha1.Claim) { cl.Status.InitializedAt = &metav1.Time{Time: now} }
	replacement := func(cl *v1alpha1.Claim) {
		cl.Spec.Replacement = &v1alpha1.Replacement{Nodes: []string{"old"}, Claims: 1}
	}
	deleting := func(cl *v1alpha1.Claim) { cl.DeletionTimestamp = &metav1.Time{Time: now} }
	pendingFor := func(d time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(now.Add(-d))}}
	}
	boundFor := func(d time.Duration) *corev1.Pod {
		p := pendingFor(d)
		p.Spec.NodeName = "n"
		return p
	}
	tests := []struct {
		name         string
		claims       []*v1alpha1.Claim
		pending      []*corev1.Pod
		owing        []rollout.Workload
		provisioning bool
		want         string
	}{
		{name: "settled", claims: []*v1alpha1.Claim{claim(v1alpha1.ClaimRegistered, initialized)}},
		{name: "a batch being planned", provisioning: true, want: "a batch of pending pods is being planned"},
		{name: "a claim not yet launched", claims: []*v1alpha1.Claim{claim("")}, want: "claim c is still starting (Pending)"},
		{name: "a claim launched", claims: []*v1alpha1.Claim{claim(v1alpha1.ClaimLaunched)}, want: "claim c is still starting (Launched)"},
		{name: "a node registered, not initialized", claims: []*v1alpha1.Claim{claim(v1alpha1.ClaimRegistered)},
			want: "claim c is still starting (node registered, not yet initialized)"},
		{name: "a replacement starting is its drain's to wait for", claims: []*v1alpha1.Claim{claim(v1alpha1.ClaimLaunched, replacement)}},
		{name: "a failed claim", claims: []*v1alpha1.Claim{claim(v1alpha1.ClaimFailed)}},
		{name: "a claim going", claims: []*v1alpha1.Claim{claim(v1alpha1.ClaimLaunched, deleting)}},
		{name: "pods just created", pending: []*corev1.Pod{pendingFor(5 * time.Second), pendingFor(time.Hour)},
			want: "1 pods created in the last 2m0s are pending"},
		{name: "a pod pending for long that no claim waits for", pending: []*corev1.Pod{pendingFor(time.Hour)}},
		{name: "pods bound, not yet running", pending: []*corev1.Pod{boundFor(5 * time.Second), boundFor(time.Second), boundFor(time.Hour)},
			want: "2 pods created in the last 2m0s are starting on their nodes"},
		{name: "pods pending and pods starting", pending: []*corev1.Pod{boundFor(5 * time.Second), pendingFor(5 * time.Second)},
			want: "1 pods created in the last 2m0s are pending"},
		{name: "a pod starting for long", pending: []*corev1.Pod{boundFor(time.Hour)}},
		{name: "workloads still creating pods", owing: []rollout.Workload{{Kind: "ReplicaSet", Namespace: "ns", Name: "web", Owed: 280}, {Kind: "Job", Namespace: "ns", Name: "fan", Owed: 3}},
			want: "ReplicaSet ns/web owes 280 pods (and 1 more workloads are creating pods)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scaleUp(tc.claims, tc.pending, tc.owing, tc.provisioning, now); got != tc.want {
				t.Errorf("scaleUp = %q, want %q", got, tc.want)
			}
		})
	}
}

// pending is an unbound copy of a pod: on its way to a node.
func pending(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	c.Spec.NodeName = ""
	c.Status.Phase = corev1.PodPending
	return c
}

// onNode pins the pod to node with a node selector.
func onNode(node string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node} }
}

// While the cluster scales up, only empty nodes no pending pod could use and interrupted nodes
// are decided about; at any time, the room pods on their way need (pending, or leaving a node
// being drained) is not free.
func TestDecideLeavesRoomForArrivingPods(t *testing.T) {
	w := newWorld(t)
	disrupted := func(_ *world, o *ownedNode) {
		o.node.Spec.Taints = append(o.node.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintDisrupting, Effect: corev1.TaintEffectNoSchedule})
	}
	tests := []struct {
		name     string
		scaleUp  string
		creating bool
		owned    []*ownedNode
		pods     []*corev1.Pod
		arriving func(s *snapshot) []*corev1.Pod
		want     string
	}{
		{name: "settled: a node whose pods fit elsewhere goes",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1")),
			want: "delete a (1 pods, 0 new)"},
		{name: "scaling up: no delete", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1"))},
		{name: "scaling up: no renewal", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge", drifted)), pods: pods(w.pod("p1", "a", "1"))},
		{name: "scaling up: an empty node no pending pod could use goes", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1")),
			arriving: func(*snapshot) []*corev1.Pod { return pods(pending(w.pod("q", "", "1", onNode("a")))) },
			want:     "empty b (0 pods, 0 new)"},
		{name: "scaling up: an empty node too small for every pending pod goes", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1")),
			arriving: func(*snapshot) []*corev1.Pod { return pods(pending(w.pod("q", "", "5"))) },
			want:     "empty b (0 pods, 0 new)"},
		// One controller's pods, each pinned to its node (as a DaemonSet's are): the one pinned
		// to b keeps b, though its sibling, asked first, fits only a.
		{name: "scaling up: an empty node one of a controller's pods is pinned to stays", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1")),
			arriving: func(*snapshot) []*corev1.Pod {
				return pods(pending(w.pod("d-a", "", "100m", ownedBy("DaemonSet"), onNode("a"))), pending(w.pod("d-b", "", "100m", ownedBy("DaemonSet"), onNode("b"))))
			}},
		// q would be placed on a, but the scheduler favours the emptiest node that fits.
		{name: "scaling up: an empty node a pending pod could use stays", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1")),
			arriving: func(*snapshot) []*corev1.Pod { return pods(pending(w.pod("q", "", "1"))) }},
		{name: "workloads creating pods: even an empty node stays", scaleUp: "ReplicaSet ns/web owes 3 pods", creating: true,
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1"))},
		{name: "workloads creating pods: an interrupted node is replaced all the same", scaleUp: "ReplicaSet ns/web owes 3 pods", creating: true,
			owned: nodes(w.node("a", "m6g.xlarge", annotated(v1alpha1.AnnotationInterrupted, InterruptionSpot))), pods: pods(w.pod("p1", "a", "1")),
			want: "interruption a (1 pods, 1 new)"},
		{name: "scaling up: an empty node a pending pod would use stays", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "3")),
			arriving: func(*snapshot) []*corev1.Pod { return pods(pending(w.pod("q", "", "2"))) }},
		{name: "scaling up: an interrupted node is replaced all the same", scaleUp: "claim x is still starting",
			owned: nodes(w.node("a", "m6g.xlarge", annotated(v1alpha1.AnnotationInterrupted, InterruptionSpot))), pods: pods(w.pod("p1", "a", "1")),
			want: "interruption a (1 pods, 1 new)"},
		// The pending pod lands on a: b's pod no longer fits there, and b is only replaced by a
		// smaller node.
		{name: "settled: a pending pod's room is not free",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), pods: pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1")),
			arriving: func(*snapshot) []*corev1.Pod { return pods(pending(w.pod("q", "", "2500m"))) },
			want:     "replace b (1 pods, 1 new)"},
		{name: "settled: the room of a drained node's pods is not free",
			owned: nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge"), w.node("d", "m6g.xlarge", disrupted)),
			pods:  pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1"), w.pod("r", "d", "2500m")),
			arriving: func(s *snapshot) []*corev1.Pod {
				s.excluded["d"] = true
				return leavingDrainedNodes(s.nodes, s.pods, nil, s.now)
			},
			want: "replace b (1 pods, 1 new)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := w.snapshot(5, tc.owned, tc.pods...)
			s.scaleUp, s.creating = tc.scaleUp, tc.creating
			if tc.arriving != nil {
				s.arriving = tc.arriving(s)
			}
			var candidates []*ownedNode
			for _, o := range s.owned {
				if !disrupting(o.node) {
					candidates = append(candidates, o)
				}
			}
			s.owned = candidates
			ds, kept := w.decide(s)
			checkDecisions(t, ds, kept, tc.want)
		})
	}
}

func TestLastScaleUp(t *testing.T) {
	now := time.Now()
	seen := now.Add(-time.Minute)
	claim := func(initializedAgo time.Duration, replaces string) *v1alpha1.Claim {
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if initializedAgo >= 0 {
			cl.Status.InitializedAt = &metav1.Time{Time: now.Add(-initializedAgo)}
		}
		if replaces != "" {
			cl.Spec.Replacement = &v1alpha1.Replacement{Nodes: strings.Split(replaces, ","), Claims: 1}
		}
		return cl
	}
	for _, tc := range []struct {
		name   string
		claims []*v1alpha1.Claim
		want   time.Time
	}{
		{name: "no claims", want: seen},
		{name: "initialized before the pass saw a scale-up", claims: []*v1alpha1.Claim{claim(time.Hour, "")}, want: seen},
		{name: "initialized since", claims: []*v1alpha1.Claim{claim(time.Hour, ""), claim(time.Second, "")}, want: now.Add(-time.Second)},
		{name: "not yet initialized", claims: []*v1alpha1.Claim{claim(-1, "")}, want: seen},
		{name: "a replacement initialized since", claims: []*v1alpha1.Claim{claim(time.Second, "old")}, want: seen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastScaleUp(tc.claims, seen); !got.Equal(tc.want) {
				t.Errorf("lastScaleUp = %v, want %v", got, tc.want)
			}
		})
	}
}

// A pod starting on its node is the profile's, bound, not yet running and not going.
func TestStartsOnNode(t *testing.T) {
	c := &Controller{SchedulerName: "tailor"}
	pod := func(opts ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{SchedulerName: "tailor", NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"bound and pending", pod(), true},
		{"running", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), false},
		{"unbound", pod(func(p *corev1.Pod) { p.Spec.NodeName = "" }), false},
		{"another scheduler's", pod(func(p *corev1.Pod) { p.Spec.SchedulerName = "default-scheduler" }), false},
		{"being deleted", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.startsOnNode(tt.pod); got != tt.want {
				t.Errorf("startsOnNode = %v, want %v", got, tt.want)
			}
		})
	}
}
