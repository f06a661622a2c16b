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
