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

// A question's copy of a pod moves it to another node (or none) and leaves the informer's
// object as it was.
func TestBoundToLeavesThePodAlone(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: "a"}}
	for _, node := range []string{"", "b"} {
		c := boundTo(p, node)
		if c.Spec.NodeName != node || c.Name != "web" || c.Labels["app"] != "web" {
			t.Errorf("boundTo(%q): node %q, name %q, labels %v", node, c.Spec.NodeName, c.Name, c.Labels)
		}
		if p.Spec.NodeName != "a" {
			t.Fatalf("boundTo(%q) moved the original to %q", node, p.Spec.NodeName)
		}
	}
}
