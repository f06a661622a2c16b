package consolidation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReplaceMethod(t *testing.T) {
	w := newWorld(t)
	w.run(t, []decisionCase{
		{name: "an oversized node by a cheaper one", budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.2xlarge")), pods(w.pod("p", "a", "1"))
			},
			want: "replace a (1 pods, 1 new)"},
		{name: "the most expensive node first", budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.4xlarge")), pods(w.pod("p1", "a", "3"), w.pod("p2", "b", "3"))
			},
			want: "replace b (1 pods, 1 new)"},
		{name: "a node already the cheapest for its pods stays", budget: 1,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "c6g.xlarge")), pods(w.pod("p", "a", "3"))
			}},
		{name: "no budget", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.2xlarge")), pods(w.pod("p", "a", "1"))
			}},
	}, w.only(replaceMethod{}))
}
