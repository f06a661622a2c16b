package consolidation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

func TestInterruptionMethod(t *testing.T) {
	w := newWorld(t)
	spot := annotated(v1alpha1.AnnotationInterrupted, InterruptionSpot)
	w.run(t, []decisionCase{
		{name: "no budget, annotation or bare pod holds it", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", spot, busy, annotated(v1alpha1.AnnotationDoNotDisrupt, "true"))),
					pods(w.pod("bare", "a", "1", ownedBy("")), w.pod("ds", "a", "100m", ownedBy("DaemonSet")))
			},
			want: "interruption a (1 pods, 1 new)"},
		{name: "pods with room elsewhere need no replacement", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", spot), w.node("b", "m6g.xlarge", busy)), pods(w.pod("p", "a", "1"))
			},
			want: "interruption a (1 pods, 0 new)"},
		{name: "two interrupted nodes never count on each other", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge", spot), w.node("b", "m6g.xlarge", spot)), pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1"))
			},
			want: "interruption a (1 pods, 0 new); interruption b (1 pods, 1 new)"},
	}, w.only(interruptionMethod{}))
}
