package consolidation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestEmptyMethod(t *testing.T) {
	w := newWorld(t)
	w.run(t, []decisionCase{
		{name: "every empty node the budget allows, in order", budget: 2,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge"), w.node("c", "m6g.xlarge")), nil
			},
			want: "empty a (0 pods, 0 new); empty b (0 pods, 0 new)", kept: []string{"c: pool general's disruption budget is used up"}},
		{name: "DaemonSet, mirror and finished pods stay with the node", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				done := w.pod("done", "a", "1")
				done.Status.Phase = corev1.PodSucceeded
				mirror := w.pod("static", "a", "1", ownedBy("Node"))
				mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
				return nodes(w.node("a", "m6g.xlarge")), pods(w.pod("ds", "a", "1", ownedBy("DaemonSet")), done, mirror)
			},
			want: "empty a (0 pods, 0 new)"},
		{name: "a pod to evict, a recent arrival or a drift is another method's", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge", busy), w.node("c", "m6g.xlarge", drifted)), pods(w.pod("p", "a", "1"))
			}},
		{name: "no budget", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) { return nodes(w.node("a", "m6g.xlarge")), nil },
			kept:  []string{"a: budget is used up"}},
	}, w.only(emptyMethod{}))
}
