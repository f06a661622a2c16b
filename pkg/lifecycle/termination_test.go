package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestInstanceOf(t *testing.T) {
	tests := []struct {
		name     string
		recorded string
		instance cloud.Instance
		want     bool
	}{
		{name: "the instance the claim recorded, tagged with it", recorded: "i-1", instance: instanceOf("i-1", "a", testNow), want: true},
		{name: "tagged with the claim, the claim recorded none yet", instance: instanceOf("i-1", "a", testNow), want: true},
		{name: "tagged with the claim, the claim recorded another", recorded: "i-2", instance: instanceOf("i-1", "a", testNow)},
		{name: "the recorded ID, tagged with another claim", recorded: "i-1", instance: instanceOf("i-1", "b", testNow)},
		{name: "the recorded ID, no claim tag", recorded: "i-1", instance: instanceOf("i-1", "", testNow)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := claimIn("a", v1alpha1.ClaimLaunched, tc.recorded, testNow, testNow)
			if got := InstanceOf(cl, tc.instance); got != tc.want {
				t.Errorf("InstanceOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRemoveDeletedClaim(t *testing.T) {
	tests := []struct {
		name      string
		instances []cloud.Instance
		node      *corev1.Node
		inFlight  bool
		// removed: the claim is gone; terminated are the instances ended.
		removed    bool
		terminated []string
	}{
		{name: "launched, never registered: its instance goes, then the claim", instances: []cloud.Instance{instanceOf("i-1", "a", testNow)},
			removed: true, terminated: []string{"i-1"}},
		{name: "never launched", removed: true},
		{name: "its launch still running here: it answers first", instances: []cloud.Instance{instanceOf("i-1", "a", testNow)}, inFlight: true},
		{name: "its node registered meanwhile: the drain takes it", instances: []cloud.Instance{instanceOf("i-1", "a", testNow)},
			node: nodeFor("n", "i-1", true)},
		{name: "another instance tagged with its name is not its own: the orphan collector judges it",
			instances: []cloud.Instance{instanceOf("i-1", "a", testNow), instanceOf("i-2", "a", testNow)}, removed: true, terminated: []string{"i-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := claimIn("a", v1alpha1.ClaimPending, "", testNow, time.Time{})
			if len(tc.instances) > 0 {
				cl = claimIn("a", v1alpha1.ClaimLaunched, "i-1", testNow, testNow)
			}
			cl.DeletionTimestamp = &metav1.Time{Time: testNow}
			var nodes []*corev1.Node
			if tc.node != nil {
				nodes = append(nodes, tc.node)
			}
			h := newHarness(t, []*v1alpha1.Claim{cl}, nodes, tc.instances)
			if tc.inFlight {
				h.markInFlight("a")
			}
			nodeOf := map[string]*corev1.Node{}
			for _, n := range nodes {
				nodeOf[InstanceID(n.Spec.ProviderID)] = n
			}
			h.c.removeDeletedClaim(context.Background(), cl, h.live(t), nodeOf)
			if got := h.claimGone(t, "a"); got != tc.removed {
				t.Errorf("claim removed: %v, want %v", got, tc.removed)
			}
			for _, in := range tc.instances {
				if got, want := !h.running(t, in.ID), slices.Contains(tc.terminated, in.ID); got != want {
					t.Errorf("%s terminated: %v, want %v", in.ID, got, want)
				}
			}
		})
	}
}

// A Registered claim being deleted is terminated once its drain is over (its node marked
// drained) or its node is gone: its own instance ends, its Node goes, then the claim. Until then
// the node is the drain's, and an instance the claim does not own is never terminated.
func TestTerminateDrained(t *testing.T) {
	drainedNode := func() *corev1.Node {
		n := nodeFor("n", "i-1", true, corev1.Taint{Key: v1alpha1.TaintDisrupting, Value: "delete", Effect: corev1.TaintEffectNoSchedule})
		n.Labels = map[string]string{v1alpha1.LabelClaim: "a"}
		n.Annotations = map[string]string{v1alpha1.AnnotationDrained: testNow.Format(time.RFC3339)}
		n.Finalizers = []string{v1alpha1.FinalizerTermination}
		return n
	}
	tests := []struct {
		name      string
		node      *corev1.Node
		instances []cloud.Instance
		// done: the claim and its node are gone; terminated: the instances ended.
		done       bool
		terminated []string
	}{
		{name: "drained: instance, node and claim go", node: drainedNode(), instances: []cloud.Instance{instanceOf("i-1", "a", testNow)},
			done: true, terminated: []string{"i-1"}},
		{name: "still draining: the drain's", node: nodeFor("n", "i-1", true), instances: []cloud.Instance{instanceOf("i-1", "a", testNow)}},
		{name: "annotated drained by hand, never drained: the drain's", instances: []cloud.Instance{instanceOf("i-1", "a", testNow)},
			node: func() *corev1.Node {
				n := drainedNode()
				n.Spec.Taints = nil
				return n
			}()},
		{name: "annotated drained, untainted, its instance stopping as EC2 said: nothing left to drain", done: true,
			instances: []cloud.Instance{instanceOf("i-1", "a", testNow)}, terminated: []string{"i-1"},
			node: func() *corev1.Node {
				n := drainedNode()
				n.Spec.Taints = nil
				n.Annotations[v1alpha1.AnnotationInterrupted] = v1alpha1.InterruptedInstanceGoing + "stopping"
				return n
			}()},
		{name: "annotated drained, untainted, its instance gone: nothing left to drain", done: true,
			node: func() *corev1.Node {
				n := drainedNode()
				n.Spec.Taints = nil
				return n
			}()},
		{name: "its node gone: the instance and the claim go", instances: []cloud.Instance{instanceOf("i-1", "a", testNow)},
			done: true, terminated: []string{"i-1"}},
		{name: "drained, its instance gone already", node: drainedNode(), done: true},
		{name: "drained, the recorded instance tagged with another claim: not terminated", node: drainedNode(),
			instances: []cloud.Instance{instanceOf("i-1", "b", testNow)}, done: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := claimIn("a", v1alpha1.ClaimRegistered, "i-1", testNow, testNow)
			cl.Status.NodeName = "n"
			cl.DeletionTimestamp = &metav1.Time{Time: testNow}
			var nodes []*corev1.Node
			if tc.node != nil {
				nodes = append(nodes, tc.node)
			}
			h := newHarness(t, []*v1alpha1.Claim{cl}, nodes, tc.instances)
			h.c.terminateDrained(context.Background(), cl, h.live(t))
			if got := h.claimGone(t, "a"); got != tc.done {
				t.Errorf("claim gone: %v, want %v", got, tc.done)
			}
			if tc.node != nil {
				_, err := h.kube.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
				if gone := apierrors.IsNotFound(err); gone != tc.done {
					t.Errorf("node gone: %v (%v), want %v", gone, err, tc.done)
				}
			}
			for _, in := range tc.instances {
				if got, want := !h.running(t, in.ID), slices.Contains(tc.terminated, in.ID); got != want {
					t.Errorf("%s terminated: %v, want %v", in.ID, got, want)
				}
			}
		})
	}
}

// The termination queue's path finishes a deleted claim as the sweep would, at once, and only
// with this cluster's instances: another cluster's instance tagged with a claim of the same name
// is not terminated.
func TestTerminateQueued(t *testing.T) {
	cl := claimIn("a", v1alpha1.ClaimPending, "", testNow, time.Time{})
	cl.DeletionTimestamp = &metav1.Time{Time: testNow}
	other := cloud.Instance{ID: "i-other", Type: "m5.large", Zone: "us-east-1a", LaunchTime: testNow,
		Tags: map[string]string{v1alpha1.TagClusterPrefix + "another": v1alpha1.TagOwnedValue, v1alpha1.TagClaim: "a"}}
	h := newHarness(t, []*v1alpha1.Claim{cl}, nil, []cloud.Instance{instanceOf("i-1", "a", testNow), other})
	waitUntil(t, "the claim in the cache", func() bool { _, ok := h.c.Claims.Get("a"); return ok })
	if err := h.c.terminate(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if !h.claimGone(t, "a") {
		t.Error("the deleted claim is still there")
	}
	if h.running(t, "i-1") {
		t.Error("the claim's instance still runs")
	}
	if !h.running(t, "i-other") {
		t.Error("another cluster's instance tagged with a claim of the same name was terminated")
	}
}

// Only Tailor's finalizer comes off; anyone else's stays.
func TestRemoveNodeFinalizer(t *testing.T) {
	ctx := context.Background()
	client := kubefake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Finalizers: []string{"example.com/keep", v1alpha1.FinalizerTermination}}})
	for range 2 { // the second time there is nothing to remove
		if err := RemoveNodeFinalizer(ctx, client, "n"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("finalizers %v, want only example.com/keep", got.Finalizers)
	}
	if err := RemoveNodeFinalizer(ctx, client, "gone"); err != nil {
		t.Errorf("a node already gone: %v", err)
	}
}
