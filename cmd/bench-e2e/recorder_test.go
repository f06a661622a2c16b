package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	claimsfake "github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
)

// TestDisruptionsCountByPhase: an eviction or drain counts toward the scale-up until every pod
// was first done, toward consolidation after it until the burst settled, and not at all after.
func TestDisruptionsCountByPhase(t *testing.T) {
	r := newRecorder(fake.NewClientset(), claimsfake.NewSimpleClientset(), "burst")
	evict := func(uid string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		r.podAdded(p)
		gone := p.DeepCopy()
		gone.DeletionTimestamp = &metav1.Time{}
		r.podUpdated(p, gone)
	}
	drain := func(node, reason string) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
		n.Spec.Taints = []corev1.Taint{{Key: v1alpha1.TaintDisrupting, Value: reason, Effect: corev1.TaintEffectNoSchedule}}
		r.nodeSeen(n)
		r.nodeSeen(n) // seen again: still one drain
	}
	evict("a")
	drain("n1", "empty")
	r.markScaledUp()
	evict("b")
	evict("c")
	drain("n2", "delete")
	drain("n1", "delete") // the same node: counted when first seen
	r.freeze()
	evict("d")
	drain("n3", "merge")

	var rep report
	r.timings(&rep, r.created["a"], r.created["a"])
	if rep.Evictions != 1 || rep.Drains != 1 || rep.DrainReasons["empty"] != 1 {
		t.Errorf("during the scale-up: %d evictions, %d drains %v; want 1, 1 {empty: 1}", rep.Evictions, rep.Drains, rep.DrainReasons)
	}
	after := rep.AfterScaleUp
	if after.Evictions != 2 || after.Drains != 1 || after.DrainReasons["delete"] != 1 {
		t.Errorf("after the scale-up: %+v; want 2 evictions, 1 drain {delete: 1}", after)
	}
}
