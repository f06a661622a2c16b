package consolidation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// decide tries the methods in order, and a pass ends with the first step that decides
// something: empty and interrupted nodes together, then drifted and expired ones, then one
// delete, merge or replacement. Each case is a hand-built cluster of the general pool.
func TestDecideOrder(t *testing.T) {
	w := newWorld(t)
	w.run(t, []decisionCase{
		{name: "empty nodes first, all the budget allows", budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge"), w.node("c", "m6g.xlarge", drifted)},
					[]*corev1.Pod{w.pod("ds", "a", "100m", ownedBy("DaemonSet")), w.pod("p", "c", "1")}
			},
			want: "empty a (0 pods, 0 new)", kept: []string{"b: budget is used up"}},
		{name: "a drifted empty node is drift, not empty", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge", drifted)}, nil
			},
			want: "drift a (0 pods, 0 new)"},
		// Today the interrupted node's pods may count on the room of an empty node that goes in
		// the same pass (hence no replacement here); the next pass plans them if it is so.
		{name: "empty and interrupted nodes in one pass, empty first", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge", annotated(v1alpha1.AnnotationInterrupted, InterruptionSpot)), w.node("b", "m6g.xlarge")},
					[]*corev1.Pod{w.pod("p", "a", "3")}
			},
			want: "empty b (0 pods, 0 new); interruption a (1 pods, 0 new)"},
		{name: "drift and expiry in node order, sharing the budget", pool: expiring, budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge", drifted), w.node("c", "m6g.2xlarge", createdAgo(10*time.Minute))},
					[]*corev1.Pod{w.pod("p1", "a", "1"), w.pod("p2", "b", "1"), w.pod("p3", "c", "1")}
			},
			want: "expired a (1 pods, 0 new)", kept: []string{"b: launch settings changed since it launched, but pool general's disruption budget is used up"}},
		{name: "a renewed node's pods do not count on the next one", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge", drifted), w.node("b", "m6g.xlarge", drifted)},
					[]*corev1.Pod{w.pod("p1", "a", "1"), w.pod("p2", "b", "1")}
			},
			want: "drift a (1 pods, 0 new); drift b (1 pods, 1 new)"},
		{name: "delete the most expensive node whose pods fit elsewhere", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge"), w.node("c", "m6g.xlarge")},
					[]*corev1.Pod{w.pod("p1", "a", "1"), w.pod("p2", "b", "1"), w.pod("p3", "c", "1")}
			},
			want: "delete b (1 pods, 0 new)"},
		{name: "a pool consolidated only when empty keeps busy nodes", pool: whenEmpty, budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge")},
					[]*corev1.Pod{w.pod("p1", "a", "1"), w.pod("p2", "b", "1")}
			}},
		{name: "merge the largest set that pays, none of which can go alone", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge"), w.node("c", "m6g.xlarge")},
					[]*corev1.Pod{w.pod("p1", "a", "2500m"), w.pod("p2", "b", "2500m"), w.pod("p3", "c", "2500m")}
			},
			want: "merge a+b+c (3 pods, 1 new)"},
		{name: "a merge the budget cannot take gives way to a replacement", budget: 2,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge"), w.node("c", "m6g.xlarge")},
					[]*corev1.Pod{w.pod("p1", "a", "2500m"), w.pod("p2", "b", "2500m"), w.pod("p3", "c", "2500m")}
			},
			want: "replace a (1 pods, 1 new)"},
		{name: "replace a node by a cheaper one", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.2xlarge")}, []*corev1.Pod{w.pod("p1", "a", "1")}
			},
			want: "replace a (1 pods, 1 new)"},
		{name: "no budget: nothing", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.2xlarge"), w.node("b", "m6g.xlarge")}, []*corev1.Pod{w.pod("p1", "a", "1")}
			},
			kept: []string{"b: budget is used up"}},
		{name: "what blocks is said only of nodes due for a look", pool: expiring, budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge", busy, createdAgo(10*time.Minute)), w.node("c", "m6g.xlarge", busy),
						w.node("d", "m6g.xlarge", annotated(v1alpha1.AnnotationDoNotDisrupt, "true"))},
					[]*corev1.Pod{w.pod("p1", "a", "1", ownedBy("")), w.pod("p2", "b", "1", ownedBy("")), w.pod("p3", "c", "1", ownedBy(""))}
			},
			kept: []string{"a: has no controller", "c: has no controller", "d: node is annotated"}},
		{name: "a rebalance recommendation never evicts a do-not-disrupt pod", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return []*ownedNode{w.node("a", "m6g.xlarge", rebalanceRecommended), w.node("b", "m6g.xlarge", rebalanceRecommended, annotated(v1alpha1.AnnotationDoNotDisrupt, "true"))},
					[]*corev1.Pod{w.pod("p1", "a", "1", annotatedPod(v1alpha1.AnnotationDoNotDisrupt, "true"))}
			},
			kept: []string{"a: pod ns/p1 is annotated tailor.dev/do-not-disrupt", "b: node is annotated"}},
	}, w.decide)
}
