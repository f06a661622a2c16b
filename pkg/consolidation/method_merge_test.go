package consolidation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMergeMethod(t *testing.T) {
	w := newWorld(t)
	three := func(w *world) ([]*ownedNode, []*corev1.Pod) {
		return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge"), w.node("c", "m6g.xlarge")),
			pods(w.pod("p1", "a", "2500m"), w.pod("p2", "b", "2500m"), w.pod("p3", "c", "2500m"))
	}
	w.run(t, []decisionCase{
		{name: "the largest set that pays", budget: 5, build: three, want: "merge a+b+c (3 pods, 1 new)"},
		{name: "halved past two when the budget cannot take three", budget: 2, build: three},
		{name: "the most expensive nodes first", budget: 2,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge"), w.node("c", "m6g.2xlarge"), w.node("d", "m6g.xlarge"), w.node("e", "m6g.xlarge")),
					pods(w.pod("p1", "a", "3"), w.pod("p2", "b", "1"), w.pod("p3", "c", "1"), w.pod("p4", "d", "3"), w.pod("p5", "e", "3"))
			},
			want: "merge b+c (2 pods, 1 new)"},
		{name: "the cheapest nodes for their pods: no saving, no merge", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "c6g.xlarge"), w.node("b", "c6g.xlarge")), pods(w.pod("p1", "a", "3"), w.pod("p2", "b", "3"))
			}},
	}, w.only(mergeMethod{}))
}
