package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A claim takes pods that arrive while its node is not up: launched, or registered but not yet
// initialized (the scheduler cannot place a pod there before). Once up, or going, it takes none.
func TestInFlight(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name        string
		phase       v1alpha1.ClaimPhase
		initialized bool
		deleting    bool
		want        bool
	}{
		{name: "launching", phase: v1alpha1.ClaimPending},
		{name: "launched", phase: v1alpha1.ClaimLaunched, want: true},
		{name: "registered, starting", phase: v1alpha1.ClaimRegistered, want: true},
		{name: "registered, up", phase: v1alpha1.ClaimRegistered, initialized: true},
		{name: "launched, deleted", phase: v1alpha1.ClaimLaunched, deleting: true},
		{name: "failed", phase: v1alpha1.ClaimFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.Claim{Status: v1alpha1.ClaimStatus{Phase: tc.phase}}
			if tc.initialized {
				c.Status.InitializedAt = &now
			}
			if tc.deleting {
				c.DeletionTimestamp = &now
			}
			if got := inFlight(c); got != tc.want {
				t.Errorf("inFlight = %v, want %v", got, tc.want)
			}
		})
	}
}

// A claim whose node is deleted or drained takes no more pods, up or not.
func TestNodeGoing(t *testing.T) {
	now := metav1.Now()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "starting"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleted", DeletionTimestamp: &now, Finalizers: []string{v1alpha1.FinalizerTermination}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "drained"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1alpha1.TaintDisrupting, Effect: corev1.TaintEffectNoSchedule}}}},
	} {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	p := &Provisioner{Options: Options{Nodes: corelisters.NewNodeLister(indexer)}}
	for node, want := range map[string]bool{"starting": false, "deleted": true, "drained": true, "not-yet-registered": false, "": false} {
		c := &v1alpha1.Claim{Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, NodeName: node}}
		if got := p.nodeGoing(c); got != want {
			t.Errorf("node %q: nodeGoing = %v, want %v", node, got, want)
		}
	}
}
