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

func TestInstanceGone(t *testing.T) {
	deleting := nodeFor("n", "i-1", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	deleting.Finalizers = []string{v1alpha1.FinalizerTermination}
	tests := []struct {
		name    string
		node    *corev1.Node
		removed bool
	}{
		{name: "node still there: the node lifecycle deals with it first", node: nodeFor("n", "i-1", true)},
		{name: "node gone", removed: true},
		{name: "node being deleted: its finalizer comes off, nothing left to drain", node: deleting, removed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := claimIn("a", v1alpha1.ClaimRegistered, "i-1", testNow.Add(-time.Hour), testNow.Add(-time.Hour))
			cl.Status.NodeName = "n"
			var nodes []*corev1.Node
			if tc.node != nil {
				nodes = append(nodes, tc.node)
			}
			h := newHarness(t, []*v1alpha1.Claim{cl}, nodes, nil) // the instance is gone
			h.c.sweep(context.Background())
			if got := h.claimGone(t, "a"); got != tc.removed {
				t.Errorf("claim removed: %v, want %v", got, tc.removed)
			}
			if tc.node == deleting {
				n, err := h.kube.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) {
					t.Error("the deleting node of a vanished instance keeps Tailor's finalizer")
				}
			}
		})
	}
}

func TestCollectOrphans(t *testing.T) {
	old, young := testNow.Add(-time.Hour), testNow.Add(-time.Minute)
	tests := []struct {
		name       string
		instance   cloud.Instance
		claim      *v1alpha1.Claim
		node       *corev1.Node
		terminated bool
	}{
		{name: "tagged, no claim, never joined", instance: instanceOf("i-1", "gone", old), terminated: true},
		{name: "younger than the grace", instance: instanceOf("i-1", "gone", young)},
		{name: "not launched by Tailor (no claim tag)", instance: instanceOf("i-1", "", old)},
		{name: "its claim recorded it", instance: instanceOf("i-1", "a", old), claim: claimIn("a", v1alpha1.ClaimLaunched, "i-1", old, old)},
		{name: "its claim has not recorded an instance yet", instance: instanceOf("i-1", "a", old), claim: claimIn("a", v1alpha1.ClaimPending, "", old, time.Time{})},
		{name: "its claim recorded another instance", instance: instanceOf("i-1", "a", old), claim: claimIn("a", v1alpha1.ClaimLaunched, "i-2", old, old),
			terminated: true},
		{name: "no claim, but its node registered: pods may run there", instance: instanceOf("i-1", "gone", old), node: nodeFor("n", "i-1", true)},
		{name: "no claim, its node never registered", instance: instanceOf("i-1", "gone", old), node: nodeFor("n", "i-1", true, unregistered), terminated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cls []*v1alpha1.Claim
			if tc.claim != nil {
				cls = append(cls, tc.claim)
			}
			var nodes []*corev1.Node
			if tc.node != nil {
				nodes = append(nodes, tc.node)
			}
			h := newHarness(t, cls, nodes, []cloud.Instance{tc.instance})
			nodeOf := map[string]*corev1.Node{}
			for _, n := range nodes {
				nodeOf[InstanceID(n.Spec.ProviderID)] = n
			}
			h.c.collectOrphans(context.Background(), []cloud.Instance{tc.instance}, nodeOf, testNow)
			if got := !h.running(t, "i-1"); got != tc.terminated {
				t.Errorf("terminated: %v, want %v", got, tc.terminated)
			}
		})
	}
}
