package consolidation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// zoneSpread gives the pod the label app=api and a hard zone spread over the pods that carry it.
func zoneSpread(p *corev1.Pod) {
	p.Labels = map[string]string{"app": "api"}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
}

// A pod bound to a node the pass's node list lacks (deleted meanwhile, or not yet in the cache)
// must not reach the plugins as a node without a Node: topology spread's PreFilter took the
// scheduler down on one. The pass answers its questions as if the pod were not there.
func TestQuestionsWithPodOnUnknownNode(t *testing.T) {
	w := newWorld(t)
	w.run(t, []decisionCase{
		{name: "spread pods, one bound to a deleted node", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge"), w.node("c", "m6g.xlarge")),
					pods(w.pod("p1", "a", "1", zoneSpread), w.pod("p2", "b", "1", zoneSpread), w.pod("p3", "c", "1", zoneSpread),
						w.pod("orphan", "deleted", "1", zoneSpread))
			},
			want: "delete b (1 pods, 0 new)"},
	}, w.decide)
}
