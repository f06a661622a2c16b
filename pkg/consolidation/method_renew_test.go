package consolidation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// imageReleased: a new image is behind the pool's alias since the node launched.
func imageReleased(_ *world, o *ownedNode) {
	o.claim.Annotations[v1alpha1.AnnotationImageDrift] = "ami-next"
}

// rebalanceRecommended: EC2 recommended rebalancing the node's spot instance, with
// rebalanceRecommendations: Replace.
var rebalanceRecommended = annotated(v1alpha1.AnnotationRebalanceRecommended, "2026-05-01T12:00:00Z")

func TestRenewMethod(t *testing.T) {
	w := newWorld(t)
	w.run(t, []decisionCase{
		{name: "drifted: a plain drain when the pods fit elsewhere", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", drifted), w.node("b", "m6g.xlarge", busy)), pods(w.pod("p", "a", "1"))
			},
			want: "drift a (1 pods, 0 new)"},
		{name: "expired: replacements when the pods fit nowhere else", pool: expiring, budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge")), pods(w.pod("p", "a", "3"))
			},
			want: "expired a (1 pods, 1 new)"},
		{name: "drifted and expired is drift; the budget goes in node order", pool: expiring, budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", drifted), w.node("b", "m6g.xlarge")), nil
			},
			want: "drift a (0 pods, 0 new)", kept: []string{"b: older than the pool's expireAfter (30m0s), but pool general's disruption budget is used up"}},
		{name: "the second node does not count on the first's room", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", drifted), w.node("b", "m6g.xlarge", drifted)), pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1"))
			},
			want: "drift a (1 pods, 0 new); drift b (1 pods, 1 new)"},
		{name: "a rebalance recommendation with Replace renews within the budget", budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", rebalanceRecommended), w.node("b", "m6g.xlarge", rebalanceRecommended), w.node("c", "m6g.xlarge", busy)),
					pods(w.pod("p", "a", "1"))
			},
			want: "rebalance a (1 pods, 0 new)", kept: []string{"b: EC2 recommends rebalancing its spot instance, but pool general's disruption budget is used up"}},
		{name: "a new image behind the pool's alias is drift", budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", imageReleased), w.node("b", "m6g.xlarge", imageReleased), w.node("c", "m6g.xlarge", busy)),
					pods(w.pod("p", "a", "1"))
			},
			want: "drift a (1 pods, 0 new)", kept: []string{"b: pool general's image (al2023) now resolves to ami-next, not the image it launched with, but pool general's disruption budget is used up"}},
		{name: "young nodes of the same settings stay", pool: expiring, budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", createdAgo(29*time.Minute))), pods(w.pod("p", "a", "1"))
			}},
	}, w.only(renewMethod{}))
}
