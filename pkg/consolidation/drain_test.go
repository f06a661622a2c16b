package consolidation

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// An update answered with no error and no node (seen as the leader lost its lease mid-call) is
// an error: the drain must not go on with a node nobody named, nor panic on it.
func TestUpdateNodeWithoutNodeInAnswer(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	client.PrependReactor("update", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	c := &Controller{Client: client}
	if n, err := c.updateNode(context.Background(), "n", func(*corev1.Node) {}); err == nil {
		t.Fatalf("updateNode gave node %q and no error", n.Name)
	}
}

// A pod bound to a node between its decision and its cordon is evicted only if the decision
// moved pods: an empty node's drain keeps the pod and the node (the scheduler had the pod on its
// way there), a delete's carries on.
func TestDrainOfNodeThatGainedAPod(t *testing.T) {
	for _, tt := range []struct {
		method    string
		wantTaint bool
		wantEvict bool
	}{
		{methodEmpty, false, false},
		{methodDelete, true, true},
	} {
		t.Run(tt.method, func(t *testing.T) {
			now := time.Now()
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{v1alpha1.AnnotationDisruptingSince: now.UTC().Format(time.RFC3339)}},
				Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: v1alpha1.TaintDisrupting, Value: tt.method, Effect: corev1.TaintEffectNoSchedule}}}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1",
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: ptrTrue()}}},
				Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			client := fake.NewClientset(node, pod)
			c := &Controller{Client: client, Recorder: events.NewFakeRecorder(10), Clock: testingclock.NewFakePassiveClock(now), DrainTimeout: time.Minute}
			o := &ownedNode{node: node, claim: &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}

			c.drainStep(context.Background(), o, []*corev1.Pod{pod})

			got, err := client.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tainted := disruptedBy(got) != ""; tainted != tt.wantTaint || got.Spec.Unschedulable != tt.wantTaint {
				t.Errorf("after the drain step: tainted %v, cordoned %v; want both %v", tainted, got.Spec.Unschedulable, tt.wantTaint)
			}
			evicted := false
			for _, a := range client.Actions() {
				evicted = evicted || a.GetSubresource() == "eviction"
			}
			if evicted != tt.wantEvict {
				t.Errorf("eviction asked: %v, want %v", evicted, tt.wantEvict)
			}
		})
	}
}

// A drained node is handed over, not terminated here: its claim is deleted with its termination
// finalizer on (the lifecycle's termination stage terminates the instance and lets the claim go)
// and the node is marked drained; the loop calls no cloud API for it.
func TestFinishHandsTheNodeOver(t *testing.T) {
	now := time.Now()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{v1alpha1.AnnotationDisruptingSince: now.UTC().Format(time.RFC3339)}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: v1alpha1.TaintDisrupting, Value: methodDelete, Effect: corev1.TaintEffectNoSchedule}}}}
	claim := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: []string{v1alpha1.FinalizerTermination}},
		Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, InstanceID: "i-1", NodeName: "n"}}
	client := fake.NewClientset(node)
	claimsClient := claimstest.NewClientset(claim)
	c := &Controller{Client: client, Claims: claims.NewStoreForClient(claimsClient), Recorder: events.NewFakeRecorder(10),
		Clock: testingclock.NewFakePassiveClock(now), DrainTimeout: time.Minute}

	c.finish(context.Background(), &ownedNode{node: node, claim: claim}, true)

	got, err := claimsClient.TailorV1alpha1().Claims().Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claim is gone (%v): its finalizer is the termination stage's to take off", err)
	}
	if got.DeletionTimestamp == nil {
		t.Error("the drained node's claim is not being deleted")
	}
	n, err := client.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !lifecycle.Drained(n) {
		t.Errorf("the node is not marked drained: annotations %v", n.Annotations)
	}
}
