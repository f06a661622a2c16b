package consolidation

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A node is awaited while a pod its claim was launched for is still pending, for as long as a
// scale-up lasts; a claim without a node yet, or whose pods all went elsewhere, marks none.
func TestAwaitedNodes(t *testing.T) {
	claim := func(name, node string, pods ...string) *v1alpha1.Claim {
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.ClaimStatus{NodeName: node}}
		for _, p := range pods {
			cl.Spec.Pods = append(cl.Spec.Pods, v1alpha1.PodRef{Namespace: "ns", Name: p, UID: p})
		}
		return cl
	}
	now := time.Now()
	pending := func(names ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, n := range names {
			out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID(n),
				CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}})
		}
		return out
	}
	old := pending("web-1")
	old[0].CreationTimestamp = metav1.NewTime(now.Add(-recentPending - time.Second))
	claims := []*v1alpha1.Claim{claim("a", "node-a", "web-1", "web-2"), claim("b", "node-b", "web-3"), claim("c", "", "web-4")}
	for _, tt := range []struct {
		name    string
		pending []*corev1.Pod
		want    []string
	}{
		{"nothing pending", nil, nil},
		{"one of a's pods pending", pending("web-2"), []string{"node-a"}},
		{"pods of a and b pending", pending("web-1", "web-3"), []string{"node-a", "node-b"}},
		{"a pod of a claim without a node", pending("web-4"), nil},
		{"a pod no claim was launched for", pending("other"), nil},
		{"a pod pending longer than a scale-up lasts", old, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for n := range awaitedNodes(claims, tt.pending, now) {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("awaited nodes %v, want %v", got, tt.want)
			}
		})
	}
}

// A node whose claim is gone while its Node waits for Tailor's finalizer still leaves its pool:
// with a budget of one, no other node of the pool may start to go until it is gone. A node of
// the pool that nobody is deleting, one held only by someone else's finalizer, or one of no pool
// of Tailor's, leaves the budget as it is.
func TestBudgetCountsNodesLeavingAfterTheirClaim(t *testing.T) {
	now := time.Now()
	node := func(name, claim string, mark func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{v1alpha1.LabelClaim: claim, v1alpha1.LabelPool: "default"}}}
		if mark != nil {
			mark(n)
		}
		return n
	}
	deleting := func(n *corev1.Node) {
		n.DeletionTimestamp = &metav1.Time{Time: now}
		n.Finalizers = []string{v1alpha1.FinalizerTermination}
	}
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintDisrupting, Value: methodEmpty, Effect: corev1.TaintEffectNoSchedule}}
	}
	unlabelled := func(n *corev1.Node) { deleting(n); delete(n.Labels, v1alpha1.LabelClaim) }
	othersFinalizer := func(n *corev1.Node) { deleting(n); n.Finalizers = []string{"example.com/keep"} }
	registered := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec:   v1alpha1.ClaimSpec{Pool: "default"},
		Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, NodeName: "node-a"}}
	for _, tt := range []struct {
		name  string
		other *corev1.Node
		want  int
	}{
		{"no other node", nil, 1},
		{"a node deleted after its claim", node("node-b", "b", deleting), 0},
		{"a marked node whose claim is gone, never deleted", node("node-b", "b", tainted), 1},
		{"a deleted node held by another's finalizer", node("node-b", "b", othersFinalizer), 1},
		{"a node of the pool without a claim, not leaving", node("node-b", "b", nil), 1},
		{"a deleted node that is not Tailor's", node("node-b", "b", unlabelled), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{Args: &config.TailorArgs{Pools: []config.Pool{{Name: "default",
				Disruption: config.Disruption{Budgets: []config.Budget{{Nodes: "1"}}}}}},
				started: now, activity: map[string]time.Time{}, decided: map[string]time.Time{}}
			nodes := []*corev1.Node{node("node-a", "a", nil)}
			if tt.other != nil {
				nodes = append(nodes, tt.other)
			}
			s := &snapshot{now: now, budget: map[string]int{}}
			c.ownedNodes(s, nodes, []*v1alpha1.Claim{registered}, nil)
			if got := s.budget["default"]; got != tt.want {
				t.Errorf("budget left %d, want %d", got, tt.want)
			}
			if len(s.owned) != 1 || s.owned[0].node.Name != "node-a" {
				t.Errorf("owned nodes %d, want node-a alone", len(s.owned))
			}
		})
	}
}
