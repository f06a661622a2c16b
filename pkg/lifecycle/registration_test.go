package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestCheckRegistered(t *testing.T) {
	tests := []struct {
		name     string
		launched time.Time
		running  bool
		// removed: the claim is gone and its instance terminated.
		removed bool
	}{
		{name: "launched a moment ago, its instance not yet listed", launched: testNow.Add(-30 * time.Second)},
		{name: "its instance vanished before the node registered", launched: testNow.Add(-2 * time.Minute), removed: true},
		{name: "running, within the registration timeout", launched: testNow.Add(-10 * time.Minute), running: true},
		{name: "running, no node within the registration timeout", launched: testNow.Add(-16 * time.Minute), running: true, removed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ins []cloud.Instance
			if tc.running {
				ins = append(ins, instanceOf("i-1", "a", tc.launched))
			}
			h := newHarness(t, []*v1alpha1.Claim{claimIn("a", v1alpha1.ClaimLaunched, "i-1", tc.launched, tc.launched)}, nil, ins)
			h.c.sweep(context.Background())
			if got := h.claimGone(t, "a"); got != tc.removed {
				t.Errorf("claim removed: %v, want %v", got, tc.removed)
			}
			if tc.running && h.running(t, "i-1") == tc.removed {
				t.Errorf("instance running: %v, want %v", !tc.removed, !tc.removed)
			}
		})
	}
}

// TestRegister: a node whose instance is a Launched claim's gets the labels, taints and
// finalizer the claim promised, and the claim is Registered on it; a node no claim owns is never
// touched.
func TestRegister(t *testing.T) {
	ctx := context.Background()
	mine := nodeFor("mine", "i-1", true, unregistered)
	theirs := nodeFor("theirs", "i-9", true, unregistered)
	h := newHarness(t, []*v1alpha1.Claim{claimIn("a", v1alpha1.ClaimLaunched, "i-1", testNow, testNow)},
		[]*corev1.Node{mine, theirs}, []cloud.Instance{instanceOf("i-1", "a", testNow)})
	for _, name := range []string{"mine", "theirs"} {
		if err := h.c.register(ctx, name); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	n, err := h.kube.CoreV1().Nodes().Get(ctx, "mine", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[v1alpha1.LabelClaim] != "a" || !slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) || hasTaint(n, v1alpha1.TaintUnregistered) {
		t.Errorf("registered node: labels %v, finalizers %v, taints %v; want the claim label, the termination finalizer and no unregistered taint",
			n.Labels, n.Finalizers, n.Spec.Taints)
	}
	if cl := h.claim(t, "a"); cl.Status.Phase != v1alpha1.ClaimRegistered || cl.Status.NodeName != "mine" || cl.Status.RegisteredAt == nil {
		t.Errorf("claim status %+v, want Registered on node mine", cl.Status)
	}
	other, err := h.kube.CoreV1().Nodes().Get(ctx, "theirs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Labels) > 0 || len(other.Finalizers) > 0 || !hasTaint(other, v1alpha1.TaintUnregistered) {
		t.Errorf("a node no claim owns was changed: labels %v, finalizers %v, taints %v", other.Labels, other.Finalizers, other.Spec.Taints)
	}
}
