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

// TestStateCountsAJobPodDoneAfterPodGCDeletesIt: a Job's pod that succeeded stays done when
// PodGC deletes it with a node consolidation removed, so the burst still reads settled; a
// Deployment's pod that goes is no longer done.
func TestStateCountsAJobPodDoneAfterPodGCDeletesIt(t *testing.T) {
	r := newRecorder(fake.NewClientset(), claimsfake.NewSimpleClientset(), "burst")
	pods := r.pods.Core().V1().Pods().Informer().GetIndexer()
	owned := func(name, kind string, phase corev1.PodPhase) *corev1.Pod {
		yes := true
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(name), Name: name, Namespace: "burst",
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: kind, Controller: &yes}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	job, web := owned("job-1", "Job", corev1.PodRunning), owned("web-1", "ReplicaSet", corev1.PodRunning)
	for _, p := range []*corev1.Pod{job, web} {
		r.podAdded(p)
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if s := r.state(); s.done != 2 || !s.settled(2) {
		t.Fatalf("both Running: done %d, settled %v; want 2, true", s.done, s.settled(2))
	}
	succeeded := owned("job-1", "Job", corev1.PodSucceeded)
	r.podUpdated(job, succeeded)
	if err := pods.Update(succeeded); err != nil {
		t.Fatal(err)
	}
	if s := r.state(); s.done != 2 {
		t.Errorf("the Job's pod Succeeded: done %d, want 2 (counted once)", s.done)
	}
	// As client-go does it: the cache first, the handler after. Between the two, the list
	// shows a success the recorder has not seen.
	other := owned("job-2", "Job", corev1.PodRunning)
	r.podAdded(other)
	if err := pods.Add(other); err != nil {
		t.Fatal(err)
	}
	otherDone := owned("job-2", "Job", corev1.PodSucceeded)
	if err := pods.Update(otherDone); err != nil {
		t.Fatal(err)
	}
	if s := r.state(); s.done != 3 {
		t.Errorf("a success only the list shows yet: done %d, want 3", s.done)
	}
	r.podUpdated(other, otherDone)
	if s := r.state(); s.done != 3 {
		t.Errorf("the same success seen by the handler: done %d, want 3", s.done)
	}
	// A success seen first in the delete event.
	last := owned("job-3", "Job", corev1.PodRunning)
	r.podAdded(last)
	r.podDeleted(owned("job-3", "Job", corev1.PodSucceeded))
	if s := r.state(); s.done != 4 {
		t.Errorf("a success seen only when the pod was deleted: done %d, want 4", s.done)
	}
	for _, p := range []*corev1.Pod{succeeded, web} {
		r.podDeleted(p)
		if err := pods.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	if s := r.state(); s.done != 3 || s.settled(4) {
		t.Errorf("the first two deleted: done %d, settled %v; want 3 (the Jobs'), false", s.done, s.settled(4))
	}
}
